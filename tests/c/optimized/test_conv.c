/*
 * test_conv.c — the f32 convolution (conv.h) against a plain loop in
 * double, at every instruction-set level this CPU has, on one thread and on
 * pools of 2 and 3.
 *
 * Geometries cross group channels from 3 (an RGB stem) to 40, odd counts
 * among them, kernels 1x1 to 5x5 and uneven ones,
 * strides 1 and 2, dilation 1 and 2, padding 0 to 2 (with images so small
 * that every tap of some pixels is padding), groups 1 to 3, output channels
 * around NR, pixel counts around the micro-tile and the 64-pixel block, a
 * batch of 2, bias or none, and a clamp. Scratch is filled with garbage
 * first (the row of zeros must be made by the call) and bytes past the
 * output must stay untouched.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/threadpool.h"
#include "kernels/optimized/conv.h"
#include "rng.h"

#define GUARD 16

typedef struct shape {
    size_t n, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, groups, gin, gout;
} shape;

/* One case; returns the largest error relative to the tolerance (<= 1 passes). */
static double run_case(const eko_f32_gemm_config *cfg, ember_threadpool *pool, shape s,
                       bool with_bias, float lo, float hi) {
    eko_conv_geom g = {s.n, s.h, s.w, s.groups * s.gin, 0, 0, s.groups * s.gout, s.kh, s.kw,
                       s.sh, s.sw, s.dh, s.dw, s.pt, s.pl, s.groups, s.gin, s.gout};
    const size_t reach_h = (s.kh - 1) * s.dh + 1, reach_w = (s.kw - 1) * s.dw + 1;
    if (s.h + s.pt + s.pb < reach_h || s.w + s.pl + s.pr < reach_w) return 0;
    g.oh = (s.h + s.pt + s.pb - reach_h) / s.sh + 1;
    g.ow = (s.w + s.pl + s.pr - reach_w) / s.sw + 1;
    const size_t k = s.kh * s.kw * s.gin, nx = s.n * s.h * s.w * g.c;
    const size_t ny = s.n * g.oh * g.ow * g.oc;
    size_t slice, scratch_bytes;
    if (!eko_f32_packed_size(cfg, s.gout, k, &slice) ||
        !eko_f32_conv_scratch_bytes(&g, ember_threadpool_size(pool), &scratch_bytes))
        return 1e9;
    float *x = malloc(sizeof(float) * (nx + 1));
    float *w = malloc(sizeof(float) * (g.oc * k + 1)); /* OHWI */
    float *bias = malloc(sizeof(float) * (g.oc + 1));
    float *y = malloc(sizeof(float) * (ny + GUARD));
    float *packed = malloc(sizeof(float) * (slice * s.groups + 1));
    void *scratch = aligned_alloc(64, (scratch_bytes + 64) & ~(size_t)63);
    for (size_t i = 0; i < nx; i++) x[i] = rng_float();
    for (size_t i = 0; i < g.oc * k; i++) w[i] = rng_float();
    for (size_t i = 0; i < g.oc; i++) bias[i] = rng_float();
    for (size_t i = 0; i < ny + GUARD; i++) y[i] = 777.0f;
    memset(scratch, 0x7f, scratch_bytes); /* not zeros: large floats */
    for (size_t grp = 0; grp < s.groups; grp++)
        eko_f32_pack(cfg, s.gout, k, w + grp * s.gout * k, false,
                     with_bias ? bias + grp * s.gout : NULL, packed + grp * slice);
    eko_f32_conv(cfg, pool, &g, x, packed, y, lo, hi, scratch);
    double worst = 0;
    for (size_t b = 0; b < s.n; b++)
        for (size_t oy = 0; oy < g.oh; oy++)
            for (size_t ox = 0; ox < g.ow; ox++)
                for (size_t o = 0; o < g.oc; o++) {
                    const size_t grp = o / s.gout;
                    double ref = with_bias ? bias[o] : 0.0, mag = fabs(ref);
                    for (size_t ky = 0; ky < s.kh; ky++)
                        for (size_t kx = 0; kx < s.kw; kx++) {
                            long iy = (long)(oy * s.sh + ky * s.dh) - (long)s.pt;
                            long ix = (long)(ox * s.sw + kx * s.dw) - (long)s.pl;
                            if (iy < 0 || iy >= (long)s.h || ix < 0 || ix >= (long)s.w) continue;
                            for (size_t i = 0; i < s.gin; i++) {
                                double p = (double)x[((b * s.h + (size_t)iy) * s.w + (size_t)ix) *
                                                         g.c + grp * s.gin + i] *
                                           w[o * k + (ky * s.kw + kx) * s.gin + i];
                                ref += p;
                                mag += fabs(p);
                            }
                        }
                    ref = ref < lo ? lo : ref > hi ? hi : ref;
                    double got = y[((b * g.oh + oy) * g.ow + ox) * g.oc + o];
                    double err = fabs(got - ref) / (1e-5 * (1.0 + mag));
                    if (!(err <= worst)) worst = err; /* NaN counts as the worst */
                }
    for (size_t i = ny; i < ny + GUARD; i++)
        if (y[i] != 777.0f) worst = 1e9; /* wrote past the output */
    free(x);
    free(w);
    free(bias);
    free(y);
    free(packed);
    free(scratch);
    return worst;
}

