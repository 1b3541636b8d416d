/*
 * f32 GEMM micro-kernel, portable C: up to 4 rows x 8 columns per call.
 * Plain loops over small fixed-size arrays, which compilers keep in vector
 * registers of the baseline instruction set (SSE2 on x86-64).
 */
#include "gemm.h"

#define MR 4
#define NR 8

void eko_f32_igemm_4x8_scalar(size_t mr, size_t nc, size_t kc, size_t ks, const float *const *a,
                              size_t a_off, const float *w,
                              float *c, size_t c_stride, float min, float max) {
    float acc[MR][NR];
    for (size_t i = 0; i < MR; i++)
        for (size_t j = 0; j < NR; j++) acc[i][j] = w[j];
    w += NR;
    for (size_t t = 0; t < ks; t++, a += mr) {
        const float *rows[MR];
        /* rows past mr repeat the last one: computed, never stored */
        for (size_t i = 0; i < MR; i++) rows[i] = a[i < mr ? i : mr - 1] + a_off;
        for (size_t k = 0; k < kc; k++, w += NR)
            for (size_t i = 0; i < MR; i++) {
                const float x = rows[i][k];
                for (size_t j = 0; j < NR; j++) acc[i][j] += x * w[j];
            }
    }
    for (size_t i = 0; i < mr; i++)
        for (size_t j = 0; j < nc; j++) {
            float v = acc[i][j];
            v = v < min ? min : v;
            c[i * c_stride + j] = v > max ? max : v;
        }
}

void eko_f32_gemm_4x8_scalar(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                             const float *w, float *c, size_t c_stride, float min, float max) {
    const float *rows[MR];
    for (size_t i = 0; i < mr && i < MR; i++) rows[i] = a + i * a_stride;
    eko_f32_igemm_4x8_scalar(mr, nc, kc, 1, rows, 0, w, c, c_stride, min, max);
}
