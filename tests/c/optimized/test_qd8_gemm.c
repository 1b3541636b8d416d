/*
 * test_qd8_gemm.c — dynamically quantized products (qd8_gemm.h) against a
 * plain loop in 64-bit integers and doubles, for every kernel set of this
 * build that the CPU runs (scalar, AVX2, AVX-VNNI, AVX-512 VNNI, NEON, NEON
 * dot).
 *
 * Weights int8 per channel, int4 per channel and int4 per group (groups of
 * 32, 64, 128, of 8, and of sizes that are not a multiple of the block
 * depth); K odd and not a multiple of the block, and long enough for several
 * of the narrow int4 sums (qd8_gemm_body.h) with a part-filled last one; M
 * from 1 past two 64-row blocks (every tile height and remainder); N around
 * the panel width; weights and activations at their extremes, whole columns
 * of one sign so that pairs and narrow sums reach their bounds; with and
 * without bias and clamp; rows that share one quantization, in plain int8
 * (the kernels for static tensors) and in the kernels' encoding; on the
 * caller alone and on a pool of 2 threads.
 * Activations are read through a buffer that ends EKO_QD8_X_PAD bytes after
 * the last row (an over-read shows under ASan); scales as float and as
 * bfloat16. Then the row quantization:
 * its properties, all-zero, infinite and NaN rows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/threadpool.h"
#include "kernels/optimized/qd8_gemm.h"
#include "rng.h"

typedef struct wcase {
    size_t m, n, k, slice_k;
    bool int4, bias, clamp, extremes, bf16;
    bool uniform; /* one quantization for every row, through eko_qd8_gemm_uniform */
} wcase;

