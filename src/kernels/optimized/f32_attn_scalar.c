/*
 * Attention micro-kernels (attention.h), portable C (one float per vector; the compiler's baseline vectors).
 */
#include <math.h>

#include "attention.h"
#include "simd_scalar.h"
#include "vmath_simd.h"
#include "f32_attn_body.h"

const eko_f32_attn eko_f32_attn_scalar = {EKO_ISA_SCALAR, attn_scores, attn_softmax,
                                               attn_weighted_sum, attn_int8_row,
                                          attn_scores_i8, attn_weighted_sum_i8};
