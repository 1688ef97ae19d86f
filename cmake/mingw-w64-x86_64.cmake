# Cross-compiles kiln for 64-bit Windows with MinGW-w64 (Debian: gcc-mingw-w64-x86-64) and
# runs the test programs under Wine.
#
#   cmake --preset windows-mingw && cmake --build --preset windows-mingw
#   ctest --test-dir build-windows-mingw
#
# KILN_MINGW_PREFIX picks another triplet's tools; KILN_WINE names the emulator.

set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(KILN_MINGW_PREFIX "x86_64-w64-mingw32" CACHE STRING "MinGW-w64 tool prefix")

# The -win32 thread model needs no libwinpthread-1.dll at run time; the -posix one is the
# fallback (its winpthread is linked statically below).
find_program(CMAKE_C_COMPILER NAMES ${KILN_MINGW_PREFIX}-gcc-win32 ${KILN_MINGW_PREFIX}-gcc
             ${KILN_MINGW_PREFIX}-gcc-posix REQUIRED)
find_program(CMAKE_RC_COMPILER NAMES ${KILN_MINGW_PREFIX}-windres)
find_program(CMAKE_AR NAMES ${KILN_MINGW_PREFIX}-gcc-ar ${KILN_MINGW_PREFIX}-ar)
find_program(CMAKE_RANLIB NAMES ${KILN_MINGW_PREFIX}-gcc-ranlib ${KILN_MINGW_PREFIX}-ranlib)

set(CMAKE_FIND_ROOT_PATH /usr/${KILN_MINGW_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Every .exe and kiln.dll must run on a bare Windows (or Wine prefix) with only system DLLs:
# libgcc and, if the compiler pulls it in, winpthread are linked into the binary.
set(KILN_MINGW_STATIC "-static-libgcc -static")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${KILN_MINGW_STATIC}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${KILN_MINGW_STATIC}")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "${KILN_MINGW_STATIC}")

# Debian's /usr/bin/wine is a wrapper that complains about a missing 32-bit Wine on every
# start; the 64-bit loader runs these 64-bit programs directly.
find_program(KILN_WINE NAMES wine64 wine PATHS /usr/lib/wine /usr/lib64/wine NO_CMAKE_FIND_ROOT_PATH)
if(KILN_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${KILN_WINE}")
endif()
