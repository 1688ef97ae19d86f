# Ahead-of-time code objects at build time: with GPU_ARCHS set (";" or "," separated), the
# build runs `kiln build --targets GPU_ARCHS --out <build>/aot` once the kiln command exists
# and again whenever a kernel changes. Every listed target is built and checked against its
# limits; an unknown name fails the build with the list of known targets. The objects are
# installed beside the library, which looks there when KILN_AOT_DIR is not set.

if(GPU_ARCHS)
  if(NOT KILN_BUILD_TOOLS)
    message(FATAL_ERROR "GPU_ARCHS=${GPU_ARCHS} needs KILN_BUILD_TOOLS=ON (the kiln command builds the code objects)")
  endif()
  # A CMake list would become separate arguments: hand the tool one comma-separated list.
  string(REPLACE ";" "," kiln_aot_targets "${GPU_ARCHS}")
  set(KILN_AOT_BUILD_DIR ${PROJECT_BINARY_DIR}/aot)
  set(kiln_aot_jobs "")
  if(DEFINED MAX_JOBS)
    set(kiln_aot_jobs --jobs ${MAX_JOBS})
  endif()
  file(GLOB_RECURSE kiln_aot_kernels CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/*)
  add_custom_command(
    OUTPUT ${KILN_AOT_BUILD_DIR}/manifest.json
    COMMAND kiln_tool build --targets "${kiln_aot_targets}" --out ${KILN_AOT_BUILD_DIR} ${kiln_aot_jobs}
    DEPENDS kiln_tool ${kiln_aot_kernels}
    COMMENT "Compiling GPU code objects for ${kiln_aot_targets}"
    VERBATIM USES_TERMINAL)
  add_custom_target(kiln_aot ALL DEPENDS ${KILN_AOT_BUILD_DIR}/manifest.json)

  set(KILN_AOT_INSTALL_SUBDIR ${CMAKE_INSTALL_LIBDIR}/kiln/aot)
  add_compile_definitions(KILN_AOT_INSTALL_DIR="${CMAKE_INSTALL_PREFIX}/${KILN_AOT_INSTALL_SUBDIR}")
  install(DIRECTORY ${KILN_AOT_BUILD_DIR}/ DESTINATION ${KILN_AOT_INSTALL_SUBDIR}
    PATTERN ".src" EXCLUDE PATTERN ".probe" EXCLUDE)
endif()
