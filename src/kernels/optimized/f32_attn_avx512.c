/*
 * Attention micro-kernels (attention.h), AVX-512, 16 floats per vector.
 */
#include <math.h>

#include "attention.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include "simd_avx512.h"
#include "vmath_simd.h"
#include "f32_attn_body.h"

const eko_f32_attn eko_f32_attn_avx512 = {EKO_ISA_AVX512, attn_scores, attn_softmax,
                                               attn_weighted_sum, attn_int8_row,
                                          attn_scores_i8, attn_weighted_sum_i8};
#endif
