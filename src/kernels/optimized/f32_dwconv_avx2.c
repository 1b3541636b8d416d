/*
 * f32_dwconv.h on AVX2 + FMA (8 floats per vector).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include "simd_avx2.h"
#include "f32_dwconv_body.h"
#else
typedef int eko_no_avx2_dwconv; /* this build has no AVX2 kernels */
#endif
