# Instruction-set flags for the optimized kernels.
#
# ember_isa_flags(<target> <sources>): on x86-64, files named *_avx2.c get
# AVX2 + FMA + F16C and files named *_avx512.c get AVX-512 F/BW/DQ/VL on top,
# and <target> learns which sets it has kernels for (EMBER_HAVE_AVX2_KERNELS,
# EMBER_HAVE_AVX512_KERNELS). On aarch64, *_neon.c files need no flags and
# EMBER_HAVE_NEON_KERNELS is set. Other files keep the baseline flags.
include(CheckCCompilerFlag)

function(ember_isa_flags target sources)
  set(arch "${CMAKE_SYSTEM_PROCESSOR}")
  if(arch MATCHES "^(x86_64|AMD64|amd64)$")
    check_c_compiler_flag("-mavx2 -mfma -mf16c" EMBER_CC_AVX2)
    check_c_compiler_flag("-mavx512f -mavx512bw -mavx512dq -mavx512vl" EMBER_CC_AVX512)
    foreach(src IN LISTS sources)
      if(src MATCHES "_avx2\\.c$" AND EMBER_CC_AVX2)
        set_source_files_properties("${src}" PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
      elseif(src MATCHES "_avx512\\.c$" AND EMBER_CC_AVX512)
        set_source_files_properties("${src}" PROPERTIES COMPILE_OPTIONS
          "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl")
      endif()
    endforeach()
    if(EMBER_CC_AVX2)
      target_compile_definitions(${target} PRIVATE EMBER_HAVE_AVX2_KERNELS)
    endif()
    if(EMBER_CC_AVX512)
      target_compile_definitions(${target} PRIVATE EMBER_HAVE_AVX512_KERNELS)
    endif()
  elseif(arch MATCHES "^(aarch64|arm64|ARM64)$")
    target_compile_definitions(${target} PRIVATE EMBER_HAVE_NEON_KERNELS)
  endif()
endfunction()