/* Runs one case; returns the worst error over its tolerance (<= 1 passes). */
static double run_case(const eko_qd8_gemm_config *cfg, ember_threadpool *pool, const wcase *t) {
    const size_t m = t->m, n = t->n, k = t->k, ldx = k + 5, ldc = n + 3;
    const size_t row_bytes = t->int4 ? (k + 1) / 2 : k, slices = k / t->slice_k;
    int8_t *x = malloc(m * ldx + EKO_QD8_X_PAD);
    eko_qd8_row *rows = malloc(sizeof(eko_qd8_row) * (m + 1));
    uint8_t *src = malloc(n * row_bytes + 1);
    int *wv = malloc(sizeof(int) * (n * k + 1));
    float *scales = malloc(sizeof(float) * (n * slices + 1));
    float *bias = malloc(sizeof(float) * (n + 1));
    float *c = malloc(sizeof(float) * (m * ldc + 1));
    for (size_t i = 0; i < m * ldx + EKO_QD8_X_PAD; i++) x[i] = (int8_t)(rng_bits() & 0xff);
    for (size_t r = 0; r < m; r++) {
        rows[r].scale = 0.001f + (float)(rng_bits() % 1000) * 1e-4f;
        rows[r].zero_point = (int32_t)(rng_bits() % 256) - 128;
        if (t->extremes) { /* whole rows at the ends of int8, or alternating */
            for (size_t kk = 0; kk < k; kk++) {
                const bool top = r % 3 == 0 || (r % 3 == 2 && kk % 2 == 1);
                x[r * ldx + kk] = (int8_t)(top ? 127 : -128);
            }
            rows[r].zero_point = r % 2 ? 127 : -128;
        }
        if (t->uniform) rows[r] = rows[0];
    }
    memset(src, 0, n * row_bytes + 1);
    for (size_t j = 0; j < n; j++)
        for (size_t kk = 0; kk < k; kk++) {
            int v = t->int4 ? (int)(rng_bits() % 16) - 8 : (int)(rng_bits() % 255) - 127;
            if (t->extremes) { /* columns all of the least, all of the most, or alternating */
                const int least = t->int4 ? -8 : -127, most = t->int4 ? 7 : 127;
                v = j % 3 == 0 ? least : j % 3 == 1 ? most : (j + kk) % 2 ? most : least;
            }
            wv[j * k + kk] = v;
            if (t->int4)
                src[j * row_bytes + kk / 2] |= (uint8_t)((v + 8) << (kk % 2 ? 4 : 0));
            else
                src[j * row_bytes + kk] = (uint8_t)(int8_t)v;
        }
    for (size_t i = 0; i < n * slices; i++) scales[i] = 0.002f + (float)(rng_bits() % 1000) * 1e-5f;
    uint16_t *scales_bf16 = malloc(sizeof(uint16_t) * (n * slices + 1));
    for (size_t i = 0; i < n * slices && t->bf16; i++) { /* rounded to bfloat16, exactly */
        uint32_t bits;
        memcpy(&bits, &scales[i], sizeof bits);
        bits = (bits + 0x8000u) & 0xffff0000u;
        memcpy(&scales[i], &bits, sizeof bits);
        scales_bf16[i] = (uint16_t)(bits >> 16);
    }
    for (size_t j = 0; j < n; j++) bias[j] = rng_float();
    for (size_t i = 0; i < m * ldc; i++) c[i] = 12345.0f;

    eko_qd8_weights w;
    size_t bytes;
    double worst = 0;
    if (!eko_qd8_weights_init(&w, n, k, t->slice_k, t->int4, t->bf16, &bytes)) return 1e9;
    uint8_t *packed = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (!eko_qd8_pack(&w, src, t->bf16 ? (const void *)scales_bf16 : (const void *)scales,
                      t->bias ? bias : NULL, packed))
        worst = 1e9;
    if (pool != NULL) { /* packed across the pool's threads: the same bytes */
        uint8_t *again = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
        eko_qd8_weights w2 = w;
        if (!eko_qd8_pack_parallel(&w2, pool, src,
                                   t->bf16 ? (const void *)scales_bf16 : (const void *)scales,
                                   t->bias ? bias : NULL, again) ||
            memcmp(again, packed, bytes) != 0 || w2.data != again)
            worst = 1e9;
        free(again);
    }
    const float lo = t->clamp ? -0.5f : -INFINITY, hi = t->clamp ? 0.5f : INFINITY;
    /* the activations in the kernels' encoding */
    int8_t *xe = malloc(m * ldx + EKO_QD8_X_PAD);
    for (size_t i = 0; i < m * ldx + EKO_QD8_X_PAD; i++)
        ((uint8_t *)xe)[i] = (uint8_t)((uint8_t)x[i] ^ cfg->x_xor);
    if (!t->uniform) {
        eko_qd8_gemm(cfg, pool, m, xe, ldx, rows, &w, c, ldc, lo, hi);
    } else { /* plain int8 rows, and the same rows in the kernels' encoding */
        float *c2 = malloc(sizeof(float) * (m * ldc + 1));
        memcpy(c2, c, sizeof(float) * m * ldc);
        const eko_qd8_out out = {c, NULL, ldc}, out2 = {c2, NULL, ldc};
        eko_qd8_gemm_uniform(cfg, pool, m, x, ldx, 0, rows[0], &w, out, lo, hi);
        eko_qd8_gemm_uniform(cfg, pool, m, xe, ldx, cfg->x_xor, rows[0], &w, out2, lo, hi);
        if (memcmp(c, c2, sizeof(float) * m * ldc) != 0) worst = 1e9; /* the same products */
        free(c2);
    }
    free(xe);

    for (size_t r = 0; r < m; r++) {
        for (size_t j = 0; j < n; j++) {
            /* mag: the size of what the kernel adds in float, the products
             * with the zero point and the activations' offset of up to 128
             * (taken out at the end through the packed ksums) */
            double ref = 0, mag = 0;
            for (size_t s = 0; s < slices; s++) {
                int64_t sum = 0, big = 0;
                for (size_t kk = s * t->slice_k; kk < (s + 1) * t->slice_k; kk++) {
                    const int64_t xz = (int64_t)x[r * ldx + kk] - rows[r].zero_point;
                    sum += xz * wv[j * k + kk];
                    big += (llabs(xz) + llabs((int64_t)rows[r].zero_point) + 128) *
                           llabs((int64_t)wv[j * k + kk]);
                }
                ref += (double)sum * scales[j * slices + s];
                mag += (double)big * scales[j * slices + s];
            }
            ref = ref * rows[r].scale + (t->bias ? bias[j] : 0.0);
            mag = mag * rows[r].scale + (t->bias ? fabs(bias[j]) : 0.0);
            ref = ref < lo ? lo : ref > hi ? hi : ref;
            const double err = fabs(c[r * ldc + j] - ref) / (2e-6 * mag + 1e-6);
            if (err > worst) worst = err;
        }
        for (size_t j = n; j < ldc && (r + 1 < m || j < n + 1); j++)
            if (c[r * ldc + j] != 12345.0f) worst = 1e9; /* wrote past n */
    }
    free(packed);
    free(x);
    free(rows);
    free(src);
    free(wv);
    free(scales);
    free(scales_bf16);
    free(bias);
    free(c);
    return worst;
}

