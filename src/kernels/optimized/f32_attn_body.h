/*
 * f32_attn_body.h — the attention micro-kernels (attention.h), written once
 * on the SIMD layer. A file f32_attn_<isa>.c includes simd_<isa>.h and
 * vmath_simd.h, then this, then defines its configuration from
 * attn_scores, attn_softmax and attn_weighted_sum.
 *
 * V below is EKO_VLEN floats; a head of d floats is d / V full vectors and
 * a partial one (lanes past d read as 0, never written).
 */
#ifndef EKO_SIMD_ISA
#error "include a simd_<isa>.h and vmath_simd.h before f32_attn_body.h"
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "gemm.h" /* EKO_UNROLL */

/* The chunk kernels below are instantiated for each constant count of rows
 * and vectors, and must be inline for those counts to become registers. In
 * sanitizer builds (EMBER_SANITIZED) they stay calls: instrumented and
 * forced inline, this file took clang minutes to compile. */
#if defined(EMBER_SANITIZED)
#define ATTN_INLINE static inline
#else
#define ATTN_INLINE static inline __attribute__((always_inline))
#endif

#define V EKO_VLEN

#if EKO_VLEN == 1
/*
 * Portable C: one key at a time, eight partial sums of the dot product in
 * an array, which compilers turn into the baseline's vector registers (a
 * vector of one float would leave them unused).
 */
static void attn_scores(const float *q, const float *k, size_t ks, size_t n, size_t d, float scale,
                        float *s) {
    for (size_t j = 0; j < n; j++) {
        const float *kj = k + j * ks;
        float part[8] = {0};
        size_t i = 0;
        for (; i + 8 <= d; i += 8)
            for (size_t l = 0; l < 8; l++) part[l] += q[i + l] * kj[i + l];
        float sum = 0.0f;
        for (; i < d; i++) sum += q[i] * kj[i];
        for (size_t l = 0; l < 8; l++) sum += part[l];
        s[j] = scale * sum;
    }
}
#else
#if EKO_VLEN == 8 && defined(__AVX__)
/* s[0..4) = scale * the sums of a0..a3: a tree of pairwise adds across the
 * four (three hadds) instead of four separate reductions. */
static inline void attn_hsum4(eko_v a0, eko_v a1, eko_v a2, eko_v a3, float scale, float *s) {
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    const __m128 sum = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    _mm_storeu_ps(s, _mm_mul_ps(sum, _mm_set1_ps(scale)));
}
#else
static inline void attn_hsum4(eko_v a0, eko_v a1, eko_v a2, eko_v a3, float scale, float *s) {
    s[0] = scale * eko_v_hsum(a0);
    s[1] = scale * eko_v_hsum(a1);
    s[2] = scale * eko_v_hsum(a2);
    s[3] = scale * eko_v_hsum(a3);
}
#endif

/*
 * Four keys per step: four independent sums, each key row read once, the
 * query vector loaded once for all four (from L1: a head is at most a few
 * hundred floats). One horizontal sum per key at the end.
 */
static void attn_scores(const float *q, const float *k, size_t ks, size_t n, size_t d, float scale,
                        float *s) {
    const size_t dv = d - d % V, tail = d % V;
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const float *k0 = k + j * ks, *k1 = k0 + ks, *k2 = k1 + ks, *k3 = k2 + ks;
        eko_v a0 = eko_v_set1(0.0f), a1 = a0, a2 = a0, a3 = a0;
        for (size_t i = 0; i < dv; i += V) {
            const eko_v x = eko_v_load(q + i);
            a0 = eko_v_fma(x, eko_v_load(k0 + i), a0);
            a1 = eko_v_fma(x, eko_v_load(k1 + i), a1);
            a2 = eko_v_fma(x, eko_v_load(k2 + i), a2);
            a3 = eko_v_fma(x, eko_v_load(k3 + i), a3);
        }
        if (tail != 0) {
            const eko_v x = eko_v_load_part(q + dv, tail, 0.0f);
            a0 = eko_v_fma(x, eko_v_load_part(k0 + dv, tail, 0.0f), a0);
            a1 = eko_v_fma(x, eko_v_load_part(k1 + dv, tail, 0.0f), a1);
            a2 = eko_v_fma(x, eko_v_load_part(k2 + dv, tail, 0.0f), a2);
            a3 = eko_v_fma(x, eko_v_load_part(k3 + dv, tail, 0.0f), a3);
        }
        attn_hsum4(a0, a1, a2, a3, scale, s + j);
    }
    for (; j < n; j++) {
        const float *kj = k + j * ks;
        eko_v a0 = eko_v_set1(0.0f);
        for (size_t i = 0; i < dv; i += V)
            a0 = eko_v_fma(eko_v_load(q + i), eko_v_load(kj + i), a0);
        if (tail != 0)
            a0 = eko_v_fma(eko_v_load_part(q + dv, tail, 0.0f),
                           eko_v_load_part(kj + dv, tail, 0.0f), a0);
        s[j] = scale * eko_v_hsum(a0);
    }
}
#endif

