/*
 * f32_dwconv.h on AVX-512 F/DQ (16 floats per vector).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512DQ__)
#include "simd_avx512.h"
#include "f32_dwconv_body.h"
#else
typedef int eko_no_avx512_dwconv; /* this build has no AVX-512 kernels */
#endif
