/*
 * f32_gemv.h — float32 products of a few rows (decode-shaped matrix
 * products) that read the weight once, in the layout it is stored in:
 *
 *   rows:  y[m][j] = bias[j] + sum_k x[m][k] * w[j * ldw + k]   (w as rows of k:
 *          a Linear weight [N, K]; each row streamed front to back)
 *   cols:  y[m][j] = bias[j] + sum_k x[m][k] * w[k * ldw + j]   (w as rows of n:
 *          mm's mat2 [K, N]; each row of the block streamed front to back)
 *
 * for m < mr <= EKO_GEMV_MAX_ROWS; x rows ldx apart, y rows ldy apart, bias
 * NULL for zeros. One table per level (f32_gemv_<isa>.c, one body:
 * f32_gemv_body.h), picked in config.c; these run on the calling thread,
 * matmul.h splits output columns over the pool. No allocation; thread-safe.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_F32_GEMV_H
#define EMBER_KERNELS_OPTIMIZED_F32_GEMV_H

#include <stddef.h>

#include "cpu.h"

#define EKO_GEMV_MAX_ROWS 4

typedef void (*eko_f32_gemv_fn)(size_t mr, size_t n, size_t k, const float *x, size_t ldx,
                                const float *w, size_t ldw, const float *bias, float *y,
                                size_t ldy);

typedef struct eko_f32_gemv {
    eko_isa isa;
    eko_f32_gemv_fn rows; /* n rows of w, each k long */
    eko_f32_gemv_fn cols; /* n columns of w's k rows */
} eko_f32_gemv;

/** The table of an instruction set; NULL if this build lacks it. */
const eko_f32_gemv *eko_f32_gemv_for(eko_isa isa);

/** The table of the level in use (never NULL). */
const eko_f32_gemv *eko_f32_gemv_active(void);

extern const eko_f32_gemv eko_f32_gemv_scalar;
extern const eko_f32_gemv eko_f32_gemv_avx2;
extern const eko_f32_gemv eko_f32_gemv_avx512;
extern const eko_f32_gemv eko_f32_gemv_neon;

#endif /* EMBER_KERNELS_OPTIMIZED_F32_GEMV_H */
