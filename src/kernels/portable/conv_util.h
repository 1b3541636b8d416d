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
 * A batched 1-d, 2-d or 3-d convolution, all run as 3-d: a 2-d one has depth
 * 1, a 1-d one depth and height 1 (kernel 1, stride 1, no padding there).
 *
 *   input  (N, C_in, D, H, W)
 *   weight (C_out, C_in / groups, KD, KH, KW)        or, transposed,
 *          (C_in, C_out / groups, KD, KH, KW)
 *   out    (N, C_out, OD, OH, OW)
 */
typedef struct ek_conv_geom {
    int64_t n, cin, d, h, w; /* input */
    int64_t cout, kd, kh, kw; /* weight (out channels, kernel) */
    int64_t od, oh, ow;       /* output */
    int64_t sd, sh, sw;       /* stride */
    int64_t pd, ph, pw;       /* padding */
    int64_t dd, dh, dw;       /* dilation */
    int64_t groups;
    bool transposed;
    size_t nsp;              /* spatial dims of the tensors: 1, 2 or 3 */
    int64_t out_shape[5];    /* (N, C_out, [[OD,] OH,] OW) */
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

/** Element strides of x, weight and out, each as (dim 0, dim 1, D, H, W). */
typedef struct ek_conv_strides {
    int64_t x[5], w[5], out[5];
} ek_conv_strides;

/** ek_conv_run over tensors in any dim order (channels last, ...), given their strides. */
ember_status ek_conv_run_strided(ember_kernel_ctx *ctx, int dtype, void *out, const void *x,
                                 const void *wt, const void *bias, const ek_conv_geom *g,
                                 const ek_conv_strides *st);

/**
 * The (dim 0, dim 1, D, H, W) strides of t, an input, weight or out of
 * geometry g; a spatial dim t lacks (size 1) gets stride 0.
 */
void ek_conv_strides_of(const ek_conv_geom *g, const ember_tensor *t, int64_t st[5]);

#endif /* EMBER_KERNELS_PORTABLE_CONV_UTIL_H */
