/*
 * f32_rows.h — float32 row kernels by instruction set: elementwise binary
 * ops on a row with either operand possibly one value (splatted), clamp,
 * softmax and log-softmax of a row, layer norm of a row.
 *
 *     const eko_f32_rows *r = eko_f32_rows_active();
 *     r->binary[EKO_BIN_ADD][EKO_VS](n, a, &c, y);   // y[i] = a[i] + c
 *     r->softmax(n, x, y);
 *
 * One table per level (f32_rows_<isa>.c, one body: f32_rows_body.h),
 * picked in config.c. These run on the calling thread; the drivers that
 * split rows over the thread pool are eltwise.h and rows.h. Every kernel
 * accepts y == x (or y == a or b), never allocates, is thread-safe, and
 * reads and writes only [0, n).
 */
#ifndef EMBER_KERNELS_OPTIMIZED_F32_ROWS_H
#define EMBER_KERNELS_OPTIMIZED_F32_ROWS_H

#include <stddef.h>

#include "cpu.h"

/* Binary ops. MIN and MAX are x < y ? x : y and x > y ? x : y (y when
 * either is NaN); PRELU is x >= 0 ? x : x * y. */
typedef enum eko_binop {
    EKO_BIN_ADD,
    EKO_BIN_SUB,
    EKO_BIN_MUL,
    EKO_BIN_DIV,
    EKO_BIN_MIN,
    EKO_BIN_MAX,
    EKO_BIN_PRELU,
    EKO_BINOP_COUNT
} eko_binop;

/* Which operand of a binary row is one value repeated: none (VV), b (VS), a (SV). */
typedef enum eko_bshape { EKO_VV, EKO_VS, EKO_SV, EKO_BSHAPE_COUNT } eko_bshape;

/** y[i] = a[i] op b[i] for i < n; a splatted operand is read at [0] only. */
typedef void (*eko_f32_binary_fn)(size_t n, const float *a, const float *b, float *y);

typedef struct eko_f32_rows {
    eko_isa isa;
    eko_f32_binary_fn binary[EKO_BINOP_COUNT][EKO_BSHAPE_COUNT];
    /* y[i] = min(max(x[i], lo), hi), NaN staying NaN */
    void (*clamp)(size_t n, const float *x, float lo, float hi, float *y);
    /* y = exp(x - max) / sum, over one row of n >= 1 (a NaN in the row, or
     * a row of -inf, gives NaN everywhere, as in PyTorch) */
    void (*softmax)(size_t n, const float *x, float *y);
    /* y = x - max - log(sum(exp(x - max))), same conventions */
    void (*log_softmax)(size_t n, const float *x, float *y);
    /* y = (x - mean) * rstd * w + b over one row of n >= 1, rstd = 1 /
     * sqrt(biased variance + eps); w and b may each be NULL (1 and 0) */
    void (*layer_norm)(size_t n, const float *x, const float *w, const float *b, float eps,
                       float *y, float *mean, float *rstd);
} eko_f32_rows;

/** The table of an instruction set; NULL if this build lacks it. */
const eko_f32_rows *eko_f32_rows_for(eko_isa isa);

/** The table of the level in use (never NULL). */
const eko_f32_rows *eko_f32_rows_active(void);

extern const eko_f32_rows eko_f32_rows_scalar;
extern const eko_f32_rows eko_f32_rows_avx2;
extern const eko_f32_rows eko_f32_rows_avx512;
extern const eko_f32_rows eko_f32_rows_neon;

#endif /* EMBER_KERNELS_OPTIMIZED_F32_ROWS_H */
