/*
 * test_gemm.c — the f32 GEMM on packed weights against a plain loop in
 * double, at every instruction-set level this CPU has.
 *
 * Shapes cross every block boundary of every micro-kernel (M around 1, MR,
 * 2 MR and the 64-row block; N around NR and 2 NR; K from 0), weights in
 * both layouts (rows of k, and k-major), with and without bias, with a
 * clamp, with strided A and C, on one thread and on pools of 2 and 3.
 * Levels the CPU lacks are reported as skipped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/threadpool.h"
#include "kernels/optimized/gemm.h"
#include "rng.h"

/* One case; returns the largest error relative to the tolerance (<= 1 passes). */
static double run_case(const eko_f32_gemm_config *cfg, ember_threadpool *pool, size_t m, size_t n,
                       size_t k, bool k_major, bool with_bias, float lo, float hi) {
    const size_t a_stride = k + 3, c_stride = n + 5;
    float *a = malloc(sizeof(float) * (m * a_stride + 1));
    float *w = malloc(sizeof(float) * (n * k + 1));
    float *bias = malloc(sizeof(float) * (n + 1));
    float *c = malloc(sizeof(float) * (m * c_stride + 1));
    size_t floats;
    if (!eko_f32_packed_size(cfg, n, k, &floats)) return 1e9;
    float *packed = malloc(sizeof(float) * floats);
    for (size_t i = 0; i < m * a_stride; i++) a[i] = rng_float();
    for (size_t i = 0; i < n * k; i++) w[i] = rng_float();
    for (size_t i = 0; i < n; i++) bias[i] = rng_float();
    for (size_t i = 0; i < m * c_stride; i++) c[i] = 12345.0f; /* gaps must stay */
    eko_f32_pack(cfg, n, k, w, k_major, with_bias ? bias : NULL, packed);
    /* packing split across threads gives the same bytes */
    float *packed2 = malloc(sizeof(float) * (floats + 1));
    eko_f32_pack_parallel(cfg, pool, n, k, w, k_major, with_bias ? bias : NULL, packed2);
    bool same_pack = memcmp(packed, packed2, sizeof(float) * floats) == 0;
    free(packed2);
    eko_f32_gemm(cfg, pool, m, n, k, a, a_stride, packed, c, c_stride, lo, hi);
    double worst = 0;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            double ref = with_bias ? bias[j] : 0.0, mag = fabs(ref);
            for (size_t kk = 0; kk < k; kk++) {
                double wv = k_major ? w[kk * n + j] : w[j * k + kk];
                ref += (double)a[i * a_stride + kk] * wv;
                mag += fabs((double)a[i * a_stride + kk] * wv);
            }
            ref = ref < lo ? lo : ref > hi ? hi : ref;
            double err = fabs(c[i * c_stride + j] - ref) / (1e-5 * (1.0 + mag));
            if (err > worst) worst = err;
        }
        for (size_t j = n; j < c_stride && (i + 1 < m || j < n + 1); j++)
            if (c[i * c_stride + j] != 12345.0f) worst = 1e9; /* wrote past n */
    }
    free(a);
    free(w);
    free(bias);
    free(c);
    free(packed);
    return same_pack ? worst : 1e9;
}

/* A NaN in a row of A makes that row of C NaN, through the clamp too (as
 * PyTorch's relu and hardtanh keep NaN); other rows stay finite. */
static bool nan_passes_the_clamp(const eko_f32_gemm_config *cfg, size_t m) {
    const size_t n = cfg->nr + 3, k = 5;
    float a[16 * 5], w[(16 * 2 + 3) * 5 + 64], c[16 * (16 * 2 + 3)];
    size_t floats;
    if (m > 16 || n > 16 * 2 + 3 || !eko_f32_packed_size(cfg, n, k, &floats)) return false;
    float *packed = malloc(sizeof(float) * floats);
    for (size_t i = 0; i < m * k; i++) a[i] = rng_float();
    for (size_t i = 0; i < n * k; i++) w[i] = rng_float();
    a[(m - 1) * k + 2] = NAN;
    eko_f32_pack(cfg, n, k, w, false, NULL, packed);
    eko_f32_gemm(cfg, NULL, m, n, k, a, k, packed, c, n, -0.5f, 0.5f);
    bool ok = true;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) ok = ok && (i == m - 1 ? isnan(c[i * n + j]) : !isnan(c[i * n + j]));
    free(packed);
    return ok;
}

static void test_level(eko_isa isa, ember_threadpool **pools, size_t npools) {
    const eko_f32_gemm_config *cfg = eko_f32_gemm_config_for(isa);
    if (!eko_isa_supported(isa) || cfg == NULL) {
        printf("-- %s: skipped (not on this CPU or not in this build)\n", eko_isa_name(isa));
        return;
    }
    char name[64];
    snprintf(name, sizeof name, "f32 gemm %s (%zux%zu)", eko_isa_name(isa), cfg->mr, cfg->nr);
    check_section(name);
    const size_t mr = cfg->mr, nr = cfg->nr;
    const size_t ms[] = {1, 2, mr - 1, mr, mr + 1, 2 * mr + 1, 63, 64, 65, 130};
    const size_t ns[] = {1, 3, nr - 1, nr, nr + 1, 2 * nr + 3, 100};
    const size_t ks[] = {0, 1, 2, 7, 64, 129};
    int failures = 0, cases = 0;
    for (size_t p = 0; p < npools; p++)
        for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
            for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
                for (size_t c = 0; c < sizeof ks / sizeof *ks; c++) {
                    /* vary layout, bias and clamp with the case */
                    const int v = (int)(a + b + c);
                    const bool k_major = v % 2, bias = v % 3 != 0;
                    const float lo = v % 4 == 0 ? -0.5f : -INFINITY;
                    const float hi = v % 5 == 0 ? 0.75f : INFINITY;
                    double e = run_case(cfg, pools[p], ms[a], ns[b], ks[c], k_major, bias, lo, hi);
                    cases++;
                    if (e > 1.0) {
                        if (failures++ < 5)
                            printf("  m=%zu n=%zu k=%zu k_major=%d bias=%d pool=%zu: err %.3g\n",
                                   ms[a], ns[b], ks[c], k_major, bias, p, e);
                    }
                }
    CHECK_MSG(failures == 0, "%d of %d cases wrong", failures, cases);
    for (size_t m = 1; m <= mr + 1; m++)
        CHECK_MSG(nan_passes_the_clamp(cfg, m), "NaN lost in the clamp, %zu rows", m);
}

int main(void) {
    rng_seed(77);
    ember_threadpool *pools[3] = {NULL, NULL, NULL};
    CHECK_OK(ember_threadpool_create(2, &pools[1]));
    CHECK_OK(ember_threadpool_create(3, &pools[2]));
    /* split even the small cases over every thread */
    ember_threadpool_set_grain(pools[1], 1);
    ember_threadpool_set_grain(pools[2], 1);
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) test_level((eko_isa)isa, pools, 3);
    /* the active level is the best the CPU has unless EMBER_ISA says otherwise */
    check_section("active level");
    CHECK(eko_isa_supported(eko_isa_active()));
    CHECK(eko_f32_gemm_config_active() != NULL);
    CHECK(!eko_isa_set((eko_isa)99));
    ember_threadpool_destroy(pools[1]);
    ember_threadpool_destroy(pools[2]);
    return check_finish();
}