static void test_config(const eko_qd8_gemm_config *cfg, ember_threadpool *pool2) {
    char name[64];
    snprintf(name, sizeof name, "qd8 gemm %s", cfg->name);
    check_section(name);
    if (!eko_qd8_gemm_config_supported(cfg)) {
        printf("-- %s: skipped (not on this CPU)\n", cfg->name);
        return;
    }
    static const size_t ms[] = {1, 2, 3, 4, 5, 9, 67, 130};
    static const size_t ns[] = {1, 15, 16, 17, 40};
    /* (k, slice_k, int4): per channel, then groups */
    static const size_t ks[][3] = {
        {1, 1, 0},   {3, 3, 0},    {4, 4, 0},    {17, 17, 0},  {64, 64, 0},  {101, 101, 0},
        {1, 1, 1},   {7, 7, 1},    {8, 8, 1},    {33, 33, 1},  {64, 32, 1},  {96, 32, 1},
        {24, 8, 1},  {36, 12, 1},  {15, 5, 1},   {6, 2, 1},    {256, 64, 1}, {256, 128, 1},
        {200, 200, 1}, {80, 40, 1}, {96, 32, 0}, {48, 16, 0}};
    int cases = 0, failures = 0;
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
            for (size_t d = 0; d < sizeof ks / sizeof *ks; d++)
                for (int variant = 0; variant < 4; variant++) {
                    /* 0: bfloat16 scales, bias; 1: extremes; 2: bias, clamp; 3: as 1, the
                     * rows sharing one quantization */
                    wcase t = {ms[a], ns[b], ks[d][0], ks[d][1], ks[d][2] != 0,
                               variant != 1 && variant != 3, variant == 2,
                               variant == 1 || variant == 3, variant == 0, variant == 3};
                    ember_threadpool *pool = (a + b + d + (size_t)variant) % 2 ? pool2 : NULL;
                    const double err = run_case(cfg, pool, &t);
                    cases++;
                    if (err > 1.0) {
                        if (failures++ < 5)
                            printf("  m=%zu n=%zu k=%zu slice=%zu int4=%d variant=%d pool=%d: "
                                   "err %.3g\n",
                                   t.m, t.n, t.k, t.slice_k, t.int4, variant, pool != NULL, err);
                    }
                }
    CHECK_MSG(failures == 0, "%d of %d cases wrong", failures, cases);
}

/* A NaN row scale (a row with a NaN) makes that row NaN through the clamp;
 * the other rows stay finite. */
static void test_nan_row(const eko_qd8_gemm_config *cfg) {
    if (!eko_qd8_gemm_config_supported(cfg)) return;
    const size_t m = 3, n = 5, k = 8;
    int8_t x[3 * 8 + EKO_QD8_X_PAD] = {0};
    int8_t src[5 * 8];
    float scales[5], c[3 * 5];
    eko_qd8_row rows[3] = {{0.5f, 0}, {NAN, 0}, {0.25f, 3}};
    for (size_t i = 0; i < sizeof x; i++) x[i] = (int8_t)(i * 7);
    for (size_t i = 0; i < sizeof src; i++) src[i] = (int8_t)(i % 11) - 5;
    for (size_t i = 0; i < n; i++) scales[i] = 0.01f;
    eko_qd8_weights w;
    size_t bytes;
    CHECK(eko_qd8_weights_init(&w, n, k, k, false, false, &bytes));
    uint8_t *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    CHECK(eko_qd8_pack(&w, src, scales, NULL, packed));
    eko_qd8_gemm(cfg, NULL, m, x, k, rows, &w, c, n, 0.0f, 6.0f);
    bool ok = true;
    for (size_t j = 0; j < n; j++)
        ok = ok && isnan(c[n + j]) && !isnan(c[j]) && !isnan(c[2 * n + j]);
    CHECK_MSG(ok, "%s: NaN row", cfg->name);
    free(packed);
}

