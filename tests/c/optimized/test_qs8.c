/*
 * test_qs8.c — statically quantized int8 kernels against plain loops in
 * 64-bit integers and doubles:
 *
 * - the int8 products of rows that share one quantization
 *   (eko_qd8_gemm_uniform), with int8 results requantized as static int8
 *   layers pack them (multipliers in_scale * w_scale / out_scale, int32
 *   bias in output steps plus the output zero point) and with float32
 *   results (one image of a dynamically quantized convolution), for every
 *   kernel set of this build that the CPU runs, on the caller and on a pool;
 * - depthwise convolution (qs8_dwconv.h) at every level the CPU runs;
 * - addition (also broadcast), max pooling, global average pooling and the
 *   conversions (qs8_ops.h).
 *
 * XNNPACK's requantization rounds acc * multiplier in float; the reference
 * rounds it in double, so a result may differ by one step where the two
 * fall on either side of a tie: at most one step, and rarely.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember/threadpool.h"
#include "kernels/optimized/qd8_gemm.h"
#include "kernels/optimized/qs8_dwconv.h"
#include "kernels/optimized/qs8_elt.h"
#include "kernels/optimized/qs8_ops.h"
#include "rng.h"

static int8_t irand8(void) { return (int8_t)((int)(rng_bits() % 256) - 128); }

/* The reference requantization: nearest, ties to even, plus zp, clamped. */
static int ref_requant(double v, int zp, int lo, int hi) {
    double r = nearbyint(v) + zp;
    return r < lo ? lo : r > hi ? hi : (int)r;
}

typedef struct tally {
    int cases, off_by_one, wrong;
    size_t elements;
} tally;

static void count(tally *t, int got, int want) {
    t->elements++;
    if (got == want) return;
    if (abs(got - want) == 1) t->off_by_one++;
    else t->wrong++;
}

/* m x n product of k-deep rows: int8 results, returns through the tally. */
static void gemm_case(const eko_qd8_gemm_config *cfg, ember_threadpool *pool, size_t m, size_t n,
                      size_t k, bool relu, bool bias_on, tally *t) {
    const size_t ldx = k + 3, ldq = n + 2;
    int8_t *x = malloc(m * ldx + EKO_QD8_X_PAD);
    int8_t *w = malloc(n * k + 1);
    int32_t *bias = malloc(sizeof(int32_t) * (n + 1));
    float *wscale = malloc(sizeof(float) * (n + 1)), *mult = malloc(sizeof(float) * (n + 1));
    float *fbias = malloc(sizeof(float) * (n + 1));
    int8_t *q = malloc(m * ldq + 1);
    const float xs = 0.02f + (float)(rng_bits() % 100) * 1e-3f,
                ys = 0.05f + (float)(rng_bits() % 100) * 1e-2f;
    const int xz = (int)(rng_bits() % 256) - 128, yz = (int)(rng_bits() % 200) - 100;
    for (size_t i = 0; i < m * ldx + EKO_QD8_X_PAD; i++) x[i] = irand8();
    for (size_t i = 0; i < n * k; i++) w[i] = (int8_t)((int)(rng_bits() % 255) - 127);
    int32_t qmin = -128, qmax = 127;
    if (relu) eko_qs8_range((eko_qs8_params){ys, yz}, 0.0f, INFINITY, &qmin, &qmax);
    for (size_t j = 0; j < n; j++) {
        wscale[j] = 0.001f + (float)(rng_bits() % 1000) * 1e-5f;
        bias[j] = bias_on ? (int32_t)(rng_bits() % 20001) - 10000 : 0;
        mult[j] = xs * wscale[j] / ys;
        fbias[j] = (float)bias[j] * mult[j] + (float)yz;
    }
    memset(q, 0x55, m * ldq + 1);
    eko_qd8_weights pw;
    size_t bytes;
    CHECK(eko_qd8_weights_init(&pw, n, k, k, false, false, &bytes));
    uint8_t *packed = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    CHECK(eko_qd8_pack(&pw, w, mult, fbias, packed));
    eko_qd8_gemm_uniform(cfg, pool, m, x, ldx, 0, (eko_qd8_row){1.0f, xz}, &pw,
                         (eko_qd8_out){NULL, q, ldq}, (float)qmin, (float)qmax);
    for (size_t r = 0; r < m; r++) {
        for (size_t j = 0; j < n; j++) {
            int64_t acc = bias[j];
            for (size_t kk = 0; kk < k; kk++)
                acc += ((int64_t)x[r * ldx + kk] - xz) * w[j * k + kk];
            const double v = (double)acc * ((double)xs * wscale[j] / ys);
            count(t, q[r * ldq + j], ref_requant(v, yz, qmin, qmax));
        }
        for (size_t j = n; j < ldq && r + 1 < m; j++)
            if (q[r * ldq + j] != 0x55) t->wrong++; /* wrote past n */
    }
    t->cases++;
    free(packed);
    free(x);
    free(w);
    free(bias);
    free(wscale);
    free(mult);
    free(fbias);
    free(q);
}

