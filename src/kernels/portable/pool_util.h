/*
 * pool_util.h — shared geometry and loops of the pooling kernels (internal).
 */
#ifndef EMBER_KERNELS_PORTABLE_POOL_UTIL_H
#define EMBER_KERNELS_PORTABLE_POOL_UTIL_H

#include "kernel_util.h"

/** Input (N, C, H, W) or (C, H, W) viewed as (planes, H, W). */
typedef struct ek_pool2d {
    int64_t planes, h, w;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t oh, ow;
    int64_t out_shape[4];
    size_t out_dim;
} ek_pool2d;

/**
 * Reads kernel_size, stride (empty means kernel_size), padding and dilation
 * (dil_items NULL means 1) for a 3-d or 4-d input, checks them as PyTorch
 * does (padding at most half the effective kernel) and computes the output
 * size with ceil_mode. Fails INVALID_ARGUMENT / SHAPE_MISMATCH.
 */
ember_status ek_pool2d_init(ember_kernel_ctx *ctx, ek_pool2d *p, const ember_tensor *in,
                            const int64_t *ks, size_t nks, const int64_t *st, size_t nst,
                            const int64_t *pd, size_t npd, const int64_t *dl, size_t ndl,
                            bool ceil_mode);

/**
 * Geometry of a pooling over the last nsp (2 or 3) dims of an input with
 * nsp + 1 or nsp + 2 dims, viewed as (planes, D, H, W); a 2-d pooling has
 * D = 1 with kernel 1, stride 1, no padding. Arrays are ordered (D, H, W).
 */
typedef struct ek_pool {
    size_t nsp;
    int64_t planes;
    int64_t in[3], out[3];
    int64_t k[3], s[3], p[3], dl[3]; /* kernel, stride, padding, dilation */
    int64_t out_shape[5];
    size_t out_dim;
} ek_pool;

/**
 * As ek_pool2d_init for nsp spatial dims: each list has 1 or nsp values
 * (stride empty means kernel_size, dl NULL means dilation 1).
 */
ember_status ek_pool_init(ember_kernel_ctx *ctx, ek_pool *p, const ember_tensor *in, size_t nsp,
                          const int64_t *ks, size_t nks, const int64_t *st, size_t nst,
                          const int64_t *pd, size_t npd, const int64_t *dl, size_t ndl,
                          bool ceil_mode);

/**
 * Geometry of an adaptive pooling of the last nsp dims to output_size
 * (nsp values): output cell o of a dim of size n covers input
 * [floor(o n / out), ceil((o + 1) n / out)). Fails SHAPE_MISMATCH (rank,
 * empty input plane) or INVALID_ARGUMENT (sizes).
 */
ember_status ek_pool_adaptive_init(ember_kernel_ctx *ctx, ek_pool *p, const ember_tensor *in,
                                   size_t nsp, const int64_t *os, size_t nos);

/**
 * Average over each window (in and out of one dtype: float, or int64 whose
 * sums divide with truncation as in PyTorch; any dim order). divisor 0
 * means none: the window clipped to the padded input (count_include_pad) or
 * to the input. Fails NOT_SUPPORTED for other dtypes.
 */
ember_status ek_pool_avg(ember_kernel_ctx *ctx, const ek_pool *p, const ember_tensor *in,
                         ember_tensor *out, bool count_include_pad, int64_t divisor);

/**
 * Max over each dilated window, NaN winning; indices (int64) get the flat
 * position of the max within its (D, H, W) volume. Float and integer
 * dtypes, any dim order.
 */
ember_status ek_pool_max(ember_kernel_ctx *ctx, const ek_pool *p, const ember_tensor *in,
                         ember_tensor *out, ember_tensor *indices);

/** Adaptive average over the cells of ek_pool_adaptive_init. Float dtypes, any dim order. */
ember_status ek_pool_adaptive_avg(ember_kernel_ctx *ctx, const ek_pool *p,
                                  const ember_tensor *in, ember_tensor *out);

/**
 * The whole of avg_pool{1,2,3}d.out over nsp spatial dims: reads the
 * arguments (self, kernel_size, stride, padding, ceil_mode,
 * count_include_pad, [divisor_override when has_divisor,] out), checks them
 * and pools. name ("avg_pool2d") prefixes the error messages.
 */
ember_status ek_pool_avg_op(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, size_t nsp,
                            bool has_divisor, const char *name);

/**
 * The whole of max_pool{2,3}d_with_indices.out over nsp spatial dims:
 * (self, kernel_size, stride, padding, dilation, ceil_mode, out, indices).
 */
ember_status ek_pool_max_op(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, size_t nsp,
                            const char *name);

#endif /* EMBER_KERNELS_PORTABLE_POOL_UTIL_H */
