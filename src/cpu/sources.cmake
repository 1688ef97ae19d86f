# CPU backend sources. Each SIMD level's kernels get that level's flags on their own file
# only; the rest of the library stays at the baseline ISA, and the level is chosen at run
# time (src/cpu/cpu.h).
set(KILN_CPU_DIR ${CMAKE_CURRENT_LIST_DIR})
list(APPEND KILN_SOURCES
  ${KILN_CPU_DIR}/act.c
  ${KILN_CPU_DIR}/attn.c
  ${KILN_CPU_DIR}/backend.c
  ${KILN_CPU_DIR}/cpuid.c
  ${KILN_CPU_DIR}/peak.c
  ${KILN_CPU_DIR}/pool.c
  ${KILN_CPU_DIR}/split.c
  ${KILN_CPU_DIR}/kern_scalar.c
  ${KILN_CPU_DIR}/kern_avx2.c
  ${KILN_CPU_DIR}/kern_avx512.c
  ${KILN_CPU_DIR}/kern_avx512bf16.c)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|x64|i.86)$")
  if(MSVC)
    # MSVC has no per-extension switches; a file whose level it cannot express compiles to
    # a stub (the kernels check the compiler's feature macros) and the level reads absent.
    set_source_files_properties(${KILN_CPU_DIR}/kern_avx2.c PROPERTIES COMPILE_OPTIONS "/arch:AVX2")
    set_source_files_properties(${KILN_CPU_DIR}/kern_avx512.c PROPERTIES COMPILE_OPTIONS "/arch:AVX512")
    set_source_files_properties(${KILN_CPU_DIR}/kern_avx512bf16.c PROPERTIES COMPILE_OPTIONS "/arch:AVX512")
  else()
    include(CheckCCompilerFlag)
    check_c_compiler_flag("-mavx512bf16" KILN_CC_HAS_AVX512BF16)
    set_source_files_properties(${KILN_CPU_DIR}/kern_avx2.c PROPERTIES COMPILE_OPTIONS
      "-mavx2;-mfma;-mf16c")
    set_source_files_properties(${KILN_CPU_DIR}/kern_avx512.c PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mfma;-mf16c")
    if(KILN_CC_HAS_AVX512BF16)
      set_source_files_properties(${KILN_CPU_DIR}/kern_avx512bf16.c PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx512bf16;-mfma;-mf16c")
    endif()
  endif()
endif()
