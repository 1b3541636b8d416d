/*
 * f32_rows_body.h — the row kernels of f32_rows.h, written once on the SIMD
 * layer. A f32_rows_<isa>.c includes its simd_<isa>.h and then this file,
 * which defines that level's table eko_f32_rows_<isa>.
 *
 * V below is EKO_VLEN floats. Each loop runs over whole vectors and ends
 * with one partial vector whose other lanes are loaded with a neutral value
 * (never written back).
 */
#ifndef EMBER_KERNELS_OPTIMIZED_F32_ROWS_BODY_H
#define EMBER_KERNELS_OPTIMIZED_F32_ROWS_BODY_H

#include <math.h>

#include "f32_rows.h"
#include "vmath_simd.h"

#define V EKO_VLEN
#define EKO_ROWS_CAT2(a, b) a##_##b
#define EKO_ROWS_CAT(a, b) EKO_ROWS_CAT2(a, b)

/* ---- binary ----------------------------------------------------------- */

static inline eko_v bin_add(eko_v x, eko_v y) { return eko_v_add(x, y); }
static inline eko_v bin_sub(eko_v x, eko_v y) { return eko_v_sub(x, y); }
static inline eko_v bin_mul(eko_v x, eko_v y) { return eko_v_mul(x, y); }
static inline eko_v bin_div(eko_v x, eko_v y) { return eko_v_div(x, y); }
static inline eko_v bin_min(eko_v x, eko_v y) { return eko_v_min(x, y); }
static inline eko_v bin_max(eko_v x, eko_v y) { return eko_v_max(x, y); }
static inline eko_v bin_prelu(eko_v x, eko_v y) {
    return eko_v_select(eko_v_le(eko_v_set1(0.0f), x), x, eko_v_mul(x, y));
}

/*
 * Three kernels per op: both operands rows (vv), b one value (vs), a one
 * value (sv). Two vectors per step; the partial tail loads 1.0 into its
 * spare lanes so that they compute nothing exceptional.
 */
#define EKO_ROWS_BINARY(OP)                                                                        \
    static void OP##_vv(size_t n, const float *a, const float *b, float *y) {                      \
        size_t i = 0;                                                                              \
        for (; i + 2 * V <= n; i += 2 * V) {                                                       \
            const eko_v r0 = OP(eko_v_load(a + i), eko_v_load(b + i));                             \
            const eko_v r1 = OP(eko_v_load(a + i + V), eko_v_load(b + i + V));                     \
            eko_v_store(y + i, r0);                                                                \
            eko_v_store(y + i + V, r1);                                                            \
        }                                                                                          \
        for (; i + V <= n; i += V) eko_v_store(y + i, OP(eko_v_load(a + i), eko_v_load(b + i)));   \
        if (i < n)                                                                                 \
            eko_v_store_part(y + i,                                                                \
                             OP(eko_v_load_part(a + i, n - i, 1.0f),                               \
                                eko_v_load_part(b + i, n - i, 1.0f)),                              \
                             n - i);                                                               \
    }                                                                                              \
    static void OP##_vs(size_t n, const float *a, const float *b, float *y) {                      \
        const eko_v c = eko_v_set1(b[0]);                                                          \
        size_t i = 0;                                                                              \
        for (; i + 2 * V <= n; i += 2 * V) {                                                       \
            const eko_v r0 = OP(eko_v_load(a + i), c), r1 = OP(eko_v_load(a + i + V), c);          \
            eko_v_store(y + i, r0);                                                                \
            eko_v_store(y + i + V, r1);                                                            \
        }                                                                                          \
        for (; i + V <= n; i += V) eko_v_store(y + i, OP(eko_v_load(a + i), c));                   \
        if (i < n) eko_v_store_part(y + i, OP(eko_v_load_part(a + i, n - i, 1.0f), c), n - i);     \
    }                                                                                              \
    static void OP##_sv(size_t n, const float *a, const float *b, float *y) {                      \
        const eko_v c = eko_v_set1(a[0]);                                                          \
        size_t i = 0;                                                                              \
        for (; i + 2 * V <= n; i += 2 * V) {                                                       \
            const eko_v r0 = OP(c, eko_v_load(b + i)), r1 = OP(c, eko_v_load(b + i + V));          \
            eko_v_store(y + i, r0);                                                                \
            eko_v_store(y + i + V, r1);                                                            \
        }                                                                                          \
        for (; i + V <= n; i += V) eko_v_store(y + i, OP(c, eko_v_load(b + i)));                   \
        if (i < n) eko_v_store_part(y + i, OP(c, eko_v_load_part(b + i, n - i, 1.0f)), n - i);     \
    }

