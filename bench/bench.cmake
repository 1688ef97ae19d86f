# Benchmark programs that need kiln's internal interfaces (the Python reference protocol is
# bench/reference_benchmark.py).
if(KILN_WITH_GPU)
add_executable(jit_bench ${CMAKE_CURRENT_LIST_DIR}/jit_bench.c)
target_include_directories(jit_bench PRIVATE ${KILN_PUBLIC_INCLUDES}
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/core ${PROJECT_SOURCE_DIR}/src/gpu)
target_compile_options(jit_bench PRIVATE ${KILN_WARNINGS})
target_link_libraries(jit_bench PRIVATE kiln_static)
set_target_properties(jit_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endif()

# Suite 8: the host cost of a call (public API, plus the context's memory helpers).
add_executable(host_bench ${CMAKE_CURRENT_LIST_DIR}/host_bench.c)
target_include_directories(host_bench PRIVATE ${KILN_PUBLIC_INCLUDES}
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/core)
target_compile_options(host_bench PRIVATE ${KILN_WARNINGS})
target_link_libraries(host_bench PRIVATE kiln_static)
set_target_properties(host_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)

# The stubbed library bench/binding_bench.py times the Python binding against.
add_library(kiln_stub SHARED ${CMAKE_CURRENT_LIST_DIR}/stub_library.c)
target_include_directories(kiln_stub PRIVATE ${KILN_PUBLIC_INCLUDES})
target_compile_options(kiln_stub PRIVATE ${KILN_WARNINGS})
target_compile_definitions(kiln_stub PRIVATE KILN_BUILDING_SHARED)
if(NOT MSVC)
  target_compile_options(kiln_stub PRIVATE -fvisibility=hidden)
endif()
# Beside libkiln and _ext, so the binding finds the fast path next to it too.
set_target_properties(kiln_stub PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
