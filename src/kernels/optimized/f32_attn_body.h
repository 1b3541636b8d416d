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
static inline __attribute__((always_inline)) void attn_ws_chunk(const size_t NV, size_t tail,
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

#undef V
