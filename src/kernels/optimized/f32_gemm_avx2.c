/*
 * f32 GEMM micro-kernel, AVX2 + FMA: up to 6 rows x 16 columns per call.
 * Registers: 6 x 2 accumulators + 2 weight vectors + 1 broadcast = 15 of 16.
 * One body per row count (1..6), so fewer rows never pay for six, for the
 * direct form (rows a_stride apart) and the indirect one (gemm.h); and an
 * 8-row x 8-column form for convolutions with narrow groups (conv.h).
 */
#include "gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#define NR 16

EKO_BODY void body(const size_t MR, const bool DIRECT,
                   size_t nc, size_t kc, size_t ks,
                   const float *const *a, const float *ad,
                   size_t a_stride, const float *w, float *c,
                   size_t c_stride, float min, float max) {
    __m256 acc[6][2];
    EKO_UNROLL
    for (size_t i = 0; i < MR; i++) {
        acc[i][0] = _mm256_loadu_ps(w);
        acc[i][1] = _mm256_loadu_ps(w + 8);
    }
    w += NR;
    /* the direct form is one tap of rows a_stride apart (DIRECT, a constant:
     * its tap loop and pointer table fold away, which small k notices) */
    for (size_t t = 0; t < (DIRECT ? 1 : ks); t++) {
        const float *rows[6];
        EKO_UNROLL
        for (size_t i = 0; i < MR; i++)
            rows[i] = DIRECT ? ad + i * a_stride : a[t * MR + i] + a_stride;
        for (size_t k = 0; k < kc; k++, w += NR) {
            const __m256 b0 = _mm256_loadu_ps(w), b1 = _mm256_loadu_ps(w + 8);
            EKO_UNROLL
            for (size_t i = 0; i < MR; i++) {
                const __m256 x = _mm256_broadcast_ss(rows[i] + k);
                acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
            }
        }
    }
    const __m256 lo = _mm256_set1_ps(min), hi = _mm256_set1_ps(max);
    EKO_UNROLL
    for (size_t i = 0; i < MR; i++) {
        __m256 v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, acc[i][0]));
        __m256 v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, acc[i][1]));
        float *out = c + i * c_stride;
        if (nc == NR) {
            _mm256_storeu_ps(out, v0);
            _mm256_storeu_ps(out + 8, v1);
        } else {
            float tmp[NR];
            _mm256_storeu_ps(tmp, v0);
            _mm256_storeu_ps(tmp + 8, v1);
            for (size_t j = 0; j < nc; j++) out[j] = tmp[j];
        }
    }
}

/* One row (decode): four k steps at once on eight accumulators, so that
 * enough loads of the streamed panel are in flight. */
static void one_row(size_t nc, size_t kc, const float *a, const float *w, float *c, float min,
                    float max) {
    __m256 acc[8];
    acc[0] = _mm256_loadu_ps(w);
    acc[1] = _mm256_loadu_ps(w + 8);
    for (int i = 2; i < 8; i++) acc[i] = _mm256_setzero_ps();
    w += NR;
    size_t k = 0;
    for (; k + 4 <= kc; k += 4, w += 4 * NR) {
        EKO_UNROLL
        for (int u = 0; u < 4; u++) {
            const __m256 x = _mm256_broadcast_ss(a + k + u);
            acc[2 * u] = _mm256_fmadd_ps(x, _mm256_loadu_ps(w + u * NR), acc[2 * u]);
            acc[2 * u + 1] = _mm256_fmadd_ps(x, _mm256_loadu_ps(w + u * NR + 8), acc[2 * u + 1]);
        }
    }
    for (; k < kc; k++, w += NR) {
        const __m256 x = _mm256_broadcast_ss(a + k);
        acc[0] = _mm256_fmadd_ps(x, _mm256_loadu_ps(w), acc[0]);
        acc[1] = _mm256_fmadd_ps(x, _mm256_loadu_ps(w + 8), acc[1]);
    }
    const __m256 lo = _mm256_set1_ps(min), hi = _mm256_set1_ps(max);
    __m256 v0 = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[4], acc[6]));
    __m256 v1 = _mm256_add_ps(_mm256_add_ps(acc[1], acc[3]), _mm256_add_ps(acc[5], acc[7]));
    v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, v0));
    v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, v1));
    if (nc == NR) {
        _mm256_storeu_ps(c, v0);
        _mm256_storeu_ps(c + 8, v1);
    } else {
        float tmp[NR];
        _mm256_storeu_ps(tmp, v0);
        _mm256_storeu_ps(tmp + 8, v1);
        for (size_t j = 0; j < nc; j++) c[j] = tmp[j];
    }
}