/* The same product with float32 results (a dynamically quantized image). */
static double gemm_f32_case(const eko_qd8_gemm_config *cfg, ember_threadpool *pool, size_t m,
                            size_t n, size_t k) {
    int8_t *x = malloc(m * k + EKO_QD8_X_PAD);
    int8_t *w = malloc(n * k + 1);
    float *sc = malloc(sizeof(float) * (n + 1)), *b = malloc(sizeof(float) * (n + 1));
    float *c = malloc(sizeof(float) * (m * n + 1));
    for (size_t i = 0; i < m * k + EKO_QD8_X_PAD; i++) x[i] = irand8();
    for (size_t i = 0; i < n * k; i++) w[i] = (int8_t)((int)(rng_bits() % 255) - 127);
    for (size_t j = 0; j < n; j++) sc[j] = 0.01f, b[j] = (float)j * 0.5f;
    const eko_qd8_row xq = {0.03f, -7};
    eko_qd8_weights pw;
    size_t bytes;
    CHECK(eko_qd8_weights_init(&pw, n, k, k, false, false, &bytes));
    uint8_t *packed = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    CHECK(eko_qd8_pack(&pw, w, sc, b, packed));
    eko_qd8_gemm_uniform(cfg, pool, m, x, k, 0, xq, &pw, (eko_qd8_out){c, NULL, n}, -INFINITY,
                         INFINITY);
    double worst = 0;
    for (size_t r = 0; r < m; r++)
        for (size_t j = 0; j < n; j++) {
            int64_t acc = 0, mag = 0;
            for (size_t kk = 0; kk < k; kk++) {
                const int64_t p = ((int64_t)x[r * k + kk] - xq.zero_point) * w[j * k + kk];
                acc += p;
                mag += p < 0 ? -p : p;
            }
            const double ref = (double)acc * 0.01 * 0.03 + b[j];
            const double err = fabs(c[r * n + j] - ref) / (2e-6 * (double)mag * 3e-4 + 1e-5);
            worst = err > worst ? err : worst;
        }
    free(packed);
    free(x);
    free(w);
    free(sc);
    free(b);
    free(c);
    return worst;
}

static void test_gemm(const eko_qd8_gemm_config *cfg, ember_threadpool *pool2) {
    char name[64];
    snprintf(name, sizeof name, "qs8 gemm %s", cfg->name);
    check_section(name);
    if (!eko_qd8_gemm_config_supported(cfg)) {
        printf("-- %s: skipped (not on this CPU)\n", cfg->name);
        return;
    }
    static const size_t ms[] = {1, 3, 8, 9, 70};
    static const size_t ns[] = {1, 10, 16, 33};
    static const size_t ks[] = {1, 3, 8, 27, 72, 200};
    tally t = {0, 0, 0, 0};
    double worst = 0;
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
            for (size_t d = 0; d < sizeof ks / sizeof *ks; d++) {
                ember_threadpool *pool = (a + b + d) % 2 ? pool2 : NULL;
                gemm_case(cfg, pool, ms[a], ns[b], ks[d], (a + d) % 2 == 0, b % 2 == 0, &t);
                const double e = gemm_f32_case(cfg, pool, ms[a], ns[b], ks[d]);
                worst = e > worst ? e : worst;
            }
    CHECK_MSG(t.wrong == 0, "%s: %d results off by more than one step", cfg->name, t.wrong);
    CHECK_MSG(t.off_by_one * 1000 <= (int)t.elements, "%s: %d of %zu results one step off",
              cfg->name, t.off_by_one, t.elements);
    CHECK_MSG(worst <= 1.0, "%s: float32 results off by %.3g of the tolerance", cfg->name, worst);
}

