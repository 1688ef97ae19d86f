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
    set(KILN_CPU_VEC_EXTRA "")
    if(MINGW)
      # The Windows x64 ABI only keeps the stack 16-byte aligned and GCC cannot realign it
      # for spilled AVX registers, so its aligned spill moves can fault; the assembler turns
      # every aligned vector move into an unaligned one (same speed on aligned data).
      check_c_compiler_flag("-Wa,-muse-unaligned-vector-move" KILN_AS_UNALIGNED_MOVES)
      if(KILN_AS_UNALIGNED_MOVES)
        set(KILN_CPU_VEC_EXTRA ";-Wa,-muse-unaligned-vector-move")
      else()
        message(WARNING "kiln: this assembler lacks -muse-unaligned-vector-move; AVX kernels built by MinGW may fault on misaligned spills")
      endif()
    endif()
    set_source_files_properties(${KILN_CPU_DIR}/kern_avx2.c PROPERTIES COMPILE_OPTIONS
      "-mavx2;-mfma;-mf16c${KILN_CPU_VEC_EXTRA}")
    set_source_files_properties(${KILN_CPU_DIR}/kern_avx512.c PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mfma;-mf16c${KILN_CPU_VEC_EXTRA}")
    if(KILN_CC_HAS_AVX512BF16)
      set_source_files_properties(${KILN_CPU_DIR}/kern_avx512bf16.c PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx512bf16;-mfma;-mf16c${KILN_CPU_VEC_EXTRA}")
    endif()
  endif()
endif()
