/*
 * f32 GEMM micro-kernel, AArch64 Advanced SIMD: up to 8 rows x 8 columns per
 * call. Registers: 8 x 2 accumulators + 2 weight vectors + 2 row vectors
 * (four k steps of two rows at a time, lanes picked by vfmaq_laneq) = 20 of 32.
 * One body per row count (1..8), so fewer rows never pay for eight, for the
 * direct form (rows a_stride apart) and the indirect one (gemm.h).
 */
#include "gemm.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#define NR 8

EKO_BODY void body(const size_t MR, const bool DIRECT,
                   size_t nc, size_t kc, size_t ks,
                   const float *const *a, const float *ad,
                   size_t a_stride, const float *w, float *c,
                   size_t c_stride, float min, float max) {
    float32x4_t acc[8][2];
    EKO_UNROLL
    for (size_t i = 0; i < MR; i++) {
        acc[i][0] = vld1q_f32(w);
        acc[i][1] = vld1q_f32(w + 4);
    }
    w += NR;
    /* the direct form is one tap of rows a_stride apart (DIRECT, a constant:
     * its tap loop and pointer table fold away) */
    for (size_t t = 0; t < (DIRECT ? 1 : ks); t++) {
        const float *rows[8];
        EKO_UNROLL
        for (size_t i = 0; i < MR; i++)
            rows[i] = DIRECT ? ad + i * a_stride : a[t * MR + i] + a_stride;
        size_t k = 0;
        /* four k steps per row load: one 4-float load of each row, its lanes
         * broadcast by the fused multiply-add itself */
        for (; k + 4 <= kc; k += 4) {
            float32x4_t x[8];
            EKO_UNROLL
            for (size_t i = 0; i < MR; i++) x[i] = vld1q_f32(rows[i] + k);
            EKO_UNROLL
            for (int u = 0; u < 4; u++, w += NR) {
                const float32x4_t b0 = vld1q_f32(w), b1 = vld1q_f32(w + 4);
                EKO_UNROLL
                for (size_t i = 0; i < MR; i++) {
                    float32x4_t xi = x[i];
                    switch (u) {
                    case 0:
                        acc[i][0] = vfmaq_laneq_f32(acc[i][0], b0, xi, 0);
                        acc[i][1] = vfmaq_laneq_f32(acc[i][1], b1, xi, 0);
                        break;
                    case 1:
                        acc[i][0] = vfmaq_laneq_f32(acc[i][0], b0, xi, 1);
                        acc[i][1] = vfmaq_laneq_f32(acc[i][1], b1, xi, 1);
                        break;
                    case 2:
                        acc[i][0] = vfmaq_laneq_f32(acc[i][0], b0, xi, 2);
                        acc[i][1] = vfmaq_laneq_f32(acc[i][1], b1, xi, 2);
                        break;
                    default:
                        acc[i][0] = vfmaq_laneq_f32(acc[i][0], b0, xi, 3);
                        acc[i][1] = vfmaq_laneq_f32(acc[i][1], b1, xi, 3);
                        break;
                    }
                }
            }
        }
        for (; k < kc; k++, w += NR) {
            const float32x4_t b0 = vld1q_f32(w), b1 = vld1q_f32(w + 4);
            EKO_UNROLL
            for (size_t i = 0; i < MR; i++) {
                const float32x4_t x = vdupq_n_f32(rows[i][k]);
                acc[i][0] = vfmaq_f32(acc[i][0], b0, x);
                acc[i][1] = vfmaq_f32(acc[i][1], b1, x);
            }
        }
    }
    const float32x4_t lo = vdupq_n_f32(min), hi = vdupq_n_f32(max);
    EKO_UNROLL
    for (size_t i = 0; i < MR; i++) {
        float32x4_t v0 = vminq_f32(vmaxq_f32(acc[i][0], lo), hi);
        float32x4_t v1 = vminq_f32(vmaxq_f32(acc[i][1], lo), hi);
        float *out = c + i * c_stride;
        if (nc == NR) {
            vst1q_f32(out, v0);
            vst1q_f32(out + 4, v1);
        } else {
            float tmp[NR];
            vst1q_f32(tmp, v0);
            vst1q_f32(tmp + 4, v1);
            for (size_t j = 0; j < nc; j++) out[j] = tmp[j];
        }
    }
}

void eko_f32_gemm_8x8_neon(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                           const float *w, float *c, size_t c_stride, float min, float max) {
    switch (mr) {
    case 1: body(1, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 2: body(2, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 3: body(3, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 4: body(4, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 5: body(5, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 6: body(6, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 7: body(7, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    default: body(8, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    }
}

void eko_f32_igemm_8x8_neon(size_t mr, size_t nc, size_t kc, size_t ks,
                            const float *const *a, size_t a_off, const float *w,
                            float *c, size_t c_stride, float min, float max) {
    switch (mr) {
    case 1: body(1, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 2: body(2, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 3: body(3, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 4: body(4, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 5: body(5, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 6: body(6, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 7: body(7, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    default: body(8, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    }
}

#else
typedef int eko_no_neon_gemm; /* this build has no NEON kernels */
#endif
