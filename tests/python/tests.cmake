# The Python binding's tests: unittest with numpy on the CPU backend (the GPU file skips itself
# where torch or a GPU is absent). Skipped (77) where numpy is missing; not run for a
# cross-compiled library, which this machine's Python cannot load.
if(NOT CMAKE_CROSSCOMPILING)
  if(EXISTS /usr/bin/python3)
    set(KILN_TEST_PYTHON /usr/bin/python3)
  else()
    find_program(KILN_TEST_PYTHON NAMES python3 python)
  endif()
  if(KILN_TEST_PYTHON)
    # Lets the tests compare the ctypes mirror of the structures with the compiler's layout.
    add_executable(kiln_python_abi_probe ${CMAKE_CURRENT_LIST_DIR}/abi_probe.c)
    target_include_directories(kiln_python_abi_probe PRIVATE ${PROJECT_SOURCE_DIR}/include)
    add_test(NAME python_binding
             COMMAND ${KILN_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/run.py)
    set_tests_properties(python_binding PROPERTIES
      SKIP_RETURN_CODE 77
      TIMEOUT 600
      ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/python;KILN_LIBRARY=$<TARGET_FILE:kiln>;KILN_ABI_PROBE=$<TARGET_FILE:kiln_python_abi_probe>")
  endif()
endif()
