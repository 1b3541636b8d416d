/*
 * f32_rows.h on AVX2 + FMA (8 floats per vector).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include "simd_avx2.h"
#include "f32_rows_body.h"
#else
typedef int eko_no_avx2_rows; /* this build has no AVX2 kernels */
#endif
