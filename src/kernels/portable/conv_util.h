/*
 * conv_util.h — shared geometry and loop of the convolution kernels (internal).
 *
 * convolution.out and convolution_backward.out read the same parameters and
 * agree on one output size; the backward input gradient is itself a direct
 * convolution (the transpose of the forward one), so both run ek_conv_run.
 */
#ifndef EMBER_KERNELS_PORTABLE_CONV_UTIL_H
#define EMBER_KERNELS_PORTABLE_CONV_UTIL_H

#include "kernel_util.h"

/**
 * A batched 1-d or 2-d convolution; 1-d is 2-d with height 1.
 *
 *   input  (N, C_in, H, W)
 *   weight (C_out, C_in / groups, KH, KW)        or, transposed,
 *          (C_in, C_out / groups, KH, KW)
 *   out    (N, C_out, OH, OW)
 */
typedef struct ek_conv_geom {
    int64_t n, cin, h, w; /* input */
    int64_t cout, kh, kw; /* weight (out channels, kernel) */
    int64_t oh, ow;       /* output */
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t groups;
    bool transposed;
    size_t nsp;              /* spatial dims of the tensors: 1 or 2 */
    int64_t out_shape[4];    /* (N, C_out, [OH,] OW) */
} ek_conv_geom;

/**
 * Checks input and weight ranks and the parameter lists as convolution.out
 * does (stride, padding, dilation, output_padding with one value or one per
 * spatial dim; groups dividing the channels) and fills *g, including the
 * output shape. Fails NOT_SUPPORTED (rank), INVALID_ARGUMENT (a parameter),
 * SHAPE_MISMATCH (channels, kernel larger than the padded input).
 */
ember_status ek_conv_geom_init(ember_kernel_ctx *ctx, ek_conv_geom *g, const ember_tensor *in,
                               const ember_tensor *wt, const int64_t *stride, size_t nstride,
                               const int64_t *pad, size_t npad, const int64_t *dil, size_t ndil,
                               bool transposed, const int64_t *opad, size_t nopad,
                               int64_t groups);

/**
 * out = conv(x, wt) + bias (bias may be NULL) for the geometry g, all of
 * one dtype, contiguous, with the shapes g describes. Floats accumulate in
 * the compute type, integers in wrapping 64-bit arithmetic. Float
 * convolutions take im2col tiles from ctx's scratch when there is room
 * (else they run a direct loop). Fails NOT_SUPPORTED for bool.
 */
ember_status ek_conv_run(ember_kernel_ctx *ctx, int dtype, void *out, const void *x,
                         const void *wt, const void *bias, const ek_conv_geom *g);

/** Element strides of x, weight and out, each as (dim 0, dim 1, H, W). */
typedef struct ek_conv_strides {
    int64_t x[4], w[4], out[4];
} ek_conv_strides;

/** ek_conv_run over tensors in any dim order (channels last, ...), given their strides. */
ember_status ek_conv_run_strided(ember_kernel_ctx *ctx, int dtype, void *out, const void *x,
                                 const void *wt, const void *bias, const ek_conv_geom *g,
                                 const ek_conv_strides *st);

/** The (dim 0, dim 1, H, W) strides of t, an input, weight or out of geometry g. */
void ek_conv_strides_of(const ek_conv_geom *g, const ember_tensor *t, int64_t st[4]);

#endif /* EMBER_KERNELS_PORTABLE_CONV_UTIL_H */
