# The GPU layer: vendor-neutral code in src/gpu/, the CUDA and HIP drivers (loaded at run
# time, so nothing is linked), and the device code embedded from kernels/.
file(GLOB KILN_GPU_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
if(KILN_WITH_CUDA)
  file(GLOB KILN_GPU_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cuda/*.c)
  list(APPEND KILN_GPU_SOURCES ${KILN_GPU_CUDA_SOURCES})
endif()
if(KILN_WITH_HIP)
  file(GLOB KILN_GPU_HIP_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/hip/*.c)
  list(APPEND KILN_GPU_SOURCES ${KILN_GPU_HIP_SOURCES})
endif()
list(APPEND KILN_SOURCES ${KILN_GPU_SOURCES})
include(${CMAKE_CURRENT_LIST_DIR}/embed.cmake)
include(${PROJECT_SOURCE_DIR}/cmake/aot.cmake)