static void test_dwconv(const eko_qs8_dwconv *kernel) {
    char name[64];
    snprintf(name, sizeof name, "qs8 depthwise %s", eko_isa_name(kernel->isa));
    check_section(name);
    /* (h, w, c, k, stride, dilation, pad) */
    static const size_t cases[][7] = {{6, 6, 8, 3, 1, 1, 1}, {7, 5, 70, 3, 2, 1, 1},
                                      {5, 5, 3, 5, 1, 1, 2},  {9, 8, 16, 3, 1, 2, 2},
                                      {4, 4, 1, 1, 1, 1, 0},  {3, 7, 130, 3, 2, 1, 0},
                                      {5, 6, 32, 3, 1, 1, 1}, {2, 3, 64, 7, 1, 1, 3}};
    tally t = {0, 0, 0, 0};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const size_t *p = cases[ci], nb = 2, c = p[2], kk = p[3];
        eko_qs8_window win = {p[0], p[1], c, 0, 0, kk, kk, p[4], p[4], p[5], p[5], p[6], p[6]};
        const size_t eff = (kk - 1) * p[5] + 1;
        win.oh = (p[0] + 2 * p[6] - eff) / p[4] + 1;
        win.ow = (p[1] + 2 * p[6] - eff) / p[4] + 1;
        int8_t *x = malloc(nb * p[0] * p[1] * c), *w = malloc(kk * kk * c);
        int8_t *y = malloc(nb * win.oh * win.ow * c);
        int32_t *bias = malloc(sizeof(int32_t) * c);
        float *mult = malloc(sizeof(float) * c);
        for (size_t i = 0; i < nb * p[0] * p[1] * c; i++) x[i] = irand8();
        for (size_t i = 0; i < kk * kk * c; i++) w[i] = (int8_t)((int)(rng_bits() % 255) - 127);
        for (size_t i = 0; i < c; i++) {
            bias[i] = (int32_t)(rng_bits() % 4001) - 2000;
            mult[i] = 0.0005f + (float)(rng_bits() % 100) * 1e-5f;
        }
        const int xz = (int)ci * 9 - 20, yz = 5 - (int)ci * 7;
        const int32_t lo = ci % 2 ? yz : -128, hi = 127;
        const eko_qs8_dw dw = {w, bias, mult, xz, yz, lo, hi};
        /* two calls: rows split as two threads would */
        const size_t rows = nb * win.oh;
        kernel->run(&win, &dw, x, y, 0, rows / 2);
        kernel->run(&win, &dw, x, y, rows / 2, rows - rows / 2);
        for (size_t b = 0; b < nb; b++)
            for (size_t oy = 0; oy < win.oh; oy++)
                for (size_t ox = 0; ox < win.ow; ox++)
                    for (size_t ch = 0; ch < c; ch++) {
                        int64_t acc = bias[ch];
                        for (size_t ky = 0; ky < kk; ky++)
                            for (size_t kx = 0; kx < kk; kx++) {
                                const long iy = (long)(oy * p[4] + ky * p[5]) - (long)p[6];
                                const long ix = (long)(ox * p[4] + kx * p[5]) - (long)p[6];
                                /* padding stands for the zero point */
                                const int v = iy < 0 || ix < 0 || iy >= (long)p[0] ||
                                                      ix >= (long)p[1]
                                                  ? xz
                                                  : x[((b * p[0] + (size_t)iy) * p[1] +
                                                       (size_t)ix) * c + ch];
                                acc += (int64_t)(v - xz) * w[(ky * kk + kx) * c + ch];
                            }
                        const int want = ref_requant((double)acc * mult[ch], yz, lo, hi);
                        count(&t, y[((b * win.oh + oy) * win.ow + ox) * c + ch], want);
                    }
        free(x);
        free(w);
        free(y);
        free(bias);
        free(mult);
    }
    CHECK_MSG(t.wrong == 0, "%d results off by more than one step", t.wrong);
    CHECK_MSG(t.off_by_one * 1000 <= (int)t.elements, "%d of %zu one step off", t.off_by_one,
              t.elements);
}

