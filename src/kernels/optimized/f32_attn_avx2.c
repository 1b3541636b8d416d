/*
 * Attention micro-kernels (attention.h), AVX2 + FMA, 8 floats per vector.
 */
#include <math.h>

#include "attention.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include "simd_avx2.h"
#include "vmath_simd.h"
#include "f32_attn_body.h"

const eko_f32_attn eko_f32_attn_avx2 = {EKO_ISA_AVX2, attn_scores, attn_softmax,
                                               attn_weighted_sum, attn_int8_row,
                                          attn_scores_i8, attn_weighted_sum_i8};
#endif
