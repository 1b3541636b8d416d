/*
 * test_dwconv.c — the depthwise convolution row kernel (f32_dwconv.h)
 * against a plain loop in double, at every instruction-set level this CPU
 * has.
 *
 * Geometries put the interior/edge split everywhere it can fall: kernels
 * 1x1, 3x3 (the register path), 5x5, 3x1 and 1x3; strides 1 and 2;
 * dilation 1 and 2; padding 0 to 2 (and more than the kernel reaches);
 * widths so small that no pixel is interior; channel counts around the
 * vector width; rows missing above or below (padding rows, NULL); clamps
 * and no bias. Bytes past the row must stay untouched.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/optimized/f32_dwconv.h"
#include "rng.h"

#define GUARD 8

/* One case; returns the largest error relative to the tolerance (<= 1 passes). */
static double run_case(const eko_f32_dwconv *k, size_t w, size_t c, size_t kh, size_t kw,
                       size_t sw, size_t dw, size_t pl, size_t pr, unsigned missing,
                       bool with_bias, float lo, float hi) {
    const size_t reach = (kw - 1) * dw + 1;
    if (w + pl + pr < reach) return 0; /* no output */
    const size_t ow = (w + pl + pr - reach) / sw + 1;
    float *in = malloc(sizeof(float) * kh * w * c + 1);
    float *wt = malloc(sizeof(float) * kh * kw * c);
    float *bias = malloc(sizeof(float) * c);
    float *out = malloc(sizeof(float) * (ow * c + GUARD));
    for (size_t i = 0; i < kh * w * c; i++) in[i] = rng_float();
    for (size_t i = 0; i < kh * kw * c; i++) wt[i] = rng_float();
    for (size_t i = 0; i < c; i++) bias[i] = rng_float();
    for (size_t i = 0; i < ow * c + GUARD; i++) out[i] = 777.0f;
    const float *rows[8];
    for (size_t ky = 0; ky < kh; ky++) rows[ky] = (missing >> ky) & 1 ? NULL : in + ky * w * c;
    const eko_dwconv_geom g = {w, c, ow, kh, kw, sw, dw, pl};
    k->row(&g, rows, wt, with_bias ? bias : NULL, lo, hi, out);
    double worst = 0;
    for (size_t ox = 0; ox < ow; ox++)
        for (size_t ch = 0; ch < c; ch++) {
            double ref = with_bias ? bias[ch] : 0.0, mag = fabs(ref);
            for (size_t ky = 0; ky < kh; ky++) {
                if (rows[ky] == NULL) continue;
                for (size_t kx = 0; kx < kw; kx++) {
                    long ix = (long)(ox * sw + kx * dw) - (long)pl;
                    if (ix < 0 || ix >= (long)w) continue;
                    double p = (double)rows[ky][(size_t)ix * c + ch] * wt[(ky * kw + kx) * c + ch];
                    ref += p;
                    mag += fabs(p);
                }
            }
            ref = ref < lo ? lo : ref > hi ? hi : ref;
            double err = fabs(out[ox * c + ch] - ref) / (1e-5 * (1.0 + mag));
            if (err > worst) worst = err;
        }
    for (size_t i = ow * c; i < ow * c + GUARD; i++)
        if (out[i] != 777.0f) worst = 1e9; /* wrote past the row */
    free(in);
    free(wt);
    free(bias);
    free(out);
    return worst;
}

/* A NaN input reaches the outputs whose taps read it, through the clamp. */
static bool nan_passes_the_clamp(const eko_f32_dwconv *k, size_t c) {
    enum { W = 12 };
    float in[3 * W * 17], wt[9 * 17], out[W * 17];
    if (c > 17) return false;
    for (size_t i = 0; i < 3 * W * c; i++) in[i] = rng_float();
    for (size_t i = 0; i < 9 * c; i++) wt[i] = rng_float();
    in[(1 * W + 6) * c + c - 1] = NAN; /* middle row, pixel 6, last channel */
    const float *rows[3] = {in, in + W * c, in + 2 * W * c};
    const eko_dwconv_geom g = {W, c, W, 3, 3, 1, 1, 1};
    k->row(&g, rows, wt, NULL, -0.5f, 0.5f, out);
    bool ok = true;
    for (size_t ox = 0; ox < W; ox++)
        for (size_t ch = 0; ch < c; ch++) {
            bool hit = ch == c - 1 && ox >= 5 && ox <= 7;
            ok = ok && (hit ? isnan(out[ox * c + ch]) : !isnan(out[ox * c + ch]));
        }
    return ok;
}

static void test_level(eko_isa isa) {
    const eko_f32_dwconv *k = eko_f32_dwconv_for(isa);
    if (!eko_isa_supported(isa) || k == NULL) {
        printf("-- %s: skipped (not on this CPU or not in this build)\n", eko_isa_name(isa));
        return;
    }
    char name[64];
    snprintf(name, sizeof name, "f32 depthwise row %s", eko_isa_name(isa));
    check_section(name);
    static const size_t kernels[][2] = {{1, 1}, {3, 3}, {5, 5}, {3, 1}, {1, 3}};
    static const size_t widths[] = {1, 2, 3, 7, 16, 33};
    static const size_t chans[] = {1, 3, 4, 8, 9, 16, 17, 24, 40};
    int failures = 0, cases = 0;
    for (size_t kk = 0; kk < sizeof kernels / sizeof *kernels; kk++)
        for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)
            for (size_t ci = 0; ci < sizeof chans / sizeof *chans; ci++)
                for (size_t sw = 1; sw <= 2; sw++)
                    for (size_t dw = 1; dw <= 2; dw++)
                        for (size_t pl = 0; pl <= 3; pl++) {
                            const size_t kh = kernels[kk][0], kw = kernels[kk][1];
                            const int v = (int)(kk + wi + ci + sw + dw + pl);
                            /* the same padding on the right, or one less */
                            const size_t pr = pl > 0 && v % 2 ? pl - 1 : pl;
                            /* every third case misses the top or bottom row */
                            const unsigned missing = v % 3 == 0 ? 1u : v % 3 == 1 && kh > 1
                                                                      ? 1u << (kh - 1) : 0u;
                            const float lo = v % 4 == 0 ? -0.25f : -INFINITY;
                            const float hi = v % 5 == 0 ? 0.5f : INFINITY;
                            double e = run_case(k, widths[wi], chans[ci], kh, kw, sw, dw, pl, pr,
                                                missing, v % 7 != 0, lo, hi);
                            cases++;
                            if (e > 1.0 && failures++ < 5)
                                printf("  k=%zux%zu w=%zu c=%zu s=%zu d=%zu p=%zu/%zu miss=%u: "
                                       "err %.3g\n", kh, kw, widths[wi], chans[ci], sw, dw, pl,
                                       pr, missing, e);
                        }
    CHECK_MSG(failures == 0, "%d of %d cases wrong", failures, cases);
    CHECK_MSG(nan_passes_the_clamp(k, 8) && nan_passes_the_clamp(k, 17),
              "NaN lost in the clamp");
}

int main(void) {
    rng_seed(11);
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) test_level((eko_isa)isa);
    check_section("active level");
    CHECK(eko_f32_dwconv_active() != NULL);
    return check_finish();
}
