/*
 * qd8_gemm.h micro-kernel on AVX-512 with VNNI: a panel's 16 columns in one
 * vector of 16 int32. vpdpbusd adds four products of unsigned activation
 * bytes and signed weight bytes into each int32 lane, so the activations go
 * in offset by 128 (x ^ 0x80); the packed weight sums take the offset back
 * out with the zero point.
 */
#include "qd8_gemm.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512VNNI__)
#include <immintrin.h>
#include <string.h>

#define QD8_FN eko_qd8_gemm_avx512vnni
#define QD8_X_OFFSET 128
/* 8 rows: 8 int32 + 8 float accumulators + weights and activations, of 32 */
#define QD8_MR 8

typedef __m512i qd8_acc;
typedef __m512i qd8_w;
typedef __m512i qd8_xv;
typedef __m512 qd8_f;

static inline qd8_acc qd8_acc_zero(void) { return _mm512_setzero_si512(); }
static inline qd8_f qd8_f_zero(void) { return _mm512_setzero_ps(); }
static inline qd8_w qd8_w_load(const uint8_t *p) { return _mm512_loadu_si512((const void *)p); }

static inline void qd8_w_unpack4(const uint8_t *p, qd8_w *lo, qd8_w *hi) {
    const __m512i mask = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
    const __m512i v = _mm512_loadu_si512((const void *)p);
    *lo = _mm512_sub_epi8(_mm512_and_si512(v, mask), eight);
    *hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), mask), eight);
}

static inline qd8_xv qd8_x_load(const int8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32((int)(v ^ 0x80808080u));
}

static inline qd8_acc qd8_dot(qd8_acc acc, qd8_xv x, qd8_w w) {
    return _mm512_dpbusd_epi32(acc, x, w);
}

static inline qd8_f qd8_f_slice(qd8_f f, qd8_acc acc, const uint8_t *sums, const uint8_t *scales,
                                int32_t zc) {
    const __m512i s = _mm512_loadu_si512((const void *)sums);
    const __m512i d = _mm512_sub_epi32(acc, _mm512_mullo_epi32(s, _mm512_set1_epi32(zc)));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_loadu_ps((const void *)scales), f);
}

static inline void qd8_store(float *c, size_t nc, qd8_f f, float sx, const uint8_t *bias,
                             float min, float max) {
    __m512 v = _mm512_fmadd_ps(f, _mm512_set1_ps(sx), _mm512_loadu_ps((const void *)bias));
    v = _mm512_min_ps(_mm512_set1_ps(max), _mm512_max_ps(_mm512_set1_ps(min), v));
    _mm512_mask_storeu_ps(c, (__mmask16)((1u << nc) - 1u), v);
}

#include "qd8_gemm_body.h"
#else
typedef int eko_no_avx512vnni_qd8_gemm; /* this build has no AVX-512 VNNI kernels */
#endif