/* s += mask (when given) and the maximum of s, in one pass. NaN scores are
 * passed over (max keeps its first operand then), as the reference's
 * `if (s > max)`; their exp below makes the sum NaN all the same. */
static float attn_mask_max(float *s, const float *mask, size_t n) {
    const size_t nv = n - n % V;
    eko_v m = eko_v_set1(-INFINITY);
    if (mask != NULL) {
        for (size_t j = 0; j < nv; j += V) {
            const eko_v x = eko_v_add(eko_v_load(s + j), eko_v_load(mask + j));
            eko_v_store(s + j, x);
            m = eko_v_max(x, m);
        }
        for (size_t j = nv; j < n; j++) s[j] += mask[j];
    } else {
        for (size_t j = 0; j < nv; j += V) m = eko_v_max(eko_v_load(s + j), m);
    }
    float max = eko_v_hmax(m);
    for (size_t j = nv; j < n; j++)
        if (s[j] > max) max = s[j];
    return max;
}

static float attn_softmax(float *s, const float *mask, size_t n, float *running_max) {
    float max = attn_mask_max(s, mask, n);
    if (*running_max > max) max = *running_max;
    *running_max = max;
    if (max == -INFINITY) {
        /* every key hidden: weights 0, and the caller's 1 / 0 makes NaN */
        for (size_t j = 0; j < n; j++) s[j] = 0.0f;
        return 0.0f;
    }
    const size_t nv = n - n % V;
    const eko_v mv = eko_v_set1(max);
    eko_v sum = eko_v_set1(0.0f);
    for (size_t j = 0; j < nv; j += V) {
        const eko_v e = eko_v_exp(eko_v_sub(eko_v_load(s + j), mv));
        eko_v_store(s + j, e);
        sum = eko_v_add(sum, e);
    }
    if (nv < n) {
        const size_t rest = n - nv;
        /* lanes past n hold -inf: exp gives 0 there */
        const eko_v e = eko_v_exp(eko_v_sub(eko_v_load_part(s + nv, rest, -INFINITY), mv));
        eko_v_store_part(s + nv, e, rest);
        sum = eko_v_add(sum, e);
    }
    return eko_v_hsum(sum);
}

/*
 * Up to NV full vectors (and a partial one of `tail` lanes) of the output
 * row, their sums in registers across all n keys, started from acc (or 0);
 * values read row by row. NV is a constant in each call, so acc[] is
 * registers.
 */
ATTN_INLINE void attn_ws_chunk(const size_t NV, size_t tail,
                                                               const float *p, const float *v,
                                                               size_t vs, size_t n,
                                                               const float *acc0, float inv,
                                                               float *out) {
    eko_v acc[9];
    EKO_UNROLL
    for (size_t x = 0; x < NV; x++)
        acc[x] = acc0 != NULL ? eko_v_load(acc0 + x * V) : eko_v_set1(0.0f);
    acc[NV] = acc0 != NULL && tail != 0 ? eko_v_load_part(acc0 + NV * V, tail, 0.0f)
                                        : eko_v_set1(0.0f);
    for (size_t j = 0; j < n; j++) {
        const eko_v w = eko_v_set1(p[j]);
        const float *row = v + j * vs;
        EKO_UNROLL
        for (size_t x = 0; x < NV; x++) acc[x] = eko_v_fma(w, eko_v_load(row + x * V), acc[x]);
        if (tail != 0) acc[NV] = eko_v_fma(w, eko_v_load_part(row + NV * V, tail, 0.0f), acc[NV]);
    }
    const eko_v iv = eko_v_set1(inv);
    EKO_UNROLL
    for (size_t x = 0; x < NV; x++) eko_v_store(out + x * V, eko_v_mul(acc[x], iv));
    if (tail != 0) eko_v_store_part(out + NV * V, eko_v_mul(acc[NV], iv), tail);
}