/* Every level's depthwise kernel against the portable one (scalar level),
 * bitwise: the int32 sums are exact, the requantization the same float
 * steps. Odd channel counts cross the 16-lane chunks; 3x3 and 5x5 windows
 * take the fixed-tap paths, others the general ones; rows are split as 1,
 * 2 and 3 threads would split them. (h, w, c, kh, kw, sh, sw, dh, dw, pt, pl) */
static void test_dwconv_levels(const eko_qs8_dwconv *kernel) {
    char name[64];
    snprintf(name, sizeof name, "qs8 depthwise %s = scalar", eko_isa_name(kernel->isa));
    check_section(name);
    static const size_t cases[][11] = {
        {9, 11, 33, 3, 3, 1, 1, 1, 1, 1, 1}, {12, 13, 17, 3, 3, 2, 2, 1, 1, 1, 1},
        {8, 9, 48, 3, 3, 2, 2, 1, 1, 0, 0},  {10, 10, 40, 5, 5, 1, 1, 1, 1, 2, 2},
        {11, 9, 7, 5, 5, 2, 2, 1, 1, 2, 2},  {7, 8, 31, 3, 3, 1, 1, 2, 2, 2, 2},
        {6, 7, 20, 3, 5, 1, 2, 1, 1, 1, 2},  {5, 6, 19, 1, 1, 1, 1, 1, 1, 0, 0},
        {9, 9, 18, 7, 7, 1, 1, 1, 1, 3, 3},  {3, 2, 16, 5, 5, 1, 1, 1, 1, 2, 2},
        {4, 20, 64, 3, 3, 1, 1, 1, 1, 0, 1}, {2, 3, 5, 3, 3, 1, 1, 1, 1, 3, 3}};
    const eko_qs8_dwconv *ref = eko_qs8_dwconv_for(EKO_ISA_SCALAR);
    size_t differ = 0, total = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const size_t *p = cases[ci], nb = 2, c = p[2];
        eko_qs8_window win = {p[0], p[1], c, 0, 0, p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10]};
        const size_t effh = (p[3] - 1) * p[7] + 1, effw = (p[4] - 1) * p[8] + 1;
        win.oh = (p[0] + 2 * p[9] - effh) / p[5] + 1;
        win.ow = (p[1] + 2 * p[10] - effw) / p[6] + 1;
        const size_t taps = p[3] * p[4], ny = nb * win.oh * win.ow * c;
        int8_t *x = malloc(nb * p[0] * p[1] * c), *w = malloc(taps * c);
        int8_t *want = malloc(ny), *got = malloc(ny);
        int32_t *bias = malloc(sizeof(int32_t) * c);
        float *mult = malloc(sizeof(float) * c);
        for (size_t i = 0; i < nb * p[0] * p[1] * c; i++) x[i] = irand8();
        for (size_t i = 0; i < taps * c; i++) w[i] = irand8();
        for (size_t i = 0; i < c; i++) {
            bias[i] = (int32_t)(rng_bits() % 40001) - 20000;
            mult[i] = 0.0002f + (float)(rng_bits() % 100) * 1e-5f;
        }
        const int xz = (int)(rng_bits() % 256) - 128, yz = (int)(rng_bits() % 200) - 100;
        const int32_t lo = ci % 2 ? yz : -128, hi = ci % 3 ? 127 : 100;
        const eko_qs8_dw dw = {w, bias, mult, xz, yz, lo, hi};
        const size_t rows = nb * win.oh;
        ref->run(&win, &dw, x, want, 0, rows);
        for (size_t parts = 1; parts <= 3; parts++) {
            memset(got, 0x5a, ny);
            for (size_t i = 0; i < parts; i++) {
                const size_t r0 = rows * i / parts, r1 = rows * (i + 1) / parts;
                kernel->run(&win, &dw, x, got, r0, r1 - r0);
            }
            for (size_t i = 0; i < ny; i++) differ += got[i] != want[i];
            total += ny;
        }
        free(x);
        free(w);
        free(want);
        free(got);
        free(bias);
        free(mult);
    }
    CHECK_MSG(differ == 0, "%zu of %zu outputs differ from the scalar level", differ, total);
}

