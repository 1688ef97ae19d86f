# The C test suite: every tests/test_*.c is one program and one ctest entry (its own
# process, its own timeout). Exit code 77 means skipped. Conformance and activation programs
# get a second entry that runs only the GPU backends, so a machine without a GPU lists
# them as skipped rather than hiding them.
#
# Under a cross build (MinGW) CMAKE_CROSSCOMPILING_EMULATOR (Wine) runs each program, which
# add_test(NAME ... COMMAND <target>) applies on its own.

set(KILN_TEST_TIMEOUT 300 CACHE STRING "Seconds each C test program may run")

file(GLOB KILN_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/test_*.c)
list(SORT KILN_TEST_SOURCES)
if(NOT KILN_WITH_GPU)
  # The kernel cache, the target table, the AMD kernels' host checks and the runtime
  # compiler's log check belong to the GPU layer.
  list(FILTER KILN_TEST_SOURCES EXCLUDE REGEX "/test_(cache|targets|amd_tensor|rtc_log)\\.c$")
endif()

foreach(src ${KILN_TEST_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE
    ${KILN_PUBLIC_INCLUDES} ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/core
    ${CMAKE_CURRENT_LIST_DIR})
  target_compile_options(${name} PRIVATE ${KILN_WARNINGS})
  if(MINGW)
    # C99 printf formats (%zu, %lld) rather than the old msvcrt ones.
    target_compile_definitions(${name} PRIVATE __USE_MINGW_ANSI_STDIO=1)
  endif()
  target_link_libraries(${name} PRIVATE kiln_testing kiln_static)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

  string(REGEX REPLACE "^test_" "" short ${name})
  if(name MATCHES "^test_(conformance|activation)")
    add_test(NAME ${short} COMMAND ${name} cpu)
    add_test(NAME ${short}_gpu COMMAND ${name} gpu)
    set_tests_properties(${short}_gpu PROPERTIES SKIP_RETURN_CODE 77
      TIMEOUT ${KILN_TEST_TIMEOUT} LABELS "conformance;gpu")
    set_tests_properties(${short} PROPERTIES LABELS "conformance")
  else()
    add_test(NAME ${short} COMMAND ${name})
    set_tests_properties(${short} PROPERTIES LABELS "unit")
  endif()
  set_tests_properties(${short} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${KILN_TEST_TIMEOUT})
endforeach()

# Fuzz targets run as plain programs: each replays its corpus folder when there is one
# (tests/fuzz/corpus/<name>/), else a fixed number of seeded random inputs. Built with
# -DKILN_FUZZ_LIBFUZZER and -fsanitize=fuzzer they are libFuzzer targets instead.
file(GLOB KILN_FUZZ_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_*.c)
foreach(src ${KILN_FUZZ_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE
    ${KILN_PUBLIC_INCLUDES} ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/core
    ${CMAKE_CURRENT_LIST_DIR})
  target_compile_options(${name} PRIVATE ${KILN_WARNINGS})
  if(MINGW)
    target_compile_definitions(${name} PRIVATE __USE_MINGW_ANSI_STDIO=1)
  endif()
  target_link_libraries(${name} PRIVATE kiln_testing kiln_static)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  set(corpus ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus/${name})
  if(IS_DIRECTORY ${corpus})
    add_test(NAME ${name} COMMAND ${name} ${corpus})
  else()
    add_test(NAME ${name} COMMAND ${name})
  endif()
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${KILN_TEST_TIMEOUT}
    LABELS "fuzz")
endforeach()

# A program built against kiln 0.1's structure layouts (kept in the test) running against
# today's library: the shared one, as such a program would, where the platform allows
# (Windows links the static library, which needs no DLL beside the test under Wine). It
# takes the assertion tally's source rather than the testing library, which would bring the
# static library in.
add_executable(test_abi_old_layout ${CMAKE_CURRENT_LIST_DIR}/abi/old_layout.c
  ${PROJECT_SOURCE_DIR}/src/testing/test_check.c)
target_include_directories(test_abi_old_layout PRIVATE ${KILN_PUBLIC_INCLUDES}
  ${PROJECT_SOURCE_DIR}/src/testing)
target_compile_options(test_abi_old_layout PRIVATE ${KILN_WARNINGS})
if(WIN32)
  target_compile_definitions(test_abi_old_layout PRIVATE __USE_MINGW_ANSI_STDIO=1)
  target_link_libraries(test_abi_old_layout PRIVATE kiln_static)
else()
  target_link_libraries(test_abi_old_layout PRIVATE kiln)
endif()
set_target_properties(test_abi_old_layout PROPERTIES RUNTIME_OUTPUT_DIRECTORY
  ${PROJECT_BINARY_DIR}/tests)
add_test(NAME abi_old_layout COMMAND test_abi_old_layout)
set_tests_properties(abi_old_layout PROPERTIES LABELS "unit" TIMEOUT ${KILN_TEST_TIMEOUT})

include(${CMAKE_CURRENT_LIST_DIR}/helpers/helpers.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/python/tests.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/packaging/tests.cmake OPTIONAL)
if(KILN_WITH_GPU)
  include(${CMAKE_CURRENT_LIST_DIR}/gpu/tests.cmake)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/cli/tests.cmake OPTIONAL)
