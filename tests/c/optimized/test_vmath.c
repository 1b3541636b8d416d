/*
 * test_vmath.c — the vectorized float math of vmath.h against double
 * precision libm, at every instruction-set level this CPU has.
 *
 * For each function: a sweep over one float bit pattern in every 4099 (all
 * signs and exponents, subnormals included) within an ulp bound; special
 * values (NaN, +-inf, +-0, the overflow and underflow edges, subnormal
 * inputs) against libm's results; and array lengths around the vector
 * width (1, 7, 17, 33, 1000+), in place and out of place, with guard
 * values past the end that must stay untouched. Levels the CPU lacks are
 * reported as skipped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/optimized/vmath.h"

enum { F_EXP, F_LOG, F_TANH, F_ERF, F_SIGMOID, F_GELU, F_GELU_TANH, F_SILU, F_HARDSWISH,
       F_COUNT };
static const char *const g_names[F_COUNT] = {"exp",  "log",       "tanh", "erf",      "sigmoid",
                                              "gelu", "gelu_tanh", "silu", "hardswish"};
/* Largest error allowed, in ulps of the exact result (GELU, SiLU and
 * hardswish: in ulps of max(|result|, 1), because their results for negative
 * x are small products that lose the relative accuracy of their factors). */
static const double g_ulps[F_COUNT] = {2, 2, 3, 3, 3, 3, 3, 3, 3};

static double ref(int f, double x) {
    switch (f) {
    case F_EXP: return exp(x);
    case F_LOG: return log(x);
    case F_TANH: return tanh(x);
    case F_ERF: return erf(x);
    case F_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case F_GELU: return 0.5 * x * (1.0 + erf(x * 0.70710678118654752));
    case F_SILU: return x / (1.0 + exp(-x));
    case F_HARDSWISH: return x * fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0;
    default: return 0.5 * x * (1.0 + tanh(0.79788456080286535 * (x + 0.044715 * x * x * x)));
    }
}

static eko_f32_unary_fn fn_of(const eko_vmath *vm, int f) {
    const eko_f32_unary_fn fns[F_COUNT] = {vm->exp,  vm->log,       vm->tanh, vm->erf,
                                           vm->sigmoid, vm->gelu, vm->gelu_tanh, vm->silu,
                                           vm->hardswish};
    return fns[f];
}

/* Error of got in ulps of want (rounded to float); NaN and inf must match. */
static double err_ulps(int f, float got, double want) {
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    const float wf = (float)want;
    if (isnan(got)) return INFINITY;
    if (isinf(wf) || isinf(got)) return got == wf ? 0 : INFINITY;
    if (got == wf) return 0;
    double scale = fabs(want);
    if (f == F_GELU || f == F_GELU_TANH || f == F_SILU || f == F_HARDSWISH)
        scale = fmax(scale, 1.0);
    const double ulp = scale < 1.1754943508222875e-38 ? ldexp(1.0, -149)
                                                      : ldexp(1.0, ilogb(scale) - 23);
    return fabs((double)got - want) / ulp;
}

