# Programs the tests start as child processes. Included by tests/tests.cmake after the test
# programs are defined, so it can wire each helper into the test that uses it.

add_executable(lock_holder ${CMAKE_CURRENT_LIST_DIR}/lock_holder.c)
target_include_directories(lock_holder PRIVATE ${KILN_PUBLIC_INCLUDES}
  ${PROJECT_SOURCE_DIR}/src)
target_compile_options(lock_holder PRIVATE ${KILN_WARNINGS})
target_link_libraries(lock_holder PRIVATE kiln_static)
set_target_properties(lock_holder PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

if(TARGET test_lock)
  add_dependencies(test_lock lock_holder)
  target_compile_definitions(test_lock PRIVATE KILN_LOCK_HOLDER="$<TARGET_FILE:lock_holder>")
endif()

# The kernel-cache tests race several of these processes on one cache entry.
add_executable(cache_worker ${CMAKE_CURRENT_LIST_DIR}/cache_worker.c)
target_include_directories(cache_worker PRIVATE ${KILN_PUBLIC_INCLUDES}
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/core)
target_compile_options(cache_worker PRIVATE ${KILN_WARNINGS})
target_link_libraries(cache_worker PRIVATE kiln_static)
set_target_properties(cache_worker PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

if(TARGET test_cache)
  add_dependencies(test_cache cache_worker)
  target_include_directories(test_cache PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_compile_definitions(test_cache PRIVATE KILN_CACHE_WORKER="$<TARGET_FILE:cache_worker>")
endif()