static void test_pack(void) {
    check_section("qd8 pack");
    eko_qd8_weights w;
    size_t bytes;
    /* geometry: slices must divide k, stay within the depth bound */
    CHECK(!eko_qd8_weights_init(&w, 4, 10, 3, true, false, &bytes));
    CHECK(!eko_qd8_weights_init(&w, 4, 10, 0, true, false, &bytes));
    CHECK(!eko_qd8_weights_init(&w, 4, EKO_QD8_MAX_K * 2, EKO_QD8_MAX_K * 2, false, false, &bytes));
    CHECK(!eko_qd8_weights_init(&w, SIZE_MAX / 2, 64, 64, false, false, &bytes));
    CHECK(eko_qd8_weights_init(&w, 17, 10, 5, true, false, &bytes));
    CHECK_EQ_INT(w.panels, 2);
    CHECK_EQ_INT(w.slices, 2);
    /* a panel: 2 groups of a line of 16 float scales and one slice's block;
     * ksums, biases, isums */
    CHECK_EQ_INT(bytes, 2 * (2 * 64 + 2 * 64 + 3 * 64));
    /* bfloat16 scales take half: both slices' in one line, one group */
    CHECK(eko_qd8_weights_init(&w, 17, 10, 5, true, true, &bytes));
    CHECK_EQ_INT(bytes, 2 * (2 * 64 + 64 + 3 * 64));
    /* -128 in an int8 weight is refused (outside symmetric int8) */
    int8_t src[16 * 4];
    float scales[16];
    for (size_t i = 0; i < sizeof src; i++) src[i] = 1;
    for (size_t i = 0; i < 16; i++) scales[i] = 1.0f;
    CHECK(eko_qd8_weights_init(&w, 16, 4, 4, false, false, &bytes));
    uint8_t *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    CHECK(eko_qd8_pack(&w, src, scales, NULL, packed));
    src[37] = -128;
    CHECK(!eko_qd8_pack(&w, src, scales, NULL, packed));
    CHECK(!eko_qd8_pack_parallel(&w, NULL, src, scales, NULL, packed));
    /* bfloat16 scales: 0x3f80 is 1.0, 0x4040 is 3.0; packed as given */
    uint16_t bf[16];
    for (size_t i = 0; i < 16; i++) bf[i] = i % 2 ? 0x4040 : 0x3f80;
    src[37] = 1;
    CHECK(eko_qd8_weights_init(&w, 16, 4, 4, false, true, &bytes));
    CHECK(eko_qd8_pack(&w, src, bf, NULL, packed));
    uint16_t sc[16];
    memcpy(sc, packed, sizeof sc); /* the group's line of scales, before its block */
    CHECK(sc[0] == 0x3f80 && sc[1] == 0x4040);
    /* one slice: the int32 weight sums (4 ones), no ksums */
    int32_t is[16];
    float ks[16];
    memcpy(ks, packed + 128, sizeof ks);
    memcpy(is, packed + 128 + 128, sizeof is);
    CHECK(ks[0] == 0.0f && is[0] == 4 && is[1] == 4);
    /* groups: the ksums, scale times the slice's weight sum (2 ones) */
    CHECK(eko_qd8_weights_init(&w, 16, 4, 2, false, true, &bytes));
    uint16_t bf2[32];
    for (size_t i = 0; i < 32; i++) bf2[i] = i % 4 < 2 ? 0x3f80 : 0x4040; /* per row: 1, 1 | 3, 3 */
    free(packed);
    packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    CHECK(eko_qd8_pack(&w, src, bf2, NULL, packed));
    memcpy(ks, packed + 64 + 2 * 64, sizeof ks); /* after the line of scales and 2 blocks */
    memcpy(is, packed + 64 + 2 * 64 + 128, sizeof is);
    CHECK(ks[0] == 4.0f && ks[1] == 12.0f && is[0] == 0);
    free(packed);
}

