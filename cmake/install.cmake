# Installs the header, both libraries, the kiln command, a CMake package (find_package(kiln)
# giving kiln::kiln and kiln::kiln_static) and a pkg-config file.
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_TARGETS kiln kiln_static)
install(TARGETS ${KILN_INSTALL_TARGETS} EXPORT kilnTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET kiln_tool)
  install(TARGETS kiln_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES include/kiln.h ${PROJECT_BINARY_DIR}/include/kiln_version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
file(WRITE ${PROJECT_BINARY_DIR}/kilnConfig.cmake.in [=[
@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
if(NOT WIN32)
  find_dependency(Threads)
endif()
include("${CMAKE_CURRENT_LIST_DIR}/kilnTargets.cmake")
check_required_components(kiln)
]=])
configure_package_config_file(${PROJECT_BINARY_DIR}/kilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kilnConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kilnConfig.cmake ${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

if(WIN32)
  set(KILN_PC_LIBS_PRIVATE "")
else()
  set(KILN_PC_LIBS_PRIVATE "-lpthread -ldl -lm")
endif()
# Relative to the .pc file, so `cmake --install --prefix DIR` gives a working file anywhere.
file(RELATIVE_PATH KILN_PC_UP /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" KILN_PC_UP "${KILN_PC_UP}")
file(WRITE ${PROJECT_BINARY_DIR}/kiln.pc
"prefix=\${pcfiledir}/${KILN_PC_UP}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}

Name: kiln
Description: ${PROJECT_DESCRIPTION}
Version: ${PROJECT_VERSION}
Libs: -L\${libdir} -lkiln
Libs.private: ${KILN_PC_LIBS_PRIVATE}
Cflags: -I\${includedir}
")
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
