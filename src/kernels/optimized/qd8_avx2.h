/*
 * qd8_avx2.h — the primitives of qd8_gemm_body.h that the AVX2 kernels share
 * (qd8_gemm_avx2.c: the sign trick; qd8_gemm_avx2vnni.c: AVX-VNNI): a
 * panel's 16 columns in two vectors of 8 int32, weight blocks in two
 * vectors of 32 bytes, the per-slice scaling and the store. Each kernel
 * adds its activations (qd8_xv, qd8_x_load) and its product (qd8_dot).
 */
#ifndef EMBER_KERNELS_OPTIMIZED_QD8_AVX2_H
#define EMBER_KERNELS_OPTIMIZED_QD8_AVX2_H

#include <immintrin.h>
#include <string.h>

#include "qd8_gemm.h"

typedef struct qd8_acc {
    __m256i a, b; /* columns 0..7, 8..15 */
} qd8_acc;
typedef struct qd8_w {
    __m256i a, b;
} qd8_w;
typedef struct qd8_f {
    __m256 a, b;
} qd8_f;

static inline qd8_acc qd8_acc_zero(void) {
    return (qd8_acc){_mm256_setzero_si256(), _mm256_setzero_si256()};
}

static inline qd8_f qd8_f_zero(void) { return (qd8_f){_mm256_setzero_ps(), _mm256_setzero_ps()}; }

static inline qd8_w qd8_w_load(const uint8_t *p) {
    return (qd8_w){_mm256_loadu_si256((const __m256i *)(const void *)p),
                   _mm256_loadu_si256((const __m256i *)(const void *)(p + 32))};
}

static inline void qd8_w_unpack4(const uint8_t *p, qd8_w *lo, qd8_w *hi) {
    const __m256i mask = _mm256_set1_epi8(0x0f), eight = _mm256_set1_epi8(8);
    const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)p);
    const __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
    lo->a = _mm256_sub_epi8(_mm256_and_si256(a, mask), eight);
    lo->b = _mm256_sub_epi8(_mm256_and_si256(b, mask), eight);
    hi->a = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(a, 4), mask), eight);
    hi->b = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(b, 4), mask), eight);
}

static inline qd8_acc qd8_acc_add(qd8_acc x, qd8_acc y) {
    return (qd8_acc){_mm256_add_epi32(x.a, y.a), _mm256_add_epi32(x.b, y.b)};
}

static inline qd8_acc qd8_acc_zc(qd8_acc a, const uint8_t *isums, int32_t zc) {
    const __m256i z = _mm256_set1_epi32(zc);
    const __m256i s0 = _mm256_loadu_si256((const __m256i *)(const void *)isums);
    const __m256i s1 = _mm256_loadu_si256((const __m256i *)(const void *)(isums + 32));
    return (qd8_acc){_mm256_sub_epi32(a.a, _mm256_mullo_epi32(s0, z)),
                     _mm256_sub_epi32(a.b, _mm256_mullo_epi32(s1, z))};
}

static inline __m256 bf16x8(const uint8_t *p) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
}

static inline qd8_f qd8_scales_load(const uint8_t *p, bool bf16) {
    if (bf16) return (qd8_f){bf16x8(p), bf16x8(p + 16)};
    return (qd8_f){_mm256_loadu_ps((const float *)(const void *)p),
                   _mm256_loadu_ps((const float *)(const void *)(p + 32))};
}

static inline qd8_f qd8_f_slice(qd8_f f, qd8_acc acc, qd8_f sc) {
    return (qd8_f){_mm256_fmadd_ps(_mm256_cvtepi32_ps(acc.a), sc.a, f.a),
                   _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc.b), sc.b, f.b)};
}

static inline __m256 out8(__m256 f, __m256 zc, __m256 sx, const uint8_t *tail, __m256 lo,
                          __m256 hi) {
    f = _mm256_fnmadd_ps(zc, _mm256_loadu_ps((const float *)(const void *)tail), f);
    const __m256 v = _mm256_fmadd_ps(f, sx, _mm256_loadu_ps((const float *)(const void *)(tail + 64)));
    return _mm256_min_ps(hi, _mm256_max_ps(lo, v)); /* NaN passes: the second operand */
}

static inline void qd8_store(float *c, size_t nc, qd8_f f, float zc, float sx, const uint8_t *tail,
                             float min, float max) {
    const __m256 z = _mm256_set1_ps(zc), s = _mm256_set1_ps(sx);
    const __m256 lo = _mm256_set1_ps(min), hi = _mm256_set1_ps(max);
    const __m256 a = out8(f.a, z, s, tail, lo, hi), b = out8(f.b, z, s, tail + 32, lo, hi);
    if (nc == EKO_QD8_NR) {
        _mm256_storeu_ps(c, a);
        _mm256_storeu_ps(c + 8, b);
        return;
    }
    float tmp[EKO_QD8_NR];
    _mm256_storeu_ps(tmp, a);
    _mm256_storeu_ps(tmp + 8, b);
    memcpy(c, tmp, nc * sizeof(float));
}

#endif /* EMBER_KERNELS_OPTIMIZED_QD8_AVX2_H */
