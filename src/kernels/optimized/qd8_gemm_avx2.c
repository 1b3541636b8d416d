/*
 * qd8_gemm.h micro-kernel on AVX2 without VNNI: a panel's 16 columns in two
 * vectors of 8 int32. vpmaddubsw multiplies unsigned by signed bytes and adds
 * each two neighbouring products into an int16 lane, saturating; vpmaddwd
 * with ones adds two int16 lanes into an int32. The activations come offset
 * by 128 as unsigned bytes (x_xor 0x80, as for the vpdpbusd kernels), so a
 * broadcast from memory is ready for vpmaddubsw; the packed sums of the
 * weights take the offset back out with the zero point.
 *
 * Int4 weights (w in [-8, 7]) times x + 128 (in [0, 255]) give products in
 * [-2040, 1785], so a pair of them lies in [-4080, 3570] and vpmaddubsw
 * never saturates. A block adds two pairs into each int16 lane (its low and
 * its high nibbles), [-8160, 7140]; four blocks, [-32640, 28560], still fit
 * int16, where vpaddw sums them exactly. So the int4 products stay in int16
 * for four blocks (32 of depth) and cost one vpmaddubsw and one vpaddw a
 * vector; every four blocks one vpmaddwd and one vpaddd a vector widen them
 * (QD8_NARROW4 in qd8_gemm_body.h), where the plain way spends a vpmaddwd
 * and a vpaddd on every vpmaddubsw.
 *
 * Int8 weights (w in [-127, 127]) times x + 128 would reach 2 x 255 x 127 =
 * 64770 in a pair, past int16. They take the sign trick on the activations
 * as signed bytes (x = (x + 128) ^ 0x80): each product x w as |x| times (w
 * with the sign of x), |x| <= 128 and |w| <= 127, so a pair stays within
 * 2 x 128 x 127 = 32512 (no room to sum a second pair in int16: vpmaddwd
 * with ones widens every one). That is seven multiply-port instructions per
 * 64 products and a row; the other exact ways (int16 products with
 * vpmovsxbw and vpmaddwd, or int8 weights split into two nibbles that sum
 * in int16 as int4 ones do) count as many or more in all.
 *
 * Tiles of four rows share each weight load and unpacking: with the sums of
 * a tile (two int16 and two int32 vectors a row for int4, two int32 for
 * int8) and the weights, they fill the 16 vector registers (an int4 tile
 * keeps a few of its sums on the stack; 3, 5 and 6 rows measured no faster).
 */
#include "qd8_gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <math.h>

#include "qd8_avx2.h"

#define QD8_FN eko_qd8_gemm_avx2
#define QD8_MR 4
#define QD8_X_OFFSET 0    /* int8: signed products (the sign trick) */
#define QD8_X_OFFSET4 128 /* int4: x + 128 */
#define QD8_NARROW4 4     /* int4 blocks an int16 sum holds (above) */

static inline __m256i x_bcast(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

static inline __m256i x_flip(__m256i v) {
    return _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80));
}

typedef struct qd8_xv {
    __m256i abs, sign; /* |x| and x, four signed bytes repeated */
} qd8_xv;

static inline qd8_xv x_signed(__m256i x) { return (qd8_xv){_mm256_abs_epi8(x), x}; }

/* four offset activations as signed bytes */
static inline qd8_xv qd8_x_load(const int8_t *p) { return x_signed(x_flip(x_bcast(p))); }

static inline __m256i dot8(__m256i acc, qd8_xv x, __m256i w) {
    const __m256i pairs = _mm256_maddubs_epi16(x.abs, _mm256_sign_epi8(w, x.sign));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

static inline qd8_acc qd8_dot(qd8_acc acc, qd8_xv x, qd8_w w) {
    return (qd8_acc){dot8(acc.a, x, w.a), dot8(acc.b, x, w.b)};
}

typedef __m256i qd8_xv4; /* x + 128 as unsigned bytes, four repeated */

/* the offset activations: a broadcast straight from memory */
static inline qd8_xv4 qd8_x_load4(const int8_t *p) { return x_bcast(p); }

typedef qd8_acc qd8_nacc; /* 16 int16 lanes a vector: two a column */

static inline qd8_nacc qd8_nacc_zero(void) { return qd8_acc_zero(); }

static inline qd8_nacc qd8_ndot4(qd8_nacc s, qd8_xv4 x, qd8_w w) {
    return (qd8_nacc){_mm256_add_epi16(s.a, _mm256_maddubs_epi16(x, w.a)),
                      _mm256_add_epi16(s.b, _mm256_maddubs_epi16(x, w.b))};
}

static inline qd8_acc qd8_nacc_widen(qd8_acc acc, qd8_nacc s) {
    const __m256i ones = _mm256_set1_epi16(1);
    return (qd8_acc){_mm256_add_epi32(acc.a, _mm256_madd_epi16(s.a, ones)),
                     _mm256_add_epi32(acc.b, _mm256_madd_epi16(s.b, ones))};
}

#include "qd8_gemm_body.h"

/* The same kernel on plain int8 activations (a statically quantized
 * tensor): signed as they are for int8 weights, offset as they are loaded
 * for int4 ones. */
static inline qd8_xv qd8_x_load_s8(const int8_t *p) { return x_signed(x_bcast(p)); }
static inline qd8_xv4 qd8_x_load4_s8(const int8_t *p) { return x_flip(x_bcast(p)); }
#undef QD8_FN
#define QD8_FN eko_qd8_gemm_avx2_s8
#define QD8_X_LOAD qd8_x_load_s8
#define QD8_X_LOAD4 qd8_x_load4_s8
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
