/*
 * vmath.h — vectorized float math over arrays: exp, log, tanh, erf,
 * sigmoid, SiLU, hardswish, GELU (exact and tanh forms).
 *
 *     const eko_vmath *vm = eko_vmath_active();
 *     vm->exp(n, x, y);                 // y[i] = exp(x[i]) for i < n
 *
 * One table per instruction set: AVX2 + FMA, AVX-512 and NEON from one body
 * (vmath_body.h) on the SIMD layer, whose accuracy and special values
 * vmath_simd.h gives (its inline eko_v_exp() etc. serve kernels that want
 * the math on their own vector registers); the scalar table is libm, one
 * element at a time. config.c picks the table of the level in use (cpu.h).
 * Every function accepts y == x (in place) and n == 0; none allocates, none
 * keeps state, all are thread-safe.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_VMATH_H
#define EMBER_KERNELS_OPTIMIZED_VMATH_H

#include <stddef.h>

#include "cpu.h"

/** y[i] = f(x[i]) for i < n; x and y are the same array or do not overlap. */
typedef void (*eko_f32_unary_fn)(size_t n, const float *x, float *y);

typedef struct eko_vmath {
    eko_isa isa;
    eko_f32_unary_fn exp, log, tanh, erf, sigmoid;
    eko_f32_unary_fn silu;      /* x * sigmoid(x) */
    eko_f32_unary_fn hardswish; /* x * clamp(x + 3, 0, 6) / 6 */
    eko_f32_unary_fn gelu;      /* x / 2 * (1 + erf(x / sqrt(2))) */
    eko_f32_unary_fn gelu_tanh; /* x / 2 * (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
} eko_vmath;

/** The table of an instruction set; NULL if this build lacks it. */
const eko_vmath *eko_vmath_for(eko_isa isa);

/** The table of the level in use (never NULL: scalar C at worst). */
const eko_vmath *eko_vmath_active(void);

/* The tables themselves, one per file vmath_<isa>.c. */
extern const eko_vmath eko_vmath_scalar;
extern const eko_vmath eko_vmath_avx2;
extern const eko_vmath eko_vmath_avx512;
extern const eko_vmath eko_vmath_neon;

#endif /* EMBER_KERNELS_OPTIMIZED_VMATH_H */
