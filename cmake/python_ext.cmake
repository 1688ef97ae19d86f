# The Python binding's optional fast path (python/kiln/_ext.c), built where Python's headers
# are found: <build>/_ext.abi3.so beside libkiln, where the package looks for it after its
# own folder (a wheel puts it there). Limited API 3.11, so one build serves later Pythons.
# Without it the ctypes path does every call, with the same results and errors.
option(KILN_BUILD_PYTHON_EXT "Build the Python binding's C fast path when Python's headers exist" ON)
if(KILN_BUILD_PYTHON_EXT AND NOT CMAKE_CROSSCOMPILING)
  find_package(Python3 3.11 COMPONENTS Interpreter Development.Module QUIET)
  if(Python3_Development.Module_FOUND)
    Python3_add_library(kiln_python_ext MODULE ${PROJECT_SOURCE_DIR}/python/kiln/_ext.c)
    target_include_directories(kiln_python_ext PRIVATE ${KILN_PUBLIC_INCLUDES})
    target_compile_options(kiln_python_ext PRIVATE ${KILN_WARNINGS})
    set_target_properties(kiln_python_ext PROPERTIES OUTPUT_NAME _ext PREFIX "" SUFFIX
      .abi3${CMAKE_SHARED_MODULE_SUFFIX} LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}
      C_VISIBILITY_PRESET hidden)
  else()
    message(STATUS "Python headers not found: the binding's fast path (_ext) is not built")
  endif()
endif()