/* Chunks of at most 8 vectors: 8 accumulators, the broadcast weight and one
 * loaded vector stay within 16 registers. */
static void attn_weighted_sum(const float *p, const float *v, size_t vs, size_t n, size_t d,
                              const float *acc, float inv, float *out) {
    for (size_t i0 = 0; i0 < d; i0 += 8 * V) {
        const size_t w = d - i0 < 8 * V ? d - i0 : 8 * V;
        const size_t nv = w / V, tail = w % V;
        const float *vc = v + i0, *ac = acc != NULL ? acc + i0 : NULL;
        float *oc = out + i0;
        switch (nv) {
        case 0: attn_ws_chunk(0, tail, p, vc, vs, n, ac, inv, oc); break;
        case 1: attn_ws_chunk(1, tail, p, vc, vs, n, ac, inv, oc); break;
        case 2: attn_ws_chunk(2, tail, p, vc, vs, n, ac, inv, oc); break;
        case 3: attn_ws_chunk(3, tail, p, vc, vs, n, ac, inv, oc); break;
        case 4: attn_ws_chunk(4, tail, p, vc, vs, n, ac, inv, oc); break;
        case 5: attn_ws_chunk(5, tail, p, vc, vs, n, ac, inv, oc); break;
        case 6: attn_ws_chunk(6, tail, p, vc, vs, n, ac, inv, oc); break;
        case 7: attn_ws_chunk(7, tail, p, vc, vs, n, ac, inv, oc); break;
        default: attn_ws_chunk(8, 0, p, vc, vs, n, ac, inv, oc); break;
        }
    }
}

/* dst[i] = src[i] - zero for i < d: an int8 row as exact floats. */
static void attn_int8_row(const int8_t *restrict src, size_t d, float zero, float *restrict dst) {
    const eko_v z = eko_v_set1(zero);
    size_t i = 0;
    for (; i + V <= d; i += V) eko_v_store(dst + i, eko_v_sub(eko_v_load_i8(src + i), z));
    for (; i < d; i++) dst[i] = (float)src[i] - zero;
}

/*
 * Int8 keys and values (attention.h): the rows converted in registers, each
 * once for up to four query rows.
 *
 * Scores: the query rows hold integers (an int8 row less its zero point),
 * so sum_i q[i] (k[i] - z) = sum_i q[i] k[i] - z sum_i q[i] is an integer
 * below 2^24 (|q| <= 255, |k - z| <= 255, d <= 256) whatever the order of
 * its additions, and exact in float: the scores are the same bits as from
 * rows converted first, however the sums are formed.
 */
/* Rows a cache line or two long, far apart in the cache: each asks for the
 * one ATTN_AHEAD rows on (past the last row too: a prefetch never faults,
 * and its address is an integer, not a pointer past the array). */
#define ATTN_AHEAD 16
static inline void attn_prefetch_row(const int8_t *base, size_t offset) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch((const void *)((uintptr_t)base + offset));
#else
    (void)base;
    (void)offset;
#endif
}

ATTN_INLINE void attn_si8_rows(
    const size_t NR, const float *q, size_t qs, const float *qsum, const float *qmul,
    const int8_t *k, size_t ks, const int8_t *kz, const float *ksc, size_t zs, size_t n,
    size_t d, float scale, float *s, size_t ss) {
    const size_t dv = d - d % V;
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        EKO_UNROLL
        for (size_t x = 0; x < 4; x++) attn_prefetch_row(k, (j + ATTN_AHEAD + x) * ks);
        attn_prefetch_row((const int8_t *)(const void *)ksc, (j + ATTN_AHEAD) * zs * sizeof(float));
        attn_prefetch_row(kz, (j + ATTN_AHEAD) * zs);
        eko_v acc[4][4];
        EKO_UNROLL
        for (size_t r = 0; r < NR; r++)
            EKO_UNROLL
            for (size_t x = 0; x < 4; x++) acc[r][x] = eko_v_set1(0.0f);
        for (size_t i = 0; i < dv; i += V) {
            eko_v kv[4];
            EKO_UNROLL
            for (size_t x = 0; x < 4; x++) kv[x] = eko_v_load_i8(k + (j + x) * ks + i);
            EKO_UNROLL
            for (size_t r = 0; r < NR; r++) {
                const eko_v qv = eko_v_load(q + r * qs + i);
                EKO_UNROLL
                for (size_t x = 0; x < 4; x++) acc[r][x] = eko_v_fma(qv, kv[x], acc[r][x]);
            }
        }
        EKO_UNROLL
        for (size_t r = 0; r < NR; r++) {
            float sum[4];
#if EKO_VLEN == 1
            for (size_t x = 0; x < 4; x++) sum[x] = acc[r][x];
#else
            attn_hsum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3], 1.0f, sum);
