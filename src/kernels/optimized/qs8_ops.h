/*
 * qs8_ops.h — statically quantized int8 operators besides the matrix
 * products (those run on qd8_gemm.h's eko_qd8_gemm_uniform) and depthwise
 * convolution (qs8_dwconv.h): conversions to and from float32, addition
 * (and subtraction), multiplication, max pooling and global average pooling of NHWC tensors.
 *
 * A qint8 tensor holds q in [-128, 127] standing for scale * (q - zero_point),
 * one scale and zero point for the whole tensor. Integer sums run in int32;
 * a result turns into an int8 output the way XNNPACK's "fp32
 * requantization" does: the sum times a float multiplier (in_scale *
 * w_scale / out_scale, ...), rounded to the nearest integer (ties to even),
 * plus the output zero point, clamped to [qmin, qmax] (the fused
 * activation's range in output steps, within [-128, 127]).
 *
 * Plain C written for the compiler's vectors (channels innermost); callers
 * split the work over threads by rows. No allocation.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_QS8_OPS_H
#define EMBER_KERNELS_OPTIMIZED_QS8_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "window.h"

/* One tensor's quantization: x = scale * (q - zero_point). */
typedef struct eko_qs8_params {
    float scale;
    int32_t zero_point;
} eko_qs8_params;

/* Nearest integer (ties to even) of v in [-2^22, 2^22], without libm (a
 * call where the baseline has no rounding instruction): adding 1.5 * 2^23
 * leaves the integer in the low mantissa bits (XNNPACK's "magic bias").
 * Any other v (large, infinite, NaN, or a tile's unwritten lanes) gives an
 * unspecified value, never undefined behaviour: the bits are subtracted as
 * unsigned. */
static inline int32_t eko_round_small(float v) {
    /* a union, not memcpy: the compiler keeps it in registers and vectorizes loops of it */
    union {
        float f;
        uint32_t u;
    } t;
    t.f = v + 12582912.0f;
    return (int32_t)(t.u - 0x4B400000u);
}

/* The int8 step of a float in output steps: clamp(rint(v) + zp, lo, hi). */
static inline int8_t eko_qs8_round(float v, int32_t zp, int32_t lo, int32_t hi) {
    const float flo = (float)(lo - zp), fhi = (float)(hi - zp);
    v = v == v ? v : 0.0f; /* NaN: the zero point (then clamped) */
    v = v < flo ? flo : v;
    v = v > fhi ? fhi : v;
    return (int8_t)(eko_round_small(v) + zp);
}

/** Output range [*qmin, *qmax] of a fused activation [min, max] (floats,
 *  infinite when absent) for an output quantized by p, as XNNPACK rounds it. */
void eko_qs8_range(eko_qs8_params p, float min, float max, int32_t *qmin, int32_t *qmax);

/** q[i] = clamp(rint(x[i] / p.scale) + p.zero_point) over n elements
 *  (multiplying by the reciprocal, as XNNPACK and PyTorch do); NaN gives the zero point. */
void eko_qs8_quantize(size_t n, const float *x, int8_t *q, eko_qs8_params p);

/** x[i] = p.scale * (q[i] - p.zero_point) over n elements. */
void eko_qs8_dequantize(size_t n, const int8_t *q, float *x, eko_qs8_params p);

/**
 * y[i] = requantized a[i * inc_a] + b[i * inc_b] over n elements (inc 0: a
 * broadcast scalar): clamp(rint(ma * (a - za) + mb * (b - zb)) + zy) with
 * ma = sa / sy, mb = sb / sy. y overlaps neither a nor b. A negative
 * pb.scale subtracts b.
 */
void eko_qs8_add(size_t n, const int8_t *a, size_t inc_a, eko_qs8_params pa, const int8_t *b,
                 size_t inc_b, eko_qs8_params pb, int8_t *y, eko_qs8_params py, int32_t qmin,
                 int32_t qmax);

/**
 * y[i] = requantized a[i * inc_a] * b[i * inc_b] over n elements (inc 0: a
 * broadcast scalar): clamp(rint(m * (a - za) * (b - zb)) + zy) with
 * m = sa * sb / sy (the product exact in int32). y overlaps neither a nor b.
 */
void eko_qs8_mul(size_t n, const int8_t *a, size_t inc_a, eko_qs8_params pa, const int8_t *b,
                 size_t inc_b, eko_qs8_params pb, int8_t *y, eko_qs8_params py, int32_t qmin,
                 int32_t qmax);

/* A window over NHWC images (convolution or pooling). */
typedef struct eko_qs8_window {
    size_t h, w, c;              /* input image */
    size_t oh, ow;               /* output image */
    size_t kh, kw, sh, sw, dh, dw, pt, pl;
} eko_qs8_window;

/* A depthwise convolution's constants, prepared at init. */
typedef struct eko_qs8_dw {
    const int8_t *w;             /* [kh * kw][c]: tap-major, channels innermost */
    const int32_t *bias;         /* [c], in units of in_scale * w_scale[c] */
    const float *mult;           /* [c]: in_scale * w_scale[c] / out_scale */
    int32_t x_zero_point, y_zero_point, qmin, qmax;
} eko_qs8_dw;

/**
 * Max pooling over windows (padding never wins) of output rows [row0,
 * row0 + rows), input and output quantized alike, clamped to [qmin, qmax].
 */
void eko_qs8_maxpool(const eko_qs8_window *win, const int8_t *x, int8_t *y, size_t row0,
                     size_t rows, int32_t qmin, int32_t qmax);

/**
 * Mean over the hw pixels of each of `images` [hw, c] images into [c]:
 * clamp(rint((sum - hw * zx) * sx / (hw * sy)) + zy). hw * 255 must fit int32.
 */
void eko_qs8_global_avgpool(size_t images, size_t hw, size_t c, const int8_t *x,
                            eko_qs8_params px, int8_t *y, eko_qs8_params py, int32_t qmin,
                            int32_t qmax);

#endif /* EMBER_KERNELS_OPTIMIZED_QS8_OPS_H */
