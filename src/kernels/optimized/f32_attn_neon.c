/*
 * Attention micro-kernels (attention.h), aarch64 Advanced SIMD, 4 floats per vector.
 */
#include <math.h>

#include "attention.h"

#if defined(__aarch64__)
#include "simd_neon.h"
#include "vmath_simd.h"
#include "f32_attn_body.h"

const eko_f32_attn eko_f32_attn_neon = {EKO_ISA_NEON, attn_scores, attn_softmax,
                                               attn_weighted_sum, attn_int8_row,
                                          attn_scores_i8, attn_weighted_sum_i8};
#endif