static float from_bits(uint32_t b) {
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static void sweep(const eko_vmath *vm, int f) {
    enum { BLOCK = 1024, STEP = 4099 };
    static float x[BLOCK], y[BLOCK];
    double worst = 0;
    float worst_x = 0;
    uint64_t b = 0;
    while (b < (1ull << 32)) {
        size_t n = 0;
        for (; n < BLOCK && b < (1ull << 32); n++, b += STEP) x[n] = from_bits((uint32_t)b);
        fn_of(vm, f)(n, x, y);
        for (size_t i = 0; i < n; i++) {
            const double e = err_ulps(f, y[i], ref(f, x[i]));
            if (e > worst) {
                worst = e;
                worst_x = x[i];
            }
        }
    }
    CHECK_MSG(worst <= g_ulps[f], "%s: %.2f ulps at x = %.9g", g_names[f], worst, worst_x);
    printf("   %-9s worst %.2f ulps\n", g_names[f], worst);
}

static void special_values(const eko_vmath *vm, int f) {
    static const float xs[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.0f, -1.0f, 1e-45f, -1e-45f, 1e-40f,
        1.17549435e-38f, 3.4028235e38f, -3.4028235e38f, 88.72283f, 88.7228394f, 89.0f, 100.0f,
        -87.3365479f, -88.0f, -100.0f, -103.9720840f, -103.98f, -104.0f, -200.0f, 0.625f,
        -0.625f, 0.6249999f, 1e-8f, -1e-8f, 3.92f, 3.9199998f, -3.92f, 10.0f, -10.0f, 0.5f,
        2.0f, 1.41421354f, 0.70710677f, 1e30f, -1e30f};
    enum { N = sizeof xs / sizeof xs[0] };
    float y[N];
    fn_of(vm, f)(N, xs, y);
    for (size_t i = 0; i < N; i++) {
        const double want = ref(f, xs[i]);
        CHECK_MSG(err_ulps(f, y[i], want) <= g_ulps[f], "%s(%g) = %.9g, want %.9g", g_names[f],
                  (double)xs[i], (double)y[i], want);
        /* the sign of a zero result, for the odd functions and exp's underflow */
        if (want == 0 && (f == F_TANH || f == F_ERF || f == F_EXP))
            CHECK_MSG(signbit(y[i]) == signbit((float)want), "%s(%g): sign of zero", g_names[f],
                      (double)xs[i]);
    }
}

/* Lengths around the vector width; the values past n must stay as they were. */
static void lengths(const eko_vmath *vm, int f) {
    static const size_t ns[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 1000, 1031};
    enum { CAP = 1040, GUARD = 8 };
    static float x[CAP + GUARD], y[CAP + GUARD], inplace[CAP + GUARD];
    uint32_t seed = 12345;
    bool ok = true;
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        const size_t n = ns[t];
        for (size_t i = 0; i < n + GUARD; i++) {
            seed = seed * 1664525u + 1013904223u;
            x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 24.0f;
            if (f == F_LOG) x[i] = fabsf(x[i]);
            y[i] = -7.25f;
            inplace[i] = i < n ? x[i] : -7.25f;
        }
        fn_of(vm, f)(n, x, y);
        fn_of(vm, f)(n, inplace, inplace);
        for (size_t i = 0; i < n; i++) {
            ok = ok && err_ulps(f, y[i], ref(f, x[i])) <= g_ulps[f];
            ok = ok && memcmp(&y[i], &inplace[i], sizeof(float)) == 0;
        }
        for (size_t i = n; i < n + GUARD; i++) ok = ok && y[i] == -7.25f && inplace[i] == -7.25f;
    }
    CHECK_MSG(ok, "%s: some length wrong, in place different, or past the end written",
              g_names[f]);
}

int main(void) {
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) {
        const eko_vmath *vm = eko_vmath_for((eko_isa)isa);
        if (!eko_isa_supported((eko_isa)isa) || vm == NULL) {
            printf("-- %s: skipped (not on this CPU or not in this build)\n",
                   eko_isa_name((eko_isa)isa));
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "vmath %s", eko_isa_name((eko_isa)isa));
        check_section(name);
        CHECK(vm->isa == (eko_isa)isa);
        for (int f = 0; f < F_COUNT; f++) {
            sweep(vm, f);
            special_values(vm, f);
            lengths(vm, f);
        }
    }
    /* the active table follows the level in use */
    check_section("vmath active");
    CHECK(eko_vmath_active() == eko_vmath_for(eko_isa_active()));
    CHECK(eko_isa_set(EKO_ISA_SCALAR));
    CHECK(eko_vmath_active() == eko_vmath_for(EKO_ISA_SCALAR));
    return check_finish();
}
