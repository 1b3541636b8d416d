/*
 * f32 GEMM micro-kernel, AVX-512: up to 8 rows x 32 columns per call.
 * Registers: 8 x 2 accumulators + 2 weight vectors + broadcasts, of 32.
 * One body per row count (1..8), for the direct form (rows a_stride apart)
 * and the indirect one (a row pointer per row and tap, gemm.h); the last
 * panel's columns are stored with a write mask.
 */
#include "gemm.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

#define NR 32

EKO_BODY void body(const size_t MR, const bool DIRECT, const bool HALF,
                   size_t nc, size_t kc, size_t ks,
                   const float *const *a, const float *ad,
                   size_t a_stride, const float *w, float *c,
                   size_t c_stride, float min, float max) {
    __m512 acc[8][2];
    EKO_UNROLL
    for (size_t i = 0; i < MR; i++) {
        acc[i][0] = _mm512_loadu_ps(w);
        acc[i][1] = HALF ? _mm512_setzero_ps() : _mm512_loadu_ps(w + 16);
    }
    w += NR;
    /* the direct form is one tap of rows a_stride apart (DIRECT, a constant:
     * its tap loop and pointer table fold away, which small k notices) */
    for (size_t t = 0; t < (DIRECT ? 1 : ks); t++) {
        const float *rows[8];
        EKO_UNROLL
        for (size_t i = 0; i < MR; i++)
            rows[i] = DIRECT ? ad + i * a_stride : a[t * MR + i] + a_stride;
        for (size_t k = 0; k < kc; k++, w += NR) {
            const __m512 b0 = _mm512_loadu_ps(w);
            const __m512 b1 = HALF ? b0 : _mm512_loadu_ps(w + 16);
            EKO_UNROLL
            for (size_t i = 0; i < MR; i++) {
                const __m512 x = _mm512_set1_ps(rows[i][k]);
                acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
                if (!HALF) acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
            }
        }
    }
    const __m512 lo = _mm512_set1_ps(min), hi = _mm512_set1_ps(max);
    const __mmask16 m0 = nc >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nc) - 1u);
    const __mmask16 m1 = nc >= 32 ? (__mmask16)0xffff
                                  : nc <= 16 ? (__mmask16)0 : (__mmask16)((1u << (nc - 16)) - 1u);
    EKO_UNROLL
    for (size_t i = 0; i < MR; i++) {
        float *out = c + i * c_stride;
        _mm512_mask_storeu_ps(out, m0, _mm512_min_ps(hi, _mm512_max_ps(lo, acc[i][0])));
        if (!HALF)
            _mm512_mask_storeu_ps(out + 16, m1, _mm512_min_ps(hi, _mm512_max_ps(lo, acc[i][1])));
    }
}

/* One row (decode): the product streams the panel from memory, so four k
 * steps run at once on eight accumulators, keeping enough loads in flight
 * to use the memory bandwidth (two accumulators leave it a quarter idle). */
static void one_row(size_t nc, size_t kc, const float *a, const float *w, float *c, float min,
                    float max) {
    __m512 acc[8];
    acc[0] = _mm512_loadu_ps(w);
    acc[1] = _mm512_loadu_ps(w + 16);
    for (int i = 2; i < 8; i++) acc[i] = _mm512_setzero_ps();
    w += NR;
    size_t k = 0;
    for (; k + 4 <= kc; k += 4, w += 4 * NR) {
        EKO_UNROLL
        for (int u = 0; u < 4; u++) {
            const __m512 x = _mm512_set1_ps(a[k + (size_t)u]);
            acc[2 * u] = _mm512_fmadd_ps(x, _mm512_loadu_ps(w + u * NR), acc[2 * u]);
            acc[2 * u + 1] = _mm512_fmadd_ps(x, _mm512_loadu_ps(w + u * NR + 16), acc[2 * u + 1]);
        }
    }
    for (; k < kc; k++, w += NR) {
        const __m512 x = _mm512_set1_ps(a[k]);
        acc[0] = _mm512_fmadd_ps(x, _mm512_loadu_ps(w), acc[0]);
        acc[1] = _mm512_fmadd_ps(x, _mm512_loadu_ps(w + 16), acc[1]);
    }
    const __m512 lo = _mm512_set1_ps(min), hi = _mm512_set1_ps(max);
    __m512 v0 = _mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[4], acc[6]));
    __m512 v1 = _mm512_add_ps(_mm512_add_ps(acc[1], acc[3]), _mm512_add_ps(acc[5], acc[7]));
    const __mmask16 m0 = nc >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nc) - 1u);
    const __mmask16 m1 = nc >= 32 ? (__mmask16)0xffff
                                  : nc <= 16 ? (__mmask16)0 : (__mmask16)((1u << (nc - 16)) - 1u);
    _mm512_mask_storeu_ps(c, m0, _mm512_min_ps(hi, _mm512_max_ps(lo, v0)));
    _mm512_mask_storeu_ps(c + 16, m1, _mm512_min_ps(hi, _mm512_max_ps(lo, v1)));
}

/* The row counts' bodies, each in two widths: a panel's last columns often
 * fit one vector (16 output channels, or 72 = 2 x 32 + 8), and the other
 * half of the multiply-adds would be on zero columns. */
#define ROWS_SWITCH(DIRECT, HALF, KS, A, AD, STRIDE)                                          \
    switch (mr) {                                                                           \
    case 1: body(1, DIRECT, HALF, nc, kc, KS, A, AD, STRIDE, w, c, c_stride, min, max); break; \
    case 2: body(2, DIRECT, HALF, nc, kc, KS, A, AD, STRIDE, w, c, c_stride, min, max); break; \
    case 3: body(3, DIRECT, HALF, nc, kc, KS, A, AD, STRIDE, w, c, c_stride, min, max); break; \
    case 4: body(4, DIRECT, HALF, nc, kc, KS, A, AD, STRIDE, w, c, c_stride, min, max); break; \
    case 5: body(5, DIRECT, HALF, nc, kc, KS, A, AD, STRIDE, w, c, c_stride, min, max); break; \
    case 6: body(6, DIRECT, HALF, nc, kc, KS, A, AD, STRIDE, w, c, c_stride, min, max); break; \
    case 7: body(7, DIRECT, HALF, nc, kc, KS, A, AD, STRIDE, w, c, c_stride, min, max); break; \
    default: body(8, DIRECT, HALF, nc, kc, KS, A, AD, STRIDE, w, c, c_stride, min, max); break; \
    }

void eko_f32_gemm_8x32_avx512(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                              const float *w, float *c, size_t c_stride, float min, float max) {
    if (mr == 1) {
        one_row(nc, kc, a, w, c, min, max);
    } else if (nc <= 16) {
        ROWS_SWITCH(true, true, 1, NULL, a, a_stride)
    } else {
        ROWS_SWITCH(true, false, 1, NULL, a, a_stride)
    }
}

void eko_f32_igemm_8x32_avx512(size_t mr, size_t nc, size_t kc, size_t ks,
                               const float *const *a, size_t a_off, const float *w, float *c,
                               size_t c_stride, float min, float max) {
    if (nc <= 16) {
        ROWS_SWITCH(false, true, ks, a, NULL, a_off)
    } else {
        ROWS_SWITCH(false, false, ks, a, NULL, a_off)
    }
}

#else
typedef int eko_no_avx512_gemm; /* this build has no AVX-512 kernels */
#endif
