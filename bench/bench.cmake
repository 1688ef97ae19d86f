# Benchmark programs that need kiln's internal interfaces (the Python reference protocol is
# bench/reference_benchmark.py).
if(KILN_WITH_GPU)
add_executable(jit_bench ${CMAKE_CURRENT_LIST_DIR}/jit_bench.c)
target_include_directories(jit_bench PRIVATE ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/core ${PROJECT_SOURCE_DIR}/src/gpu)
target_compile_options(jit_bench PRIVATE ${KILN_WARNINGS})
target_link_libraries(jit_bench PRIVATE kiln_static)
set_target_properties(jit_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endif()

# Suite 8: the host cost of a call (public API, plus the context's memory helpers).
add_executable(host_bench ${CMAKE_CURRENT_LIST_DIR}/host_bench.c)
target_include_directories(host_bench PRIVATE ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/core)
target_compile_options(host_bench PRIVATE ${KILN_WARNINGS})
target_link_libraries(host_bench PRIVATE kiln_static)
set_target_properties(host_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