static void test_config(eko_isa isa, const eko_f32_gemm_config *cfg, ember_threadpool **pools,
                        size_t npools) {
    char name[80];
    snprintf(name, sizeof name, "f32 conv %s (%zux%zu %s)", eko_isa_name(isa), cfg->mr, cfg->nr,
             eko_isa_name(cfg->isa));
    check_section(name);
    const size_t nr = cfg->nr;
    static const size_t kernels[][2] = {{1, 1}, {3, 3}, {5, 5}, {3, 1}, {1, 3}};
    static const size_t sizes[][2] = {{1, 1}, {2, 3}, {5, 7}, {9, 9}, {4, 17}};
    const size_t gins[] = {3, 16, 17, 40};
    const size_t gouts[] = {1, nr - 1, nr + 3, 2 * nr};
    int failures = 0, cases = 0;
    for (size_t kk = 0; kk < sizeof kernels / sizeof *kernels; kk++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (size_t gi = 0; gi < sizeof gins / sizeof *gins; gi++)
                for (size_t st = 1; st <= 2; st++) {
                    /* the rest varies with the case, so that every value is met */
                    const size_t v = kk * 7 + si * 5 + gi * 3 + st;
                    shape s = {1 + v % 2, sizes[si][0], sizes[si][1], kernels[kk][0],
                               kernels[kk][1], st, v % 3 == 0 ? 1 : st, 1 + v % 2 * (v / 2 % 2),
                               1 + (v / 3) % 2, v % 3, (v + 1) % 3, (v / 2) % 3, v % 2,
                               1 + v % 3, gins[gi], gouts[v % 4]};
                    const float lo = v % 4 == 0 ? -0.5f : -INFINITY;
                    const float hi = v % 5 == 0 ? 0.75f : INFINITY;
                    ember_threadpool *pool = pools[v % npools];
                    double e = run_case(cfg, pool, s, v % 7 != 0, lo, hi);
                    cases++;
                    if (e > 1.0 && failures++ < 5)
                        printf("  k=%zux%zu in=%zux%zux%zu s=%zu/%zu d=%zu/%zu p=%zu,%zu,%zu,%zu "
                               "groups=%zu gin=%zu gout=%zu: err %.3g\n",
                               s.kh, s.kw, s.n, s.h, s.w, s.sh, s.sw, s.dh, s.dw, s.pt, s.pl,
                               s.pb, s.pr, s.groups, s.gin, s.gout, e);
                }
    /* a late layer: few pixels, many channels (tasks split the panels) */
    for (size_t p = 0; p < npools; p++) {
        shape late = {1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 64, 8 * nr + 5};
        shape wide = {1, 12, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 24, 3 * nr};
        cases += 2;
        if (run_case(cfg, pools[p], late, true, -INFINITY, INFINITY) > 1.0 && failures++ < 5)
            printf("  late layer, pool %zu: wrong\n", p);
        if (run_case(cfg, pools[p], wide, false, 0.0f, 6.0f) > 1.0 && failures++ < 5)
            printf("  strided layer, pool %zu: wrong\n", p);
    }
    /* many narrow groups (RegNet, ResNeXt): 3x3 over pixel counts across
     * the 64-pixel block, group widths around the panel */
    const size_t ggouts[] = {1, nr / 2, nr - 1, nr};
    const size_t ggins[] = {4, 8, 9};
    for (size_t gi = 0; gi < 3; gi++)
        for (size_t go = 0; go < 4; go++)
            for (size_t st = 1; st <= 2; st++) {
                const size_t v = gi * 8 + go * 2 + st;
                shape s = {1 + v % 2, 9 + v % 3, 9, 3, 3, st, st, 1, 1, 1, 1, 1, 1,
                           v % 2 ? 13 : 5, ggins[gi], ggouts[go]};
                ember_threadpool *pool = pools[v % npools];
                cases++;
                if (run_case(cfg, pool, s, v % 3 != 0, v % 4 == 0 ? 0.0f : -INFINITY, INFINITY) >
                        1.0 &&
                    failures++ < 5)
                    printf("  grouped: groups=%zu gin=%zu gout=%zu stride %zu: wrong\n",
                           s.groups, s.gin, s.gout, st);
            }
    CHECK_MSG(failures == 0, "%d of %d cases wrong", failures, cases);
}

/* A level's configuration, then those its narrow groups run on. */
static void test_level(eko_isa isa, ember_threadpool **pools, size_t npools) {
    const eko_f32_gemm_config *cfg = eko_f32_gemm_config_for(isa);
    if (!eko_isa_supported(isa) || cfg == NULL) {
        printf("-- %s: skipped (not on this CPU or not in this build)\n", eko_isa_name(isa));
        return;
    }
    test_config(isa, cfg, pools, npools);
    const eko_f32_gemm_config *seen = cfg;
    for (size_t gout = 1; gout <= 64; gout++) {
        const eko_f32_gemm_config *grouped = eko_f32_gemm_config_grouped(cfg, gout);
        if (grouped == seen || grouped == cfg) continue;
        seen = grouped;
        test_config(isa, grouped, pools, npools);
    }
}

int main(void) {
    rng_seed(29);
    ember_threadpool *pools[3] = {NULL, NULL, NULL};
    CHECK_OK(ember_threadpool_create(2, &pools[1]));
    CHECK_OK(ember_threadpool_create(3, &pools[2]));
    /* split even the small cases over every thread */
    ember_threadpool_set_grain(pools[1], 1);
    ember_threadpool_set_grain(pools[2], 1);
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) test_level((eko_isa)isa, pools, 3);
    check_section("scratch size");
    size_t bytes;
    eko_conv_geom huge = {1, 8, 8, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 16, 16};
    huge.kh = huge.kw = (size_t)1 << 40;
    CHECK_MSG(!eko_f32_conv_scratch_bytes(&huge, 2, &bytes), "scratch size overflow not caught");
    ember_threadpool_destroy(pools[1]);
    ember_threadpool_destroy(pools[2]);
    return check_finish();
}