EKO_ROWS_BINARY(bin_add)
EKO_ROWS_BINARY(bin_sub)
EKO_ROWS_BINARY(bin_mul)
EKO_ROWS_BINARY(bin_div)
EKO_ROWS_BINARY(bin_min)
EKO_ROWS_BINARY(bin_max)
EKO_ROWS_BINARY(bin_prelu)

static void rows_clamp(size_t n, const float *x, float lo, float hi, float *y) {
    /* max(lo, v) is v < lo ? lo : v and keeps a NaN v; min(hi, .) likewise */
    const eko_v l = eko_v_set1(lo), h = eko_v_set1(hi);
    size_t i = 0;
    for (; i + V <= n; i += V) eko_v_store(y + i, eko_v_min(h, eko_v_max(l, eko_v_load(x + i))));
    if (i < n)
        eko_v_store_part(y + i, eko_v_min(h, eko_v_max(l, eko_v_load_part(x + i, n - i, 0.0f))),
                         n - i);
}

/* ---- softmax ---------------------------------------------------------- */

/* Largest value of the row, NaN skipped (max(v, m) keeps m for a NaN v). */
static float row_max(size_t n, const float *x) {
    eko_v m0 = eko_v_set1(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    size_t i = 0;
    for (; i + 4 * V <= n; i += 4 * V) {
        m0 = eko_v_max(eko_v_load(x + i), m0);
        m1 = eko_v_max(eko_v_load(x + i + V), m1);
        m2 = eko_v_max(eko_v_load(x + i + 2 * V), m2);
        m3 = eko_v_max(eko_v_load(x + i + 3 * V), m3);
    }
    for (; i + V <= n; i += V) m0 = eko_v_max(eko_v_load(x + i), m0);
    if (i < n) m1 = eko_v_max(eko_v_load_part(x + i, n - i, -INFINITY), m1);
    return eko_v_hmax(eko_v_max(eko_v_max(m0, m1), eko_v_max(m2, m3)));
}

/* sum of exp(x - max); with y, the exponentials are stored there too. Spare
 * tail lanes hold -inf, whose exponential is 0. */
static float row_exp_sum(size_t n, const float *x, float max, float *y) {
    const eko_v mx = eko_v_set1(max);
    eko_v s0 = eko_v_set1(0.0f), s1 = s0;
    size_t i = 0;
    for (; i + 2 * V <= n; i += 2 * V) {
        const eko_v e0 = eko_v_exp(eko_v_sub(eko_v_load(x + i), mx));
        const eko_v e1 = eko_v_exp(eko_v_sub(eko_v_load(x + i + V), mx));
        if (y != NULL) {
            eko_v_store(y + i, e0);
            eko_v_store(y + i + V, e1);
        }
        s0 = eko_v_add(s0, e0);
        s1 = eko_v_add(s1, e1);
    }
    for (; i + V <= n; i += V) {
        const eko_v e = eko_v_exp(eko_v_sub(eko_v_load(x + i), mx));
        if (y != NULL) eko_v_store(y + i, e);
        s0 = eko_v_add(s0, e);
    }
    if (i < n) {
        const eko_v e = eko_v_exp(eko_v_sub(eko_v_load_part(x + i, n - i, -INFINITY), mx));
        if (y != NULL) eko_v_store_part(y + i, e, n - i);
        s1 = eko_v_add(s1, e);
    }
    return eko_v_hsum(eko_v_add(s0, s1));
}

static void rows_softmax(size_t n, const float *x, float *y) {
    const float max = row_max(n, x);
    const eko_v inv = eko_v_set1(1.0f / row_exp_sum(n, x, max, y));
    size_t i = 0;
    for (; i + V <= n; i += V) eko_v_store(y + i, eko_v_mul(eko_v_load(y + i), inv));
    if (i < n) eko_v_store_part(y + i, eko_v_mul(eko_v_load_part(y + i, n - i, 0.0f), inv), n - i);
}

static void rows_log_softmax(size_t n, const float *x, float *y) {
    const float max = row_max(n, x);
    const eko_v mx = eko_v_set1(max), lse = eko_v_set1(logf(row_exp_sum(n, x, max, NULL)));
    size_t i = 0;
    for (; i + V <= n; i += V) eko_v_store(y + i, eko_v_sub(eko_v_sub(eko_v_load(x + i), mx), lse));
    if (i < n)
        eko_v_store_part(y + i, eko_v_sub(eko_v_sub(eko_v_load_part(x + i, n - i, 0.0f), mx), lse),
                         n - i);
}

/* ---- layer norm ------------------------------------------------------- */

/*
 * Mean and variance in two passes of float lanes, the second corrected for
 * the first's rounding: with m the first mean and d = x - m, mean = m +
 * sum(d) / n and var = (sum(d^2) - sum(d)^2 / n) / n. Then one pass writes
 * (x - mean) * rstd * w + b.
 */
static void rows_layer_norm(size_t n, const float *x, const float *w, const float *b, float eps,
                            float *y, float *mean_out, float *rstd_out) {
    eko_v s0 = eko_v_set1(0.0f), s1 = s0;
    size_t i = 0;
    for (; i + 2 * V <= n; i += 2 * V) {
        s0 = eko_v_add(s0, eko_v_load(x + i));
        s1 = eko_v_add(s1, eko_v_load(x + i + V));
    }
    for (; i + V <= n; i += V) s0 = eko_v_add(s0, eko_v_load(x + i));
    if (i < n) s1 = eko_v_add(s1, eko_v_load_part(x + i, n - i, 0.0f));
    const float m = eko_v_hsum(eko_v_add(s0, s1)) / (float)n;

    const eko_v mv = eko_v_set1(m);
    eko_v d0 = eko_v_set1(0.0f), d1 = d0, q0 = d0, q1 = d0;
    for (i = 0; i + 2 * V <= n; i += 2 * V) {
        const eko_v a = eko_v_sub(eko_v_load(x + i), mv), c = eko_v_sub(eko_v_load(x + i + V), mv);
        d0 = eko_v_add(d0, a);
        d1 = eko_v_add(d1, c);
        q0 = eko_v_fma(a, a, q0);
        q1 = eko_v_fma(c, c, q1);
    }
    for (; i + V <= n; i += V) {
        const eko_v a = eko_v_sub(eko_v_load(x + i), mv);
        d0 = eko_v_add(d0, a);
        q0 = eko_v_fma(a, a, q0);
    }
    if (i < n) { /* spare lanes hold m: their d is 0 */
        const eko_v a = eko_v_sub(eko_v_load_part(x + i, n - i, m), mv);
        d1 = eko_v_add(d1, a);
        q1 = eko_v_fma(a, a, q1);
    }
    const double sd = (double)eko_v_hsum(eko_v_add(d0, d1));
    const double sq = (double)eko_v_hsum(eko_v_add(q0, q1));
    double var = (sq - sd * sd / (double)n) / (double)n;
    var = var > 0.0 ? var : 0.0;
    const float mean = (float)((double)m + sd / (double)n);
    const float rstd = (float)(1.0 / sqrt(var + (double)eps));
    *mean_out = mean;
    *rstd_out = rstd;

    const eko_v mu = eko_v_set1(mean), rs = eko_v_set1(rstd), one = eko_v_set1(1.0f),
                zero = eko_v_set1(0.0f);
    for (i = 0; i + V <= n; i += V) {
        const eko_v t = eko_v_mul(eko_v_sub(eko_v_load(x + i), mu), rs);
        const eko_v wv = w != NULL ? eko_v_load(w + i) : one;
        const eko_v bv = b != NULL ? eko_v_load(b + i) : zero;
        eko_v_store(y + i, eko_v_fma(t, wv, bv));
    }
    if (i < n) {
        const size_t r = n - i;
        const eko_v t = eko_v_mul(eko_v_sub(eko_v_load_part(x + i, r, 0.0f), mu), rs);
        const eko_v wv = w != NULL ? eko_v_load_part(w + i, r, 1.0f) : one;
        const eko_v bv = b != NULL ? eko_v_load_part(b + i, r, 0.0f) : zero;
        eko_v_store_part(y + i, eko_v_fma(t, wv, bv), r);
    }
}

#define EKO_ROWS_BIN_ENTRY(OP) {OP##_vv, OP##_vs, OP##_sv}

const eko_f32_rows EKO_ROWS_CAT(eko_f32_rows, EKO_SIMD_ISA) = {
    .isa = EKO_SIMD_ISA_ID,
    .binary =
        {
            [EKO_BIN_ADD] = EKO_ROWS_BIN_ENTRY(bin_add),
            [EKO_BIN_SUB] = EKO_ROWS_BIN_ENTRY(bin_sub),
            [EKO_BIN_MUL] = EKO_ROWS_BIN_ENTRY(bin_mul),
            [EKO_BIN_DIV] = EKO_ROWS_BIN_ENTRY(bin_div),
            [EKO_BIN_MIN] = EKO_ROWS_BIN_ENTRY(bin_min),
            [EKO_BIN_MAX] = EKO_ROWS_BIN_ENTRY(bin_max),
            [EKO_BIN_PRELU] = EKO_ROWS_BIN_ENTRY(bin_prelu),
        },
    .clamp = rows_clamp,
    .softmax = rows_softmax,
    .log_softmax = rows_log_softmax,
    .layer_norm = rows_layer_norm,
};

#undef V

#endif /* EMBER_KERNELS_OPTIMIZED_F32_ROWS_BODY_H */
