/*
 * qd8_gemm.h micro-kernel on AVX2: a panel's 16 columns in two vectors of
 * 8 int32. vpmaddubsw multiplies unsigned by signed bytes, so each product
 * x w is taken as |x| * (w with the sign of x) ("sign trick"): |x| <= 128
 * and |w| <= 127, so the pairs it adds stay below 2^15; vpmaddwd with ones
 * then adds the pairs into int32. Int4 weights (|w| <= 8) need no trick:
 * activations go in offset by 128 as unsigned bytes (pairs up to
 * 2 x 255 x 8), and the packed ksums take the offset back out.
 */
#include "qd8_gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <math.h>

#include "qd8_avx2.h"

#define QD8_FN eko_qd8_gemm_avx2
#define QD8_X_OFFSET 0

typedef struct qd8_xv {
    __m256i abs, sign; /* |x| and x, four bytes repeated */
} qd8_xv;

static inline qd8_xv qd8_x_load(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    const __m256i x = _mm256_set1_epi32(v);
    return (qd8_xv){_mm256_abs_epi8(x), x};
}

static inline __m256i dot8(__m256i acc, qd8_xv x, __m256i w) {
    const __m256i pairs = _mm256_maddubs_epi16(x.abs, _mm256_sign_epi8(w, x.sign));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

static inline qd8_acc qd8_dot(qd8_acc acc, qd8_xv x, qd8_w w) {
    return (qd8_acc){dot8(acc.a, x, w.a), dot8(acc.b, x, w.b)};
}

#define QD8_X_OFFSET4 128
typedef __m256i qd8_xv4; /* x + 128 as unsigned bytes, four repeated */

static inline qd8_xv4 qd8_x_load4(const int8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32((int)(v ^ 0x80808080u));
}

static inline __m256i dot8_4(__m256i acc, __m256i x, __m256i w) {
    const __m256i pairs = _mm256_maddubs_epi16(x, w);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

static inline qd8_acc qd8_dot4(qd8_acc acc, qd8_xv4 x, qd8_w w) {
    return (qd8_acc){dot8_4(acc.a, x, w.a), dot8_4(acc.b, x, w.b)};
}

#include "qd8_gemm_body.h"

static inline __m256 hmin8(__m256 v) {
    v = _mm256_min_ps(v, _mm256_permute2f128_ps(v, v, 1));
    v = _mm256_min_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm256_min_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
}

static inline __m256 hmax8(__m256 v) {
    v = _mm256_max_ps(v, _mm256_permute2f128_ps(v, v, 1));
    v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm256_max_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
}

/* The row quantizer's passes (eko_qd8_range_scalar, eko_qd8_values_scalar),
 * 8 lanes at a time, the tail in C; the same results (the same multiply,
 * min / max and round-to-nearest-even). Also those of the AVX-VNNI kernels. */
void eko_qd8_range_avx2(size_t k, const float *x, float *lo_out, float *hi_out, bool *nan) {
    const __m256 inf = _mm256_set1_ps(INFINITY);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 lo = inf, hi = _mm256_set1_ps(-INFINITY), nans = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= k; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 finite = _mm256_cmp_ps(_mm256_andnot_ps(sign, v), inf, _CMP_LT_OQ);
        nans = _mm256_or_ps(nans, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        lo = _mm256_blendv_ps(lo, _mm256_min_ps(lo, v), finite);
        hi = _mm256_blendv_ps(hi, _mm256_max_ps(hi, v), finite);
    }
    const float l = _mm256_cvtss_f32(hmin8(lo)), h = _mm256_cvtss_f32(hmax8(hi));
    *lo_out = l < *lo_out ? l : *lo_out;
    *hi_out = h > *hi_out ? h : *hi_out;
    if (_mm256_movemask_ps(nans) != 0) *nan = true;
    eko_qd8_range_scalar(k - i, x + i, lo_out, hi_out, nan);
}

void eko_qd8_values_avx2(size_t k, const float *x, int8_t *q, eko_qd8_row r, uint8_t x_xor) {
    const __m256 mult = _mm256_set1_ps(1.0f / r.scale);
    const __m256 qlo = _mm256_set1_ps((float)(-128 - r.zero_point));
    const __m256 qhi = _mm256_set1_ps((float)(127 - r.zero_point));
    const __m256i zp = _mm256_set1_epi32(r.zero_point), flip = _mm256_set1_epi32(x_xor);
    size_t i = 0;
    for (; i + 8 <= k; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), mult);
        v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); /* NaN: 0 */
        v = _mm256_min_ps(_mm256_max_ps(v, qlo), qhi);
        const __m256i t = _mm256_xor_si256(_mm256_add_epi32(_mm256_cvtps_epi32(v), zp), flip);
        /* int32 in [0, 255] or [-128, 127]: their low bytes, in order */
        const __m256i bytes = _mm256_shuffle_epi8(
            t, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4,
                                8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
        const int32_t a = _mm256_cvtsi256_si32(bytes);
        const int32_t b = _mm_cvtsi128_si32(_mm256_extracti128_si256(bytes, 1));
        memcpy(q + i, &a, 4);
        memcpy(q + i + 4, &b, 4);
    }
    eko_qd8_values_scalar(k - i, x + i, q + i, r, x_xor);
}
#else
typedef int eko_no_avx2_qd8_gemm; /* this build has no AVX2 kernels */
#endif
