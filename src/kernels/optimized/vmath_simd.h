/*
 * vmath_simd.h — float math on SIMD vectors, written once on the SIMD layer
 * (include a simd_<isa>.h first): exp, log, tanh, erf, sigmoid, SiLU,
 * hardswish and GELU.
 *
 *     #include "simd_avx2.h"
 *     #include "vmath_simd.h"
 *     ... eko_v e = eko_v_exp(eko_v_sub(x, max)); ...
 *
 * Kernels of one instruction set (attention, softmax) call these inline on
 * their own registers; whole arrays go through vmath.h instead.
 *
 * Accuracy, from an exhaustive comparison over every float against double
 * precision (tests/c/optimized/test_vmath.c samples it): exp, log and erf
 * within 1-2 ulp, tanh and sigmoid within 2-3 ulp; special values as libm:
 * NaN gives NaN, exp overflows to +inf above 88.72 and rounds through the
 * subnormals to +0 below -103.97, log(0) = -inf, log(x < 0) = NaN,
 * log(+inf) = +inf, tanh and erf reach +-1 and keep the sign of zero.
 * Branch-free: both sides of every range split are computed and selected.
 * The polynomial coefficients are least-squares fits (minimax-weighted) of
 * the functions named beside them.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_VMATH_SIMD_H
#define EMBER_KERNELS_OPTIMIZED_VMATH_SIMD_H

#ifndef EKO_SIMD_ISA
#error "include a simd_<isa>.h before vmath_simd.h"
#endif

#include <math.h> /* INFINITY, NAN */

#define EKO_SIGN_BIT 0x80000000u

static inline eko_v eko_v_abs(eko_v x) {
    return eko_v_and(x, eko_vi_float(eko_vi_set1(~EKO_SIGN_BIT)));
}

/* |mag| with the sign of sgn. */
static inline eko_v eko_v_copysign(eko_v mag, eko_v sgn) {
    return eko_v_or(eko_v_abs(mag), eko_v_and(sgn, eko_vi_float(eko_vi_set1(EKO_SIGN_BIT))));
}

/*
 * exp(x). x is clamped to [-104, 89] (a NaN passes the clamp: min and max
 * return their second operand for it); n = round(x / ln 2) by the float
 * rounding of x * log2(e) + 1.5 * 2^23, whose low mantissa bits then hold n;
 * r = x - n ln 2 in two steps (ln 2 = 0.693359375 + ln2_lo, the first part
 * short enough that n times it is exact), |r| <= ln(2) / 2; exp(r) = 1 + r +
 * r^2 P(r). 2^n is built from bits as two powers of two, each normal, so
 * that only the last product rounds: results overflow to inf and go through
 * the subnormals to zero as they should.
 */
static inline eko_v eko_v_exp(eko_v x) {
    const eko_v magic = eko_v_set1(12582912.0f); /* 1.5 * 2^23 */
    x = eko_v_min(eko_v_set1(89.0f), eko_v_max(eko_v_set1(-104.0f), x));
    const eko_v t = eko_v_fma(x, eko_v_set1(1.44269504f), magic);
    const eko_v n = eko_v_sub(t, magic);
    eko_v r = eko_v_fnma(n, eko_v_set1(0.693359375f), x);
    r = eko_v_fnma(n, eko_v_set1(-2.12194440e-4f), r);
    /* (exp(r) - 1 - r) / r^2 on [-ln(2)/2, ln(2)/2] */
    eko_v p = eko_v_set1(1.390126883e-03f);
    p = eko_v_fma(p, r, eko_v_set1(8.363140747e-03f));
    p = eko_v_fma(p, r, eko_v_set1(4.166685417e-02f));
    p = eko_v_fma(p, r, eko_v_set1(1.666657776e-01f));
    p = eko_v_fma(p, r, eko_v_set1(5.000000000e-01f));
    p = eko_v_add(eko_v_fma(eko_v_mul(r, r), p, r), eko_v_set1(1.0f));
    /* nb = n + 252 in [102, 380] splits into h and nb - h, each in [51, 190]:
     * 2^n = 2^(h - 126) * 2^(nb - h - 126), biased exponents h + 1 and
     * nb - h + 1. (For a NaN the scale is some number; NaN times it is NaN.) */
    const eko_vi nb = eko_vi_add(eko_vi_sub(eko_v_bits(t), eko_vi_set1(0x4B400000u)),
                                 eko_vi_set1(252u));
    const eko_vi h = eko_vi_srl(nb, 1);
    const eko_vi one = eko_vi_set1(1u);
    const eko_v s1 = eko_vi_float(eko_vi_sll(eko_vi_add(h, one), 23));
    const eko_v s2 = eko_vi_float(eko_vi_sll(eko_vi_add(eko_vi_sub(nb, h), one), 23));
    return eko_v_mul(eko_v_mul(p, s1), s2);
}