void eko_f32_gemm_6x16_avx2(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                            const float *w, float *c, size_t c_stride, float min, float max) {
    switch (mr) {
    case 1: one_row(nc, kc, a, w, c, min, max); break;
    case 2: body(2, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 3: body(3, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 4: body(4, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 5: body(5, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    default: body(6, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    }
}

void eko_f32_igemm_6x16_avx2(size_t mr, size_t nc, size_t kc, size_t ks,
                             const float *const *a, size_t a_off, const float *w,
                             float *c, size_t c_stride, float min, float max) {
    switch (mr) {
    case 1: body(1, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 2: body(2, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 3: body(3, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 4: body(4, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 5: body(5, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    default: body(6, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    }
}

/* The narrow form: 8 columns, one vector a row, up to 8 rows (8 + 1 + 1 of
 * 16 registers). For convolutions whose groups have few output channels
 * (8 a group in RegNet, 4 to 8 in ResNeXt's early stages): a 16- or
 * 32-column panel would spend most of its multiply-adds on zero columns. */
EKO_BODY void narrow(const size_t MR, const bool DIRECT,
                     size_t nc, size_t kc, size_t ks,
                     const float *const *a, const float *ad,
                     size_t a_stride, const float *w, float *c,
                     size_t c_stride, float min, float max) {
    __m256 acc[8];
    EKO_UNROLL
    for (size_t i = 0; i < MR; i++) acc[i] = _mm256_loadu_ps(w);
    w += 8;
    for (size_t t = 0; t < (DIRECT ? 1 : ks); t++) {
        const float *rows[8];
        EKO_UNROLL
        for (size_t i = 0; i < MR; i++)
            rows[i] = DIRECT ? ad + i * a_stride : a[t * MR + i] + a_stride;
        for (size_t k = 0; k < kc; k++, w += 8) {
            const __m256 b = _mm256_loadu_ps(w);
            EKO_UNROLL
            for (size_t i = 0; i < MR; i++)
                acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(rows[i] + k), b, acc[i]);
        }
    }
    const __m256 lo = _mm256_set1_ps(min), hi = _mm256_set1_ps(max);
    EKO_UNROLL
    for (size_t i = 0; i < MR; i++) {
        const __m256 v = _mm256_min_ps(hi, _mm256_max_ps(lo, acc[i]));
        float *out = c + i * c_stride;
        if (nc == 8) {
            _mm256_storeu_ps(out, v);
        } else {
            float tmp[8];
            _mm256_storeu_ps(tmp, v);
            for (size_t j = 0; j < nc; j++) out[j] = tmp[j];
        }
    }
}

void eko_f32_gemm_8x8_avx2(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                           const float *w, float *c, size_t c_stride, float min, float max) {
    switch (mr) {
    case 1: narrow(1, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 2: narrow(2, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 3: narrow(3, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 4: narrow(4, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 5: narrow(5, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 6: narrow(6, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    case 7: narrow(7, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    default: narrow(8, true, nc, kc, 1, NULL, a, a_stride, w, c, c_stride, min, max); break;
    }
}

void eko_f32_igemm_8x8_avx2(size_t mr, size_t nc, size_t kc, size_t ks,
                            const float *const *a, size_t a_off, const float *w,
                            float *c, size_t c_stride, float min, float max) {
    switch (mr) {
    case 1: narrow(1, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 2: narrow(2, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 3: narrow(3, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 4: narrow(4, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 5: narrow(5, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 6: narrow(6, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    case 7: narrow(7, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    default: narrow(8, false, nc, kc, ks, a, NULL, a_off, w, c, c_stride, min, max); break;
    }
}

#else
typedef int eko_no_avx2_gemm; /* this build has no AVX2 kernels */
#endif