#endif
            for (size_t x = 0; x < 4; x++) {
                const int8_t *kj = k + (j + x) * ks;
                for (size_t i = dv; i < d; i++) sum[x] += q[r * qs + i] * (float)kj[i];
                const float dot = sum[x] - (float)kz[(j + x) * zs] * qsum[r];
                s[r * ss + j + x] = dot * (qmul[r] * ksc[(j + x) * zs]) * scale;
            }
        }
    }
    for (; j < n; j++) {
        const int8_t *kj = k + j * ks;
        EKO_UNROLL
        for (size_t r = 0; r < NR; r++) {
            eko_v a0 = eko_v_set1(0.0f);
            for (size_t i = 0; i < dv; i += V)
                a0 = eko_v_fma(eko_v_load(q + r * qs + i), eko_v_load_i8(kj + i), a0);
            float sum = eko_v_hsum(a0);
            for (size_t i = dv; i < d; i++) sum += q[r * qs + i] * (float)kj[i];
            const float dot = sum - (float)kz[j * zs] * qsum[r];
            s[r * ss + j] = dot * (qmul[r] * ksc[j * zs]) * scale;
        }
    }
}

static void attn_scores_i8(const float *q, size_t qs, size_t nr, const float *qmul,
                           const int8_t *k, size_t ks, const int8_t *kz, const float *ksc,
                           size_t zs, size_t n, size_t d, float scale, float *s, size_t ss) {
    float qsum[4]; /* integers: exact in any order */
    const size_t dv = d - d % V;
    for (size_t r = 0; r < nr; r++) {
        eko_v sv = eko_v_set1(0.0f);
        for (size_t i = 0; i < dv; i += V) sv = eko_v_add(sv, eko_v_load(q + r * qs + i));
        qsum[r] = eko_v_hsum(sv);
        for (size_t i = dv; i < d; i++) qsum[r] += q[r * qs + i];
    }
    switch (nr) {
    case 1: attn_si8_rows(1, q, qs, qsum, qmul, k, ks, kz, ksc, zs, n, d, scale, s, ss); break;
    case 2: attn_si8_rows(2, q, qs, qsum, qmul, k, ks, kz, ksc, zs, n, d, scale, s, ss); break;
    case 3: attn_si8_rows(3, q, qs, qsum, qmul, k, ks, kz, ksc, zs, n, d, scale, s, ss); break;
    default: attn_si8_rows(4, q, qs, qsum, qmul, k, ks, kz, ksc, zs, n, d, scale, s, ss); break;
    }
}

/*
 * Weighted sums of int8 values: each row's weights times the values'
 * scales, then per output element the products added in key order with the
 * same fused multiply-adds as attn_weighted_sum on the rows converted first
 * (a converted element, an int8 less its zero point, is exact): the same
 * bits. NV vectors of the output at a time for NR rows, in registers.
 */
#if EKO_VLEN == 8
#define ATTN_WI8_NV 2 /* 16 registers: 8 sums, 2 values, a weight */
#else
#define ATTN_WI8_NV 4
#endif