/*
 * log(x). Subnormal x is first scaled by 2^23. x = 2^e m with m in
 * [sqrt(1/2), sqrt(2)): subtracting the bits of sqrt(1/2) makes the
 * exponent field e (plus a bias that keeps every shift logical); f = m - 1
 * is exact, log(1 + f) = f - f^2 / 2 + f^3 P(f), and e ln 2 is added in
 * two parts, small terms first.
 */
static inline eko_v eko_v_log(eko_v x) {
    const eko_vm sub = eko_v_lt(x, eko_v_set1(1.17549435e-38f));
    const eko_v xs = eko_v_select(sub, eko_v_mul(x, eko_v_set1(8388608.0f)), x);
    const eko_v eadj = eko_v_select(sub, eko_v_set1(23.0f), eko_v_set1(0.0f));
    /* eb = e + 127: (bits - bits(sqrt(1/2)) + bits(1.0)) >> 23, never negative for x > 0 */
    const eko_vi bits = eko_v_bits(xs);
    const eko_vi eb = eko_vi_srl(eko_vi_add(bits, eko_vi_set1(0x3F800000u - 0x3F3504F3u)), 23);
    const eko_v m = eko_vi_float(eko_vi_sub(bits, eko_vi_sll(eko_vi_sub(eb, eko_vi_set1(127u)), 23)));
    const eko_v e = eko_v_sub(eko_v_sub(eko_vi_to_v(eb), eko_v_set1(127.0f)), eadj);
    const eko_v f = eko_v_sub(m, eko_v_set1(1.0f));
    const eko_v z = eko_v_mul(f, f);
    /* (log(1 + f) - f + f^2 / 2) / f^3 on [sqrt(1/2) - 1, sqrt(2) - 1] */
    eko_v p = eko_v_set1(7.037301362e-02f);
    p = eko_v_fma(p, f, eko_v_set1(-1.151441634e-01f));
    p = eko_v_fma(p, f, eko_v_set1(1.167705134e-01f));
    p = eko_v_fma(p, f, eko_v_set1(-1.242017224e-01f));
    p = eko_v_fma(p, f, eko_v_set1(1.424932033e-01f));
    p = eko_v_fma(p, f, eko_v_set1(-1.666805595e-01f));
    p = eko_v_fma(p, f, eko_v_set1(2.000071406e-01f));
    p = eko_v_fma(p, f, eko_v_set1(-2.499999404e-01f));
    p = eko_v_fma(p, f, eko_v_set1(3.333333135e-01f));
    eko_v y = eko_v_mul(eko_v_mul(f, z), p);
    y = eko_v_fma(e, eko_v_set1(-2.12194440e-4f), y);
    y = eko_v_fma(z, eko_v_set1(-0.5f), y);
    y = eko_v_add(f, y);
    y = eko_v_fma(e, eko_v_set1(0.693359375f), y);
    /* special values: +inf, 0 (either sign), negative and NaN */
    const eko_v inf = eko_v_set1(INFINITY);
    y = eko_v_select(eko_v_eq(x, inf), inf, y);
    y = eko_v_select(eko_v_eq(x, eko_v_set1(0.0f)), eko_v_set1(-INFINITY), y);
    return eko_v_select(eko_vm_or(eko_v_lt(x, eko_v_set1(0.0f)), eko_v_isnan(x)),
                        eko_v_set1(NAN), y);
}

/*
 * tanh(x), odd: |x| + |x|^3 P(x^2) for |x| < 0.625; beyond, 1 - 2 / (exp(2|x|)
 * + 1) (exp overflowing to inf gives 1); then x's sign.
 */
static inline eko_v eko_v_tanh(eko_v x) {
    const eko_v ax = eko_v_abs(x), x2 = eko_v_mul(x, x);
    /* (tanh(x) - x) / x^3 on [0, 0.625], in x^2 */
    eko_v p = eko_v_set1(2.292970428e-03f);
    p = eko_v_fma(p, x2, eko_v_set1(-8.344179951e-03f));
    p = eko_v_fma(p, x2, eko_v_set1(2.176900581e-02f));
    p = eko_v_fma(p, x2, eko_v_set1(-5.395927280e-02f));
    p = eko_v_fma(p, x2, eko_v_set1(1.333330423e-01f));
    p = eko_v_fma(p, x2, eko_v_set1(-3.333333433e-01f));
    const eko_v small = eko_v_fma(eko_v_mul(ax, x2), p, ax);
    const eko_v e = eko_v_exp(eko_v_add(ax, ax));
    const eko_v one = eko_v_set1(1.0f);
    const eko_v big = eko_v_sub(one, eko_v_div(eko_v_set1(2.0f), eko_v_add(e, one)));
    /* computed on |x|, the sign put back last (so tanh(-0) = -0) */
    return eko_v_copysign(eko_v_select(eko_v_lt(ax, eko_v_set1(0.625f)), small, big), x);
}

/*
 * erf(x), odd: for |x| < 1, |x| (c0 + x^2 P(x^2)) with c0 = 2 / sqrt(pi)
 * split in two floats; for 1 <= |x| < 3.92, 1 - exp(-x^2) Q(|x| - 2.46)
 * where Q fits erfc(x) exp(x^2); from 3.92 on, 1 (erfc(3.92) is below half
 * an ulp of 1).
 */
