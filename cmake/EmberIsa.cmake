# Instruction-set flags for the optimized kernels.
#
# ember_isa_flags(<target> <sources>): on x86-64, files named *_avx2.c get
# AVX2 + FMA + F16C and files named *_avx512.c get AVX-512 F/BW/DQ/VL on top,
# files named *_avx512vnni.c get AVX-512 VNNI on top of that, files named
# *_avx2vnni.c AVX2 + AVX-VNNI, and <target> learns which sets it has kernels
# for (EMBER_HAVE_AVX2_KERNELS, EMBER_HAVE_AVX512_KERNELS,
# EMBER_HAVE_AVX512VNNI_KERNELS, EMBER_HAVE_AVX2VNNI_KERNELS). On aarch64,
# *_neon.c files need no flags (EMBER_HAVE_NEON_KERNELS) and *_neondot.c
# files get the dot-product extension (EMBER_HAVE_NEONDOT_KERNELS). Other
# files keep the baseline flags. A file's kernels run only where cpu.c finds
# its instructions.
include(CheckCCompilerFlag)

function(ember_isa_flags target sources)
  set(arch "${CMAKE_SYSTEM_PROCESSOR}")
  if(arch MATCHES "^(x86_64|AMD64|amd64)$")
    check_c_compiler_flag("-mavx2 -mfma -mf16c" EMBER_CC_AVX2)
    check_c_compiler_flag("-mavx512f -mavx512bw -mavx512dq -mavx512vl" EMBER_CC_AVX512)
    check_c_compiler_flag("-mavx512f -mavx512bw -mavx512vnni" EMBER_CC_AVX512VNNI)
    check_c_compiler_flag("-mavx2 -mavxvnni" EMBER_CC_AVX2VNNI)
    foreach(src IN LISTS sources)
      if(src MATCHES "_avx2\\.c$" AND EMBER_CC_AVX2)
        set_source_files_properties("${src}" PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
      elseif(src MATCHES "_avx512\\.c$" AND EMBER_CC_AVX512)
        set_source_files_properties("${src}" PROPERTIES COMPILE_OPTIONS
          "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl")
      elseif(src MATCHES "_avx512vnni\\.c$" AND EMBER_CC_AVX512 AND EMBER_CC_AVX512VNNI)
        set_source_files_properties("${src}" PROPERTIES COMPILE_OPTIONS
          "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512dq;-mavx512vl;-mavx512vnni")
      elseif(src MATCHES "_avx2vnni\\.c$" AND EMBER_CC_AVX2 AND EMBER_CC_AVX2VNNI)
        set_source_files_properties("${src}" PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni")
      endif()
    endforeach()
    if(EMBER_CC_AVX2)
      target_compile_definitions(${target} PRIVATE EMBER_HAVE_AVX2_KERNELS)
    endif()
    if(EMBER_CC_AVX512)
      target_compile_definitions(${target} PRIVATE EMBER_HAVE_AVX512_KERNELS)
    endif()
    if(EMBER_CC_AVX512 AND EMBER_CC_AVX512VNNI)
      target_compile_definitions(${target} PRIVATE EMBER_HAVE_AVX512VNNI_KERNELS)
    endif()
    if(EMBER_CC_AVX2 AND EMBER_CC_AVX2VNNI)
      target_compile_definitions(${target} PRIVATE EMBER_HAVE_AVX2VNNI_KERNELS)
    endif()
  elseif(arch MATCHES "^(aarch64|arm64|ARM64)$")
    target_compile_definitions(${target} PRIVATE EMBER_HAVE_NEON_KERNELS)
    check_c_compiler_flag("-march=armv8.2-a+dotprod" EMBER_CC_NEONDOT)
    if(EMBER_CC_NEONDOT)
      foreach(src IN LISTS sources)
        if(src MATCHES "_neondot\\.c$")
          set_source_files_properties("${src}" PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
        endif()
      endforeach()
      target_compile_definitions(${target} PRIVATE EMBER_HAVE_NEONDOT_KERNELS)
    endif()
  endif()
endfunction()