/* Every level's row quantizer gives the portable one's bytes and
 * parameters (in its encoding), on rows whose lengths end mid-vector. */
static void test_quantize_levels(const eko_qd8_gemm_config *cfg, ember_threadpool *pool2) {
    if (!eko_qd8_gemm_config_supported(cfg)) return;
    enum { R = 9, MAXK = 70 };
    static const size_t ks[] = {1, 7, 8, 15, 16, 17, 33, 64, 70};
    for (size_t a = 0; a < sizeof ks / sizeof *ks; a++) {
        const size_t k = ks[a];
        float x[R * MAXK];
        int8_t q[R * MAXK], ref[MAXK];
        eko_qd8_row p[R];
        for (size_t i = 0; i < R * k; i++) x[i] = rng_float() * (float)(1 + i / k);
        x[1 * k + k / 2] = INFINITY;
        x[2 * k + k - 1] = NAN;
        x[3 * k] = -INFINITY;
        for (size_t i = 0; i < k; i++) x[4 * k + i] = 0.0f;
        for (size_t i = 0; i < k; i++) x[5 * k + i] = NAN;
        x[6 * k + k - 1] = -3e38f;
        eko_qd8_quantize(cfg, pool2, R, k, x, k, q, k, p);
        bool ok = true;
        for (size_t r = 0; r < R && ok; r++) {
            eko_qd8_row pr;
            eko_qd8_quantize_row_scalar(k, x + r * k, ref, cfg->x_xor, &pr);
            ok = memcmp(ref, q + r * k, k) == 0 && pr.zero_point == p[r].zero_point &&
                 (pr.scale == p[r].scale || (isnan(pr.scale) && isnan(p[r].scale)));
            if (!ok) printf("  %s: k=%zu row %zu differs\n", cfg->name, k, r);
        }
        CHECK_MSG(ok, "%s quantizer, k=%zu", cfg->name, k);
    }
}

static void test_quantize(ember_threadpool *pool2) {
    check_section("qd8 quantize");
    const eko_qd8_gemm_config *cfg = eko_qd8_gemm_config_at(0); /* portable C */
    enum { R = 7, K = 37 };
    float x[R * K];
    int8_t q[R * K];
    eko_qd8_row p[R];
    for (size_t i = 0; i < R * K; i++) x[i] = rng_float() * (float)(1 + i / K * 3);
    for (size_t i = 0; i < K; i++) x[1 * K + i] = (float)i * 0.5f;          /* all >= 0 */
    for (size_t i = 0; i < K; i++) x[2 * K + i] = -(float)i * 0.25f - 1.0f; /* all < 0 */
    for (size_t i = 0; i < K; i++) x[3 * K + i] = 0.0f;                     /* all zero */
    x[4 * K + 3] = INFINITY, x[4 * K + 5] = -INFINITY;                     /* saturate */
    x[5 * K + 7] = NAN;
    x[6 * K + 0] = 3e38f, x[6 * K + 1] = -3e38f;                           /* huge range */
    eko_qd8_quantize(cfg, pool2, R, K, x, K, q, K, p);
    for (size_t r = 0; r < R; r++) {
        if (r == 5) continue;
        float lo = 0, hi = 0;
        for (size_t i = 0; i < K; i++)
            if (isfinite(x[r * K + i])) {
                lo = fminf(lo, x[r * K + i]);
                hi = fmaxf(hi, x[r * K + i]);
            }
        bool ok = p[r].scale > 0 && isfinite(p[r].scale) && p[r].zero_point >= -128 &&
                  p[r].zero_point <= 127;
        for (size_t i = 0; i < K && ok; i++) {
            const double v = x[r * K + i], deq = (double)p[r].scale * (q[r * K + i] - p[r].zero_point);
            if (v == INFINITY) ok = q[r * K + i] == 127;
            else if (v == -INFINITY) ok = q[r * K + i] == -128;
            else ok = fabs(deq - v) <= 0.5 * p[r].scale * 1.001 + fabs(v) * 1e-6;
            if (v == 0.0) ok = ok && q[r * K + i] == p[r].zero_point; /* 0 is exact */
        }
        if (r != 3 && r != 6) /* the range spans 255 steps, within a step */
            ok = ok && fabs((hi - lo) / p[r].scale - 255.0) < 0.01;
        CHECK_MSG(ok, "row %zu: scale %g zero point %d", r, (double)p[r].scale, (int)p[r].zero_point);
    }
    CHECK(p[3].scale == 1.0f); /* all zero: XNNPACK's scale 1 */
    CHECK(p[1].zero_point == -128 && p[2].zero_point == 127);
    CHECK(isnan(p[5].scale));
    CHECK(q[5 * K + 7] == p[5].zero_point);

    /* one long row (a convolution's image), fewer rows than threads: split in
     * chunks over the pool, the same values and parameters as on the caller;
     * then the same with an infinity and a NaN in the last chunk */
    enum { LK = 50000 };
    float *lx = malloc(sizeof(float) * LK);
    int8_t *lq1 = malloc(LK), *lq2 = malloc(LK);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < LK; i++) lx[i] = rng_float() * 3.0f + (i == 31337 ? 9.0f : 0.0f);
        if (pass == 1) lx[LK - 2] = INFINITY, lx[LK - 1] = NAN;
        eko_qd8_row a, b;
        eko_qd8_quantize(cfg, NULL, 1, LK, lx, LK, lq1, LK, &a);
        eko_qd8_quantize(cfg, pool2, 1, LK, lx, LK, lq2, LK, &b);
        CHECK_MSG(memcmp(lq1, lq2, LK) == 0 && a.zero_point == b.zero_point &&
                      (a.scale == b.scale || (isnan(a.scale) && isnan(b.scale))),
                  "long row, pass %d: split and whole differ", pass);
        CHECK(pass == 0 ? a.scale > 0 && isfinite(a.scale) : isnan(a.scale));
    }
    free(lx);
    free(lq1);
    free(lq2);
}

