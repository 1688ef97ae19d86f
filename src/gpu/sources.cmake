# The GPU layer: vendor-neutral code in src/gpu/, the CUDA and HIP drivers (loaded at run
# time, so nothing is linked), and the device code embedded from kernels/.
file(GLOB KILN_GPU_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/*.c
  ${CMAKE_CURRENT_LIST_DIR}/cuda/*.c
  ${CMAKE_CURRENT_LIST_DIR}/hip/*.c)
list(APPEND KILN_SOURCES ${KILN_GPU_SOURCES})
include(${CMAKE_CURRENT_LIST_DIR}/embed.cmake)
include(${PROJECT_SOURCE_DIR}/cmake/aot.cmake)
