/*
 * qd8_gemm.h micro-kernel on AVX2: a panel's 16 columns in two vectors of
 * 8 int32. vpmaddubsw multiplies unsigned by signed bytes, so each product
 * x w is taken as |x| * (w with the sign of x) ("sign trick"): |x| <= 128
 * and |w| <= 127, so the pairs it adds stay below 2^15; vpmaddwd with ones
 * then adds the pairs into int32. Int4 weights (|w| <= 8) need no trick:
 * activations go in offset by 128 as unsigned bytes (pairs up to
 * 2 x 255 x 8), and the packed weight sums take the offset back out.
 */
#include "qd8_gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
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
#else
typedef int eko_no_avx2_qd8_gemm; /* this build has no AVX2 kernels */
#endif