int main(void) {
    rng_seed(99);
    ember_threadpool *pool2 = NULL;
    CHECK_OK(ember_threadpool_create(2, &pool2));
    ember_threadpool_set_grain(pool2, 1); /* split even the small cases */
    test_pack();
    test_quantize(pool2);
    for (size_t i = 0; eko_qd8_gemm_config_at(i) != NULL; i++) {
        test_config(eko_qd8_gemm_config_at(i), pool2);
        test_nan_row(eko_qd8_gemm_config_at(i));
        test_quantize_levels(eko_qd8_gemm_config_at(i), pool2);
    }
    check_section("active");
    const eko_qd8_gemm_config *active = eko_qd8_gemm_config_active();
    CHECK(active != NULL && eko_qd8_gemm_config_supported(active));
    printf("-- active qd8 kernels: %s\n", active->name);
    /* the level in use picks: the extension's kernels where the CPU has it;
     * without, AVX-512 takes the best AVX2 kernels, AVX2 and AArch64 their
     * plain ones */
    const eko_isa best = eko_isa_active();
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) {
        if (!eko_isa_set((eko_isa)isa)) continue;
        for (int hide = 0; hide < 2; hide++) {
            eko_cpu_hide_dot_ext(hide != 0);
            const eko_qd8_gemm_config *c = eko_qd8_gemm_config_active();
            const bool avxvnni = eko_cpu_has_avxvnni();
            const char *want = isa == EKO_ISA_SCALAR ? "scalar"
                               : isa == EKO_ISA_AVX2 ? (avxvnni ? "avx2vnni" : "avx2")
                               : isa == EKO_ISA_AVX512
                                   ? (eko_cpu_has_vnni() ? "avx512vnni"
                                                         : avxvnni ? "avx2vnni" : "avx2")
                                   : (eko_cpu_has_dotprod() ? "neondot" : "neon");
            CHECK_MSG(strcmp(c->name, want) == 0, "level %s, extension %s: %s, expected %s",
                      eko_isa_name((eko_isa)isa), hide ? "hidden" : "as the CPU has it", c->name,
                      want);
        }
        eko_cpu_hide_dot_ext(false);
    }
    eko_isa_set(best);
    ember_threadpool_destroy(pool2);
    return check_finish();
}
