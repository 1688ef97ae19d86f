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
    target_include_directories(kiln_python_abi_probe PRIVATE ${KILN_PUBLIC_INCLUDES})
    add_test(NAME python_binding
             COMMAND ${KILN_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/run.py)
    set(kiln_python_env "PYTHONPATH=${PROJECT_SOURCE_DIR}/python;KILN_LIBRARY=$<TARGET_FILE:kiln>;KILN_ABI_PROBE=$<TARGET_FILE:kiln_python_abi_probe>")
    # With the C fast path where it is built (the tests then check it is the one in use),
    # and again with the ctypes path alone, which must give the same results and errors.
    # Not built for want of Python's headers is a missing tool.
    if(TARGET kiln_python_ext)
      set(kiln_python_fast "KILN_EXPECT_FAST=1")
    elseif(KILN_BUILD_PYTHON_EXT)
      set(kiln_python_fast "KILN_EXPECT_FAST=missing")
    else()
      set(kiln_python_fast "KILN_EXPECT_FAST=0")
    endif()
    set_tests_properties(python_binding PROPERTIES
      SKIP_RETURN_CODE 77
      TIMEOUT 600
      ENVIRONMENT "${kiln_python_env};${kiln_python_fast}")
    add_test(NAME python_binding_ctypes
             COMMAND ${KILN_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/run.py)
    set_tests_properties(python_binding_ctypes PROPERTIES
      SKIP_RETURN_CODE 77
      TIMEOUT 600
      ENVIRONMENT "${kiln_python_env};KILN_PYTHON_FAST=0;KILN_EXPECT_FAST=0")
  endif()
endif()
