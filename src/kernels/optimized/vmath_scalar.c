/*
 * vmath.h in portable C, the level every CPU has: one element at a time
 * through libm (as accurate as it gets, and on one element faster than the
 * branch-free vector algorithms of vmath_simd.h, which compute every range's
 * formula for every element). Same formulas as the portable kernels.
 */
#include <math.h>

#include "vmath.h"

#define SCALAR_ARRAY(NAME, EXPR)                                                                   \
    static void NAME(size_t n, const float *x, float *y) {                                         \
        for (size_t i = 0; i < n; i++) {                                                           \
            const float v = x[i];                                                                  \
            y[i] = (EXPR);                                                                         \
        }                                                                                          \
    }

/* 1 / (1 + exp(-x)), as e / (1 + e) with e = exp(-|x|) for negative x (no overflow) */
static inline float sigmoid(float v) {
    const float e = expf(-fabsf(v));
    return (v < 0.0f ? e : 1.0f) / (1.0f + e);
}

SCALAR_ARRAY(sc_exp, expf(v))
SCALAR_ARRAY(sc_log, logf(v))
SCALAR_ARRAY(sc_tanh, tanhf(v))
SCALAR_ARRAY(sc_erf, erff(v))
SCALAR_ARRAY(sc_sigmoid, sigmoid(v))
SCALAR_ARRAY(sc_silu, v * sigmoid(v))
SCALAR_ARRAY(sc_hardswish, v * (1.0f / 6.0f) * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f))
SCALAR_ARRAY(sc_gelu, v * 0.5f * (1.0f + erff(v * 0.707106781f)))
SCALAR_ARRAY(sc_gelu_tanh,
             0.5f * v * (1.0f + tanhf(0.797884561f * (v + 0.044715f * (v * v * v)))))

const eko_vmath eko_vmath_scalar = {
    .isa = EKO_ISA_SCALAR,
    .exp = sc_exp,
    .log = sc_log,
    .tanh = sc_tanh,
    .erf = sc_erf,
    .sigmoid = sc_sigmoid,
    .silu = sc_silu,
    .hardswish = sc_hardswish,
    .gelu = sc_gelu,
    .gelu_tanh = sc_gelu_tanh,
};
