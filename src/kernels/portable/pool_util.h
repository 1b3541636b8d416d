/*
 * pool_util.h — shared geometry of the 2-d pooling kernels (internal).
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

#endif /* EMBER_KERNELS_PORTABLE_POOL_UTIL_H */