/* Every level's elementwise loops (qs8_elt.h) against the scalar level's,
 * bitwise, on runs that end inside and past whole vectors and blocks. */
static void test_elt_levels(const eko_qs8_elt *k) {
    char name[64];
    snprintf(name, sizeof name, "qs8 elementwise %s = scalar", eko_isa_name(k->isa));
    check_section(name);
    const eko_qs8_elt *ref = eko_qs8_elt_for(EKO_ISA_SCALAR);
    enum { N = 300 };
    static const size_t lens[] = {0, 1, 15, 16, 17, 63, 64, 65, 129, 300};
    int8_t a[N], b[N], y0[N], y1[N];
    float f[N], g0[N], g1[N];
    for (int i = 0; i < N; i++) {
        a[i] = irand8(), b[i] = irand8();
        f[i] = (float)((int)(rng_bits() % 20001) - 10000) * 0.0371f;
    }
    f[7] = NAN, f[8] = INFINITY, f[9] = -INFINITY, f[10] = 0.5f * 0.25f, f[11] = 2.5f * 0.25f;
    size_t differ = 0;
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        const size_t n = lens[li];
        memset(y0, 0, sizeof y0), memset(y1, 0, sizeof y1);
        ref->quantize(n, f, y0, 4.0f, -3);
        k->quantize(n, f, y1, 4.0f, -3);
        differ += (size_t)(memcmp(y0, y1, N) != 0);
        memset(g0, 0, sizeof g0), memset(g1, 0, sizeof g1);
        ref->dequantize(n, a, g0, 0.173f, 11);
        k->dequantize(n, a, g1, 0.173f, 11);
        differ += (size_t)(memcmp(g0, g1, sizeof g0) != 0);
        ref->add(n, a, 0.71f, 5, b, 1.37f, -9, y0, 4, -100, 120);
        k->add(n, a, 0.71f, 5, b, 1.37f, -9, y1, 4, -100, 120);
        differ += (size_t)(memcmp(y0, y1, N) != 0);
        ref->mul(n, a, -7, b, 3, 0.0113f, y0, -2, -128, 127);
        k->mul(n, a, -7, b, 3, 0.0113f, y1, -2, -128, 127);
        differ += (size_t)(memcmp(y0, y1, N) != 0);
        int8_t table[256];
        for (int i = 0; i < 256; i++) table[i] = irand8();
        ref->lut(n, a, table, y0);
        k->lut(n, a, table, y1);
        differ += (size_t)(memcmp(y0, y1, N) != 0);
        for (size_t i = 0; i < n; i++) differ += y1[i] != table[(uint8_t)a[i]];
    }
    CHECK_MSG(differ == 0, "%zu runs differ from the scalar level", differ);
}