ATTN_INLINE void attn_wi8_chunk(
    const size_t NR, const size_t NV, size_t tail, const float *p, size_t ps, const int8_t *v,
    size_t vs, const int8_t *vz, size_t zs, size_t n, size_t i0, float *const *acc0,
    const float *inv, float *const *out) {
    eko_v acc[4][ATTN_WI8_NV + 1];
    EKO_UNROLL
    for (size_t r = 0; r < NR; r++) {
        EKO_UNROLL
        for (size_t x = 0; x < NV; x++)
            acc[r][x] = acc0[r] != NULL ? eko_v_load(acc0[r] + i0 + x * V) : eko_v_set1(0.0f);
        acc[r][NV] = acc0[r] != NULL && tail != 0
                         ? eko_v_load_part(acc0[r] + i0 + NV * V, tail, 0.0f)
                         : eko_v_set1(0.0f);
    }
    for (size_t j = 0; j < n; j++) {
        if (i0 == 0) attn_prefetch_row(v, (j + ATTN_AHEAD) * vs);
        const int8_t *row = v + j * vs + i0;
        const eko_v z = eko_v_set1((float)vz[j * zs]);
        eko_v x8[ATTN_WI8_NV + 1];
        EKO_UNROLL
        for (size_t x = 0; x < NV; x++) x8[x] = eko_v_sub(eko_v_load_i8(row + x * V), z);
        if (tail != 0) {
            float t[V];
            for (size_t i = 0; i < tail; i++) t[i] = (float)row[NV * V + i] - (float)vz[j * zs];
            x8[NV] = eko_v_load_part(t, tail, 0.0f);
        }
        EKO_UNROLL
        for (size_t r = 0; r < NR; r++) {
            const eko_v w = eko_v_set1(p[r * ps + j]);
            EKO_UNROLL
            for (size_t x = 0; x < NV; x++) acc[r][x] = eko_v_fma(w, x8[x], acc[r][x]);
            if (tail != 0) acc[r][NV] = eko_v_fma(w, x8[NV], acc[r][NV]);
        }
    }
    EKO_UNROLL
    for (size_t r = 0; r < NR; r++) {
        const eko_v iv = eko_v_set1(inv[r]);
        EKO_UNROLL
        for (size_t x = 0; x < NV; x++) eko_v_store(out[r] + i0 + x * V, eko_v_mul(acc[r][x], iv));
        if (tail != 0) eko_v_store_part(out[r] + i0 + NV * V, eko_v_mul(acc[r][NV], iv), tail);
    }
}

/* nv full vectors (fewer than ATTN_WI8_NV only in the last chunk, with a
 * tail) for NR rows */
#if ATTN_WI8_NV == 4
#define ATTN_WI8_NVS(NR)                                                                        \
    switch (nv) {                                                                               \
    case 0: attn_wi8_chunk(NR, 0, tail, p, ps, v, vs, vz, zs, n, i0, acc, inv, out); break;     \
    case 1: attn_wi8_chunk(NR, 1, tail, p, ps, v, vs, vz, zs, n, i0, acc, inv, out); break;     \
    case 2: attn_wi8_chunk(NR, 2, tail, p, ps, v, vs, vz, zs, n, i0, acc, inv, out); break;     \
    case 3: attn_wi8_chunk(NR, 3, tail, p, ps, v, vs, vz, zs, n, i0, acc, inv, out); break;     \
    default: attn_wi8_chunk(NR, 4, 0, p, ps, v, vs, vz, zs, n, i0, acc, inv, out); break;      \
    }
#else
#define ATTN_WI8_NVS(NR)                                                                        \
    switch (nv) {                                                                               \
    case 0: attn_wi8_chunk(NR, 0, tail, p, ps, v, vs, vz, zs, n, i0, acc, inv, out); break;     \
    case 1: attn_wi8_chunk(NR, 1, tail, p, ps, v, vs, vz, zs, n, i0, acc, inv, out); break;     \
    default: attn_wi8_chunk(NR, 2, 0, p, ps, v, vs, vz, zs, n, i0, acc, inv, out); break;      \
    }
#endif

static void attn_weighted_sum_i8(float *p, size_t ps, size_t nr, const int8_t *v, size_t vs,
                                 const int8_t *vz, const float *vsc, size_t zs, size_t n,
                                 size_t d, float *const *acc, const float *inv,
                                 float *const *out) {
    for (size_t j = 0; j < n; j++) {
        attn_prefetch_row((const int8_t *)(const void *)vsc, (j + ATTN_AHEAD) * zs * sizeof(float));
        attn_prefetch_row(vz, (j + ATTN_AHEAD) * zs);
        for (size_t r = 0; r < nr; r++) p[r * ps + j] *= vsc[j * zs]; /* the values' scales */
    }
    for (size_t i0 = 0; i0 < d; i0 += ATTN_WI8_NV * V) {
        const size_t w = d - i0 < ATTN_WI8_NV * V ? d - i0 : ATTN_WI8_NV * V;
        const size_t nv = w / V, tail = w % V;
        switch (nr) {
        case 1: ATTN_WI8_NVS(1) break;
        case 2: ATTN_WI8_NVS(2) break;
        case 3: ATTN_WI8_NVS(3) break;
        default: ATTN_WI8_NVS(4) break;
        }
    }
}
#undef ATTN_WI8_NVS
#undef ATTN_WI8_NV
#undef ATTN_AHEAD

#undef V
#undef ATTN_INLINE