static inline eko_v eko_v_erf(eko_v x) {
    const eko_v ax = eko_v_abs(x), x2 = eko_v_mul(ax, ax);
    /* (erf(x) / x - 2 / sqrt(pi)) / x^2 on [0, 1], in x^2 */
    eko_v p = eko_v_set1(8.358994819e-05f);
    p = eko_v_fma(p, x2, eko_v_set1(-8.156755939e-04f));
    p = eko_v_fma(p, x2, eko_v_set1(5.204116926e-03f));
    p = eko_v_fma(p, x2, eko_v_set1(-2.686153352e-02f));
    p = eko_v_fma(p, x2, eko_v_set1(1.128375158e-01f));
    p = eko_v_fma(p, x2, eko_v_set1(-3.761263788e-01f));
    p = eko_v_fma(p, x2, eko_v_set1(-5.863538277e-08f));
    const eko_v near = eko_v_fma(ax, eko_v_set1(1.128379226f), eko_v_mul(ax, p));
    /* erfc(x) exp(x^2) on [1, 3.92], in t = x - 2.46 */
    const eko_v t = eko_v_sub(ax, eko_v_set1(2.46f));
    eko_v q = eko_v_set1(1.710848437e-06f);
    q = eko_v_fma(q, t, eko_v_set1(-6.936360933e-06f));
    q = eko_v_fma(q, t, eko_v_set1(1.660706403e-05f));
    q = eko_v_fma(q, t, eko_v_set1(-5.910031905e-05f));
    q = eko_v_fma(q, t, eko_v_set1(2.288768010e-04f));
    q = eko_v_fma(q, t, eko_v_set1(-7.911513094e-04f));
    q = eko_v_fma(q, t, eko_v_set1(2.618919360e-03f));
    q = eko_v_fma(q, t, eko_v_set1(-8.406450972e-03f));
    q = eko_v_fma(q, t, eko_v_set1(2.592228539e-02f));
    q = eko_v_fma(q, t, eko_v_set1(-7.638163120e-02f));
    q = eko_v_fma(q, t, eko_v_set1(2.138206810e-01f));
    const eko_v one = eko_v_set1(1.0f);
    eko_v far = eko_v_fnma(eko_v_exp(eko_v_sub(eko_v_set1(0.0f), x2)), q, one);
    far = eko_v_select(eko_v_le(eko_v_set1(3.92f), ax), one, far);
    return eko_v_copysign(eko_v_select(eko_v_lt(ax, one), near, far), x);
}

/*
 * sigmoid(x) = 1 / (1 + exp(-x)), as e / (1 + e) with e = exp(-|x|) for
 * negative x, so that it never overflows and reaches the subnormals.
 */
static inline eko_v eko_v_sigmoid(eko_v x) {
    const eko_v e = eko_v_exp(eko_v_sub(eko_v_set1(0.0f), eko_v_abs(x)));
    const eko_v one = eko_v_set1(1.0f);
    const eko_v num = eko_v_select(eko_v_lt(x, eko_v_set1(0.0f)), e, one);
    return eko_v_div(num, eko_v_add(one, e));
}

/* SiLU (swish): x * sigmoid(x), the activation of EfficientNet-style blocks. */
static inline eko_v eko_v_silu(eko_v x) { return eko_v_mul(x, eko_v_sigmoid(x)); }

/* hardswish: x * clamp(x + 3, 0, 6) / 6, as (x / 6) * clamp(...) with a
 * product by 1/6 (within 1 ulp of the division, and finite for every
 * finite x); NaN passes the clamp (its max and min return it). */
static inline eko_v eko_v_hardswish(eko_v x) {
    const eko_v r = eko_v_min(eko_v_set1(6.0f),
                              eko_v_max(eko_v_set1(0.0f), eko_v_add(x, eko_v_set1(3.0f))));
    return eko_v_mul(eko_v_mul(x, eko_v_set1(1.0f / 6.0f)), r);
}

/* GELU, exact form: x / 2 * (1 + erf(x / sqrt(2))), in PyTorch's order. */
static inline eko_v eko_v_gelu(eko_v x) {
    const eko_v e = eko_v_erf(eko_v_mul(x, eko_v_set1(0.707106781f)));
    return eko_v_mul(eko_v_mul(x, eko_v_set1(0.5f)), eko_v_add(eko_v_set1(1.0f), e));
}

/* GELU, tanh form: x / 2 * (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). */
static inline eko_v eko_v_gelu_tanh(eko_v x) {
    const eko_v x3 = eko_v_mul(eko_v_mul(x, x), x);
    const eko_v inner =
        eko_v_mul(eko_v_set1(0.797884561f), eko_v_add(x, eko_v_mul(eko_v_set1(0.044715f), x3)));
    return eko_v_mul(eko_v_mul(eko_v_set1(0.5f), x),
                     eko_v_add(eko_v_set1(1.0f), eko_v_tanh(inner)));
}

#endif /* EMBER_KERNELS_OPTIMIZED_VMATH_SIMD_H */
