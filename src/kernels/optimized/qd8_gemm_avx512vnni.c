/*
 * qd8_gemm.h micro-kernel on AVX-512 with VNNI: a panel's 16 columns in one
 * vector of 16 int32. vpdpbusd adds four products of unsigned activation
 * bytes and signed weight bytes into each int32 lane, so the activations are
 * stored offset by 128 (x_xor 0x80, by the row quantizer below) and each
 * four of them is one broadcast load; the packed ksums take the offset back
 * out with the zero point. Also the AVX-512 row quantizer.
 */
#include "qd8_gemm.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#include <math.h>
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

/* the activations come offset (x_xor 0x80): a broadcast straight from memory */
static inline qd8_xv qd8_x_load(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

static inline qd8_acc qd8_dot(qd8_acc acc, qd8_xv x, qd8_w w) {
    return _mm512_dpbusd_epi32(acc, x, w);
}

static inline qd8_acc qd8_acc_add(qd8_acc a, qd8_acc b) { return _mm512_add_epi32(a, b); }

static inline qd8_acc qd8_acc_zc(qd8_acc a, const uint8_t *isums, int32_t zc) {
    const __m512i s = _mm512_loadu_si512((const void *)isums);
    return _mm512_sub_epi32(a, _mm512_mullo_epi32(s, _mm512_set1_epi32(zc)));
}

static inline qd8_f qd8_scales_load(const uint8_t *p, bool bf16) {
    if (!bf16) return _mm512_loadu_ps((const void *)p);
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
}

static inline qd8_f qd8_f_slice(qd8_f f, qd8_acc acc, qd8_f sc) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), sc, f);
}

static inline void qd8_store(float *c, size_t nc, qd8_f f, float zc, float sx, const uint8_t *tail,
                             float min, float max) {
    f = _mm512_fnmadd_ps(_mm512_set1_ps(zc), _mm512_loadu_ps((const void *)tail), f);
    __m512 v = _mm512_fmadd_ps(f, _mm512_set1_ps(sx), _mm512_loadu_ps((const void *)(tail + 64)));
    v = _mm512_min_ps(_mm512_set1_ps(max), _mm512_max_ps(_mm512_set1_ps(min), v));
    _mm512_mask_storeu_ps(c, (__mmask16)((1u << nc) - 1u), v);
}

/* int8 results: the same float steps, rounded to nearest even (the values
 * lie in [min, max] within int8, so the narrowing never saturates). */
static inline void qd8_store_q(int8_t *q, size_t nc, qd8_f f, float zc, float sx,
                               const uint8_t *tail, float min, float max) {
    f = _mm512_fnmadd_ps(_mm512_set1_ps(zc), _mm512_loadu_ps((const void *)tail), f);
    __m512 v = _mm512_fmadd_ps(f, _mm512_set1_ps(sx), _mm512_loadu_ps((const void *)(tail + 64)));
    v = _mm512_min_ps(_mm512_set1_ps(max), _mm512_max_ps(_mm512_set1_ps(min), v));
    const __m512i i = _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_mask_storeu_epi8(q, (__mmask16)((1u << nc) - 1u), _mm512_cvtsepi32_epi8(i));
}
#define QD8_STORE_Q

#include "qd8_gemm_body.h"

/* The same kernel on plain int8 activations (a statically quantized
 * tensor): each four offset as they are loaded. */
static inline qd8_xv qd8_x_load_s8(const int8_t *p) {
    return _mm512_xor_si512(qd8_x_load(p), _mm512_set1_epi8((char)0x80));
}
#undef QD8_FN
#define QD8_FN eko_qd8_gemm_avx512vnni_s8
#define QD8_X_LOAD qd8_x_load_s8
#define QD8_X_LOAD4 qd8_x_load_s8
#include "qd8_gemm_body.h"

/* The row quantizer's passes (eko_qd8_range_scalar, eko_qd8_values_scalar),
 * 16 lanes at a time; the same results (the same multiply, min / max and
 * round-to-nearest-even). */
void eko_qd8_range_avx512(size_t k, const float *x, float *lo_out, float *hi_out, bool *nan) {
    const __m512 inf = _mm512_set1_ps(INFINITY);
    __m512 lo = inf, hi = _mm512_set1_ps(-INFINITY);
    __mmask16 nans = 0;
    for (size_t i = 0; i < k; i += 16) {
        const __mmask16 m = k - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (k - i)) - 1u);
        const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        const __mmask16 finite = _mm512_mask_cmp_ps_mask(m, _mm512_abs_ps(v), inf, _CMP_LT_OQ);
        nans |= _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
        lo = _mm512_mask_min_ps(lo, finite, lo, v);
        hi = _mm512_mask_max_ps(hi, finite, hi, v);
    }
    const float l = _mm512_reduce_min_ps(lo), h = _mm512_reduce_max_ps(hi);
    *lo_out = l < *lo_out ? l : *lo_out;
    *hi_out = h > *hi_out ? h : *hi_out;
    if (nans) *nan = true;
}

void eko_qd8_values_avx512(size_t k, const float *x, int8_t *q, eko_qd8_row r, uint8_t x_xor) {
    const __m512 mult = _mm512_set1_ps(1.0f / r.scale);
    const __m512 qlo = _mm512_set1_ps((float)(-128 - r.zero_point));
    const __m512 qhi = _mm512_set1_ps((float)(127 - r.zero_point));
    const __m512i zp = _mm512_set1_epi32(r.zero_point), flip = _mm512_set1_epi32(x_xor);
    for (size_t i = 0; i < k; i += 16) {
        const __mmask16 m = k - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (k - i)) - 1u);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), mult);
        v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v); /* NaN: 0 */
        v = _mm512_min_ps(_mm512_max_ps(v, qlo), qhi);
        const __m512i t = _mm512_xor_si512(_mm512_add_epi32(_mm512_cvtps_epi32(v), zp), flip);
        _mm_mask_storeu_epi8(q + i, m, _mm512_cvtepi32_epi8(t));
    }
}
#else
typedef int eko_no_avx512vnni_qd8_gemm; /* this build has no AVX-512 VNNI kernels */
#endif
