/*
 * qd8_neon.h — the primitives of qd8_gemm_body.h on AArch64 Advanced SIMD,
 * for qd8_gemm_neon.c (widening multiplies) and qd8_gemm_neondot.c (the
 * dot-product instruction, where the CPU has it). A panel's 16 columns are
 * four vectors of 4 int32; products are signed x signed, so no offset.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_QD8_NEON_H
#define EMBER_KERNELS_OPTIMIZED_QD8_NEON_H

#include <arm_neon.h>
#include <string.h>

#include "qd8_gemm.h"

#define QD8_X_OFFSET 0

typedef struct qd8_acc {
    int32x4_t v[4];
} qd8_acc;
typedef struct qd8_w {
    int8x16_t v[4];
} qd8_w;
typedef int8x16_t qd8_xv;
typedef struct qd8_f {
    float32x4_t v[4];
} qd8_f;

static inline qd8_acc qd8_acc_zero(void) {
    qd8_acc a;
    for (int i = 0; i < 4; i++) a.v[i] = vdupq_n_s32(0);
    return a;
}

static inline qd8_f qd8_f_zero(void) {
    qd8_f f;
    for (int i = 0; i < 4; i++) f.v[i] = vdupq_n_f32(0.0f);
    return f;
}

static inline qd8_w qd8_w_load(const uint8_t *p) {
    qd8_w w;
    for (int i = 0; i < 4; i++) w.v[i] = vld1q_s8((const int8_t *)(const void *)(p + 16 * i));
    return w;
}

static inline void qd8_w_unpack4(const uint8_t *p, qd8_w *lo, qd8_w *hi) {
    const uint8x16_t mask = vdupq_n_u8(0x0f);
    const int8x16_t eight = vdupq_n_s8(8);
    for (int i = 0; i < 4; i++) {
        const uint8x16_t v = vld1q_u8(p + 16 * i);
        lo->v[i] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, mask)), eight);
        hi->v[i] = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), eight);
    }
}

static inline qd8_xv qd8_x_load(const int8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return vreinterpretq_s8_u32(vdupq_n_u32(v));
}

#ifdef QD8_NEON_SDOT
static inline qd8_acc qd8_dot(qd8_acc acc, qd8_xv x, qd8_w w) {
    for (int i = 0; i < 4; i++) acc.v[i] = vdotq_s32(acc.v[i], w.v[i], x);
    return acc;
}
#else
/* Four columns of four products: two widening multiplies give int16
 * products, two pairwise widening adds the pairs in int32, and a pairwise
 * add finishes each column's four. */
static inline qd8_acc qd8_dot(qd8_acc acc, qd8_xv x, qd8_w w) {
    for (int i = 0; i < 4; i++) {
        const int16x8_t lo = vmull_s8(vget_low_s8(w.v[i]), vget_low_s8(x));
        const int16x8_t hi = vmull_high_s8(w.v[i], x);
        acc.v[i] = vaddq_s32(acc.v[i], vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
    }
    return acc;
}
#endif

static inline qd8_acc qd8_acc_add(qd8_acc a, qd8_acc b) {
    for (int i = 0; i < 4; i++) a.v[i] = vaddq_s32(a.v[i], b.v[i]);
    return a;
}

static inline qd8_acc qd8_acc_zc(qd8_acc a, const uint8_t *isums, int32_t zc) {
    for (int i = 0; i < 4; i++)
        a.v[i] = vmlsq_n_s32(a.v[i], vld1q_s32((const int32_t *)(const void *)(isums + 16 * i)), zc);
    return a;
}

static inline qd8_f qd8_scales_load(const uint8_t *p, bool bf16) {
    qd8_f f;
    for (int i = 0; i < 4; i++)
        f.v[i] = bf16 ? vreinterpretq_f32_u32(vshll_n_u16(
                            vld1_u16((const uint16_t *)(const void *)(p + 8 * i)), 16))
                      : vld1q_f32((const float *)(const void *)(p + 16 * i));
    return f;
}

static inline qd8_f qd8_f_slice(qd8_f f, qd8_acc acc, qd8_f sc) {
    for (int i = 0; i < 4; i++) f.v[i] = vfmaq_f32(f.v[i], vcvtq_f32_s32(acc.v[i]), sc.v[i]);
    return f;
}

static inline void qd8_store(float *c, size_t nc, qd8_f f, float zc, float sx, const uint8_t *tail,
                             float min, float max) {
    float tmp[EKO_QD8_NR];
    const float32x4_t lo = vdupq_n_f32(min), hi = vdupq_n_f32(max);
    for (int i = 0; i < 4; i++) {
        const float32x4_t ks = vld1q_f32((const float *)(const void *)(tail + 16 * i));
        const float32x4_t d = vfmsq_n_f32(f.v[i], ks, zc);
        float32x4_t v = vfmaq_n_f32(vld1q_f32((const float *)(const void *)(tail + 64 + 16 * i)),
                                    d, sx);
        /* NaN passes: compare, then select */
        v = vbslq_f32(vcltq_f32(v, lo), lo, v);
        v = vbslq_f32(vcgtq_f32(v, hi), hi, v);
        vst1q_f32(tmp + 4 * i, v);
    }
    memcpy(c, tmp, nc * sizeof(float));
}

#endif /* EMBER_KERNELS_OPTIMIZED_QD8_NEON_H */
