/*
 * conv.h — f32 2-d convolution on NHWC activations as a matrix product with
 * a filter packed by gemm.h (rows of the OHWI filter: KH x KW x group
 * channels each), split over the thread pool.
 *
 *     y[b][oy][ox][g * gout + o] = clamp(bias + sum_{ky, kx, i}
 *         x[b][oy * sh + ky * dh - pt][ox * sw + kx * dw - pl][g * gin + i]
 *         * w[g * gout + o][ky][kx][i], min, max)     (taps in the padding: 0)
 *
 * The micro-kernel reads each output pixel's taps through a table of row
 * pointers into the input (a row of zeros for padding), made per block of
 * pixels in the task's scratch: no im2col copy of the input. That is faster
 * than copying even for an RGB stem (3 channels a tap: 3-4x on a 3x3 stride
 * 2 stem), so there is no other form. Tasks are blocks of pixels by groups
 * of panels (tiles.h), so a late layer with few pixels and many channels
 * still spreads over every thread.
 * No allocation; the caller gives eko_f32_conv_scratch_bytes of scratch.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_CONV_H
#define EMBER_KERNELS_OPTIMIZED_CONV_H

#include <stdbool.h>
#include <stddef.h>

#include "gemm.h"

typedef struct eko_conv_geom {
    size_t n, h, w, c;                  /* input, NHWC */
    size_t oh, ow, oc;                  /* output height, width, channels */
    size_t kh, kw, sh, sw, dh, dw, pt, pl;
    size_t groups, gin, gout;           /* c = groups * gin, oc = groups * gout */
} eko_conv_geom;

/** Scratch bytes eko_f32_conv needs on `threads` threads; false on overflow. */
bool eko_f32_conv_scratch_bytes(const eko_conv_geom *g, size_t threads, size_t *bytes);

/**
 * The convolution of x into y with the filter packed by eko_f32_pack for
 * cfg, one group after the other (each group's gout x (kh * kw * gin)
 * product packed on its own, eko_f32_packed_size floats apart). scratch:
 * 64-byte aligned, eko_f32_conv_scratch_bytes for the pool's size. y must
 * not overlap x.
 */
void eko_f32_conv(const eko_f32_gemm_config *cfg, struct ember_threadpool *pool,
                  const eko_conv_geom *g, const float *x, const float *packed, float *y,
                  float min, float max, void *scratch);

#endif /* EMBER_KERNELS_OPTIMIZED_CONV_H */