static void test_elementwise(void) {
    check_section("qs8 add, sub, mul, pools, conversions");
    enum { N = 1000 };
    int8_t a[N], b[N], y[N];
    float f[N], back[N];
    for (int i = 0; i < N; i++) a[i] = irand8(), b[i] = irand8();
    const eko_qs8_params pa = {0.05f, 3}, pb = {0.11f, -20}, py = {0.13f, -4};
    tally t = {0, 0, 0, 0};
    eko_qs8_add(N, a, 1, pa, b, 1, pb, y, py, -4, 127); /* relu: from the zero point */
    for (int i = 0; i < N; i++) {
        const double v = ((double)pa.scale * (a[i] - pa.zero_point) +
                          (double)pb.scale * (b[i] - pb.zero_point)) / py.scale;
        count(&t, y[i], ref_requant(v, py.zero_point, -4, 127));
    }
    eko_qs8_add(N, a, 1, pa, b, 0, pb, y, py, -128, 127); /* b broadcast */
    for (int i = 0; i < N; i++) {
        const double v = ((double)pa.scale * (a[i] - pa.zero_point) +
                          (double)pb.scale * (b[0] - pb.zero_point)) / py.scale;
        count(&t, y[i], ref_requant(v, py.zero_point, -128, 127));
    }
    CHECK_MSG(t.wrong == 0 && t.off_by_one * 100 <= (int)t.elements, "add: %d wrong, %d off by one",
              t.wrong, t.off_by_one);

    /* subtraction: b's scale negated; multiplication, contiguous and broadcast */
    const eko_qs8_params nb = {-pb.scale, pb.zero_point};
    t = (tally){0, 0, 0, 0};
    eko_qs8_add(N, a, 1, pa, b, 1, nb, y, py, -128, 127);
    for (int i = 0; i < N; i++) {
        const double v = ((double)pa.scale * (a[i] - pa.zero_point) -
                          (double)pb.scale * (b[i] - pb.zero_point)) / py.scale;
        count(&t, y[i], ref_requant(v, py.zero_point, -128, 127));
    }
    const eko_qs8_params pm = {0.02f, 7};
    for (size_t inc_b = 0; inc_b < 2; inc_b++) {
        eko_qs8_mul(N, a, 1, pa, b, inc_b, pb, y, pm, -100, 120);
        for (int i = 0; i < N; i++) {
            const double v = (double)pa.scale * (a[i] - pa.zero_point) * (double)pb.scale *
                             (b[i * inc_b] - pb.zero_point) / pm.scale;
            count(&t, y[i], ref_requant(v, pm.zero_point, -100, 120));
        }
    }
    CHECK_MSG(t.wrong == 0 && t.off_by_one * 100 <= (int)t.elements,
              "sub, mul: %d wrong, %d off by one", t.wrong, t.off_by_one);

    /* conversions: round trip within half a step; ties to even; NaN, infinities saturate */
    for (int i = 0; i < N; i++) f[i] = (float)((int)(rng_bits() % 4000) - 2000) * 0.01f;
    f[0] = NAN, f[1] = INFINITY, f[2] = -INFINITY, f[3] = 0.25f, f[4] = 0.75f;
    const eko_qs8_params pq = {0.5f, 10};
    eko_qs8_quantize(N, f, y, pq);
    CHECK(y[0] == 10 && y[1] == 127 && y[2] == -128);
    CHECK(y[3] == 10 && y[4] == 12); /* 0.5 -> 0, 1.5 -> 2 (ties to even) */
    eko_qs8_dequantize(N, y, back, pq);
    bool ok = true;
    for (int i = 5; i < N; i++) {
        const float lo = (-128 - 10) * 0.5f, hi = (127 - 10) * 0.5f;
        const float clamped = f[i] < lo ? lo : f[i] > hi ? hi : f[i];
        ok = ok && fabsf(back[i] - clamped) <= 0.25f + 1e-6f;
    }
    CHECK_MSG(ok, "quantize / dequantize round trip");

    /* max pooling 2x2 stride 2 with padding 1 on [1, 5, 5, 3], clamped */
    eko_qs8_window win = {5, 5, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1};
    int8_t img[75], out[27];
    for (int i = 0; i < 75; i++) img[i] = irand8();
    eko_qs8_maxpool(&win, img, out, 0, 3, -128, 100);
    ok = true;
    for (int oy = 0; oy < 3; oy++)
        for (int ox = 0; ox < 3; ox++)
            for (int ch = 0; ch < 3; ch++) {
                int m = -128;
                for (int ky = 0; ky < 2; ky++)
                    for (int kx = 0; kx < 2; kx++) {
                        const int iy = oy * 2 + ky - 1, ix = ox * 2 + kx - 1;
                        if (iy < 0 || ix < 0 || iy >= 5 || ix >= 5) continue;
                        const int v = img[(iy * 5 + ix) * 3 + ch];
                        m = v > m ? v : m;
                    }
                m = m > 100 ? 100 : m;
                ok = ok && out[(oy * 3 + ox) * 3 + ch] == m;
            }
    CHECK_MSG(ok, "max pooling");

    /* global average over 2 images of [7, 70] */
    int8_t gx[2 * 7 * 70], gy[2 * 70];
    for (size_t i = 0; i < sizeof gx; i++) gx[i] = irand8();
    const eko_qs8_params gpx = {0.1f, -3}, gpy = {0.07f, 6};
    eko_qs8_global_avgpool(2, 7, 70, gx, gpx, gy, gpy, -128, 127);
    tally tg = {0, 0, 0, 0};
    for (int img2 = 0; img2 < 2; img2++)
        for (int ch = 0; ch < 70; ch++) {
            int64_t s = 0;
            for (int p = 0; p < 7; p++) s += gx[(img2 * 7 + p) * 70 + ch] - gpx.zero_point;
            const double v = (double)s * gpx.scale / (7.0 * gpy.scale);
            count(&tg, gy[img2 * 70 + ch], ref_requant(v, gpy.zero_point, -128, 127));
        }
    CHECK_MSG(tg.wrong == 0 && tg.off_by_one <= 1, "global average: %d wrong, %d off by one",
              tg.wrong, tg.off_by_one);

    /* ties: a mean of 4 pixels quantized as its input (the quantizer shares
     * them) is often x.5; XNNPACK adds the output's zero point before it
     * rounds to even, so an odd zero point rounds those ties to odd means */
    int8_t tx[4 * 64], ty[64];
    for (size_t i = 0; i < sizeof tx; i++) tx[i] = irand8();
    const eko_qs8_params tp = {0.0043f, -5};
    eko_qs8_global_avgpool(1, 4, 64, tx, tp, ty, tp, -128, 127);
    int tie_wrong = 0, ties = 0;
    for (int ch = 0; ch < 64; ch++) {
        int s4 = 0;
        for (int p = 0; p < 4; p++) s4 += tx[p * 64 + ch] - tp.zero_point;
        const double v = s4 / 4.0 + tp.zero_point; /* exact */
        double r = floor(v + 0.5);
        if (r - v == 0.5 && fmod(r, 2.0) != 0.0) r -= 1.0; /* ties to even */
        ties += fabs(v - floor(v) - 0.5) < 1e-9;
        const double want = r < -128 ? -128 : r > 127 ? 127 : r;
        tie_wrong += ty[ch] != (int8_t)want;
    }
    CHECK_MSG(tie_wrong == 0 && ties > 0, "global average ties: %d wrong of 64 (%d ties)",
              tie_wrong, ties);

    /* the magic-bias rounding: exact in [-2^22, 2^22] (ties to even), and
     * defined, if unspecified, for any other float (the int8 gemm rounds a
     * whole panel row, whose unwritten lanes hold whatever the stack held) */
    CHECK(eko_round_small(2.5f) == 2 && eko_round_small(-2.5f) == -2 &&
          eko_round_small(3.5f) == 4 && eko_round_small(-4194304.0f) == -4194304 &&
          eko_round_small(4194304.0f) == 4194304);
    const float wild[] = {-3.0e9f, 3.0e9f, -INFINITY, INFINITY, NAN, -1.0e38f, 1.0e38f};
    int32_t sink = 0;
    for (size_t i = 0; i < sizeof wild / sizeof wild[0]; i++) sink ^= eko_round_small(wild[i]);
    CHECK_MSG(sink == sink, "rounding of out-of-range floats");

    /* the fused range in output steps, as XNNPACK rounds it */
    int32_t lo, hi;
    eko_qs8_range((eko_qs8_params){0.5f, -3}, 0.0f, INFINITY, &lo, &hi);
    CHECK(lo == -3 && hi == 127);
    eko_qs8_range((eko_qs8_params){0.5f, -3}, -1000.0f, 6.0f, &lo, &hi);
    CHECK(lo == -128 && hi == 9);
}

int main(void) {
    rng_seed(7);
    ember_threadpool *pool2 = NULL;
    CHECK_OK(ember_threadpool_create(2, &pool2));
    ember_threadpool_set_grain(pool2, 1); /* split even the small cases */
    for (size_t i = 0; eko_qd8_gemm_config_at(i) != NULL; i++)
        test_gemm(eko_qd8_gemm_config_at(i), pool2);
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) {
        const eko_qs8_dwconv *kernel = eko_qs8_dwconv_for((eko_isa)isa);
        if (kernel != NULL && eko_isa_supported((eko_isa)isa)) {
            test_dwconv(kernel);
            test_dwconv_levels(kernel);
        }
        const eko_qs8_elt *elt = eko_qs8_elt_for((eko_isa)isa);
        if (elt != NULL && eko_isa_supported((eko_isa)isa)) test_elt_levels(elt);
    }
    test_elementwise();
    ember_threadpool_destroy(pool2);
    return check_finish();
}
