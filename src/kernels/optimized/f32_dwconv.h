/*
 * f32_dwconv.h — one output row of a depthwise 2-d convolution on NHWC
 * float32 data (channel multiplier 1: output channel c reads input channel
 * c only):
 *
 *   out[ox][c] = clamp(bias[c] + sum_{ky, kx} rows[ky][ix][c] * w[ky][kx][c], min, max)
 *   with ix = ox * sw + kx * dw - pl, taps with ix outside [0, w) skipped
 *
 * rows[ky] is the input row that kernel row ky reads (w pixels of c floats),
 * or NULL where that row falls in the padding. One table per level
 * (f32_dwconv_<isa>.c, one body: f32_dwconv_body.h), picked in config.c; a
 * call runs on the calling thread (the CPU backend splits output rows over
 * the pool). No allocation; thread-safe.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_F32_DWCONV_H
#define EMBER_KERNELS_OPTIMIZED_F32_DWCONV_H

#include <stddef.h>

#include "cpu.h"

/** The geometry of one depthwise convolution (all but the rows). */
typedef struct eko_dwconv_geom {
    size_t w, c;        /* input width, channels */
    size_t ow;          /* output width */
    size_t kh, kw;      /* kernel */
    size_t sw, dw, pl;  /* horizontal stride, dilation, left padding */
} eko_dwconv_geom;

typedef void (*eko_f32_dwconv_row_fn)(const eko_dwconv_geom *g, const float *const *rows,
                                      const float *weights, const float *bias, float min,
                                      float max, float *out);

typedef struct eko_f32_dwconv {
    eko_isa isa;
    eko_f32_dwconv_row_fn row;
} eko_f32_dwconv;

/** The table of an instruction set; NULL if this build lacks it. */
const eko_f32_dwconv *eko_f32_dwconv_for(eko_isa isa);

/** The table of the level in use (never NULL). */
const eko_f32_dwconv *eko_f32_dwconv_active(void);

extern const eko_f32_dwconv eko_f32_dwconv_scalar;
extern const eko_f32_dwconv eko_f32_dwconv_avx2;
extern const eko_f32_dwconv eko_f32_dwconv_avx512;
extern const eko_f32_dwconv eko_f32_dwconv_neon;

#endif /* EMBER_KERNELS_OPTIMIZED_F32_DWCONV_H */
