# Programs the tests start as child processes. Included by tests/tests.cmake after the test
# programs are defined, so it can wire each helper into the test that uses it.

add_executable(lock_holder ${CMAKE_CURRENT_LIST_DIR}/lock_holder.c)
target_include_directories(lock_holder PRIVATE ${KILN_PUBLIC_INCLUDES}
  ${PROJECT_SOURCE_DIR}/src)
target_compile_options(lock_holder PRIVATE ${KILN_WARNINGS})
target_link_libraries(lock_holder PRIVATE kiln_testing kiln_static)
set_target_properties(lock_holder PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

if(TARGET test_lock)
  add_dependencies(test_lock lock_holder)
  target_compile_definitions(test_lock PRIVATE KILN_LOCK_HOLDER="$<TARGET_FILE:lock_holder>")
endif()

# The kernel-cache tests race several of these processes on one cache entry.
if(TARGET test_cache)
  add_executable(cache_worker ${CMAKE_CURRENT_LIST_DIR}/cache_worker.c)
  target_include_directories(cache_worker PRIVATE ${KILN_PUBLIC_INCLUDES}
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/core)
  target_compile_options(cache_worker PRIVATE ${KILN_WARNINGS})
  target_link_libraries(cache_worker PRIVATE kiln_testing kiln_static)
  set_target_properties(cache_worker PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

  add_dependencies(test_cache cache_worker)
  target_include_directories(test_cache PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_compile_definitions(test_cache PRIVATE KILN_CACHE_WORKER="$<TARGET_FILE:cache_worker>")
endif()

# A stand-in CUDA driver (no GPU needed) for the CUDA backend's host-path test and for
# bench/host_bench on machines without a GPU.
if(KILN_WITH_CUDA AND NOT WIN32 AND TARGET test_cuda_host)
  add_library(kiln_fake_cuda SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cuda.c)
  target_compile_options(kiln_fake_cuda PRIVATE ${KILN_WARNINGS} -fvisibility=hidden)
  set_target_properties(kiln_fake_cuda PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  add_dependencies(test_cuda_host kiln_fake_cuda)
  # The same stand-in with tensor maps (its auto tier the hopper tier), for the hopper
  # launch's map cache: a second entry of the same program, as a process loads one driver.
  add_library(kiln_fake_cuda_tmap SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cuda.c)
  target_compile_options(kiln_fake_cuda_tmap PRIVATE ${KILN_WARNINGS} -fvisibility=hidden)
  target_compile_definitions(kiln_fake_cuda_tmap PRIVATE FAKE_TENSOR_MAPS=1)
  set_target_properties(kiln_fake_cuda_tmap PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  add_dependencies(test_cuda_host kiln_fake_cuda_tmap)
  target_compile_definitions(test_cuda_host PRIVATE
    KILN_FAKE_CUDA="$<TARGET_FILE:kiln_fake_cuda>"
    KILN_FAKE_CUDA_TMAP="$<TARGET_FILE:kiln_fake_cuda_tmap>"
    KILN_TEST_CACHE_DIR="${PROJECT_BINARY_DIR}/tests/cuda_host_cache")
  add_test(NAME cuda_host_maps COMMAND test_cuda_host maps)
  set_tests_properties(cuda_host_maps PROPERTIES LABELS "unit" SKIP_RETURN_CODE 77
    TIMEOUT ${KILN_TEST_TIMEOUT})
endif()
