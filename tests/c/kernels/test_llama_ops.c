/*
 * test_llama_ops.c — ExecuTorch's LLM operators as portable kernels:
 * llama::custom_sdpa.out, llama::sdpa_with_kv_cache.out,
 * llama::update_cache.out and llama::update_cache_with_indices.out, and
 * llama::custom_quantized_sdpa.out (int8 rows with per-row scales and zero
 * points, both layouts, against the double reference on the dequantized rows).
 *
 * Numerics against a reference computed here in double from ExecuTorch's
 * definition (caches (B, L, Hkv, D), sequence at dim 1; query head h reads
 * kv head h / (H / Hkv); causal rows see [0, start_pos + t]; without
 * is_causal every row sees [0, start_pos + S); a float mask (S, L) is added
 * to the scaled scores and then all L positions are read). Shapes: heads
 * 1..12 with grouped-query attention, head sizes 1, 7, 64, 80, positions at
 * 0, in the middle and at the end of the cache, one and several query rows,
 * batch 2, explicit scale; float16 / bfloat16 / float64; decode steps equal
 * one prefill; empty tensors. Bad input gives a clean status and leaves the
 * caches alone:
 * start_pos out of range either way, seq_len too long, a mask together with
 * is_causal, dropout, head counts that do not divide, wrong shapes and
 * dtypes, aliased caches, indices out of range, exhausted scratch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/kernel.h"
#define KC_SCRATCH_BYTES (1 << 18)
#include "kernel_call.h"

/* ------------------------------------------------------------------------ */
/* Reference (double)                                                        */
/* ------------------------------------------------------------------------ */

/* out (B, S, H, D) from q (B, S, H, D) and caches (B, L, Hkv, D). */
static void reference(double *out, const double *q, const double *kc, const double *vc, int nb,
                      int nq, int nh, int nkvh, int d, int len, int pos, bool causal,
                      const double *mask, double scale) {
    double *w = malloc(sizeof(double) * (size_t)len);
    const int reps = nh / nkvh;
    for (int b = 0; b < nb; b++)
        for (int t = 0; t < nq; t++)
            for (int h = 0; h < nh; h++) {
                const double *qr = q + (((size_t)b * nq + t) * nh + h) * d;
                int n = mask != NULL ? len : causal ? pos + t + 1 : pos + nq;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < n; j++) {
                    const double *kr = kc + (((size_t)b * len + j) * nkvh + h / reps) * d;
                    double s = 0;
                    for (int i = 0; i < d; i++) s += qr[i] * kr[i];
                    w[j] = s * scale + (mask != NULL ? mask[(size_t)t * len + j] : 0.0);
                    if (w[j] > mx) mx = w[j];
                }
                for (int j = 0; j < n; j++) sum += (w[j] = exp(w[j] - mx));
                double *o = out + (((size_t)b * nq + t) * nh + h) * d;
                for (int i = 0; i < d; i++) {
                    double acc = 0;
                    for (int j = 0; j < n; j++)
                        acc += w[j] * vc[(((size_t)b * len + j) * nkvh + h / reps) * d + i];
                    o[i] = acc / sum;
                }
            }
    free(w);
}

typedef struct problem {
    int nb, nq, nh, nkvh, d, len, pos;
    bool causal, mask, scale;
} problem;

/* Buffers of one problem, in float and in double. */
typedef struct bufs {
    size_t nqe, nne, nce;
    float *q, *k, *v, *kc, *vc, *out, *mask;
    double *dq, *dk, *dv, *dkc, *dvc, *dout, *dmask;
} bufs;

static void bufs_make(bufs *x, const problem *p) {
    x->nqe = (size_t)p->nb * p->nq * p->nh * p->d;
    x->nne = (size_t)p->nb * p->nq * p->nkvh * p->d;
    x->nce = (size_t)p->nb * p->len * p->nkvh * p->d;
    size_t nm = (size_t)p->nq * p->len;
    float **fs[] = {&x->q, &x->k, &x->v, &x->kc, &x->vc, &x->out, &x->mask};
    double **ds[] = {&x->dq, &x->dk, &x->dv, &x->dkc, &x->dvc, &x->dout, &x->dmask};
    size_t ns[] = {x->nqe, x->nne, x->nne, x->nce, x->nce, x->nqe, nm};
    for (size_t i = 0; i < 7; i++) {
        *fs[i] = calloc(ns[i] + 1, sizeof(float));
        *ds[i] = calloc(ns[i] + 1, sizeof(double));
        for (size_t j = 0; j < ns[i]; j++) (*ds[i])[j] = (*fs[i])[j] = rng_float();
    }
    for (size_t j = 0; j < nm; j += 3) x->dmask[j] = x->mask[j] = -INFINITY;
    for (int t = 0; t < p->nq; t++) x->dmask[(size_t)t * p->len] = x->mask[(size_t)t * p->len] = 0;
}

static void bufs_free(bufs *x) {
    float *fs[] = {x->q, x->k, x->v, x->kc, x->vc, x->out, x->mask};
    double *ds[] = {x->dq, x->dk, x->dv, x->dkc, x->dvc, x->dout, x->dmask};
    for (size_t i = 0; i < 7; i++) {
        free(fs[i]);
        free(ds[i]);
    }
}

/* k, v (B, S, Hkv, D) into caches (B, L, Hkv, D) at pos, in double. */
static void ref_update(double *cache, const double *x, int nb, int nq, int nkvh, int d, int len,
                       int pos) {
    size_t row = (size_t)nkvh * d;
    for (int b = 0; b < nb; b++)
        memcpy(cache + ((size_t)b * len + pos) * row, x + (size_t)b * nq * row,
               sizeof(double) * row * (size_t)nq);
}

/* ------------------------------------------------------------------------ */
/* float32 numerics                                                          */
/* ------------------------------------------------------------------------ */

static void run_custom_sdpa(const problem *p) {
    bufs x;
    bufs_make(&x, p);
    double scale = p->scale ? 0.3 : 1.0 / sqrt((double)p->d);
    reference(x.dout, x.dq, x.dkc, x.dvc, p->nb, p->nq, p->nh, p->nkvh, p->d, p->len, p->pos,
              p->causal, p->mask ? x.dmask : NULL, scale);
    tt q, kc, vc, m, out;
    const int32_t ms[2] = {p->nq, p->len};
    ember_value sp = kt_int(p->mask ? 0 : p->pos), dp = kt_double(0.0), ca = kt_bool(p->causal),
                sc = p->scale ? kt_double(0.3) : kt_none(), none = kt_none();
    ember_value *args[10] = {tt_4d(&q, EMBER_FLOAT32, p->nb, p->nq, p->nh, p->d, x.q, false),
                             tt_4d(&kc, EMBER_FLOAT32, p->nb, p->len, p->nkvh, p->d, x.kc, false),
                             tt_4d(&vc, EMBER_FLOAT32, p->nb, p->len, p->nkvh, p->d, x.vc, false),
                             &sp,
                             p->mask ? tt_init(&m, EMBER_FLOAT32, ms, 2, x.mask,
                                               sizeof(float) * (size_t)ms[0] * ms[1], false, NULL)
                                     : &none,
                             &dp,
                             &ca,
                             &sc,
                             tt_4d(&out, EMBER_FLOAT32, p->nb, p->nq, p->nh, p->d, x.out, true),
                             &out.v};
    if (CHECK_OK(kc_call("llama::custom_sdpa.out", args, 10)))
        CHECK(close_fd(x.out, x.dout, x.nqe, 1e-5));
    bufs_free(&x);
}

static void run_sdpa_with_kv_cache(const problem *p) {
    bufs x;
    bufs_make(&x, p);
    double scale = p->scale ? 0.3 : 1.0 / sqrt((double)p->d);
    ref_update(x.dkc, x.dk, p->nb, p->nq, p->nkvh, p->d, p->len, p->pos);
    ref_update(x.dvc, x.dv, p->nb, p->nq, p->nkvh, p->d, p->len, p->pos);
    reference(x.dout, x.dq, x.dkc, x.dvc, p->nb, p->nq, p->nh, p->nkvh, p->d, p->len, p->pos,
              p->causal, p->mask ? x.dmask : NULL, scale);
    tt q, k, v, kc, vc, m, out;
    const int32_t ms[2] = {p->nq, p->len};
    ember_value sp = kt_int(p->pos), sl = kt_int(p->nq), dp = kt_double(0.0), ca = kt_bool(p->causal),
                sc = p->scale ? kt_double(0.3) : kt_none(), none = kt_none();
    ember_value *args[13] = {tt_4d(&q, EMBER_FLOAT32, p->nb, p->nq, p->nh, p->d, x.q, false),
                             tt_4d(&k, EMBER_FLOAT32, p->nb, p->nq, p->nkvh, p->d, x.k, false),
                             tt_4d(&v, EMBER_FLOAT32, p->nb, p->nq, p->nkvh, p->d, x.v, false),
                             tt_4d(&kc, EMBER_FLOAT32, p->nb, p->len, p->nkvh, p->d, x.kc, false),
                             tt_4d(&vc, EMBER_FLOAT32, p->nb, p->len, p->nkvh, p->d, x.vc, false),
                             &sp,
                             &sl,
                             p->mask ? tt_init(&m, EMBER_FLOAT32, ms, 2, x.mask,
                                               sizeof(float) * (size_t)ms[0] * ms[1], false, NULL)
                                     : &none,
                             &dp,
                             &ca,
                             &sc,
                             tt_4d(&out, EMBER_FLOAT32, p->nb, p->nq, p->nh, p->d, x.out, true),
                             &out.v};
    if (CHECK_OK(kc_call("llama::sdpa_with_kv_cache.out", args, 13))) {
        CHECK(close_fd(x.out, x.dout, x.nqe, 1e-5));
        CHECK(close_fd(x.kc, x.dkc, x.nce, 0.0));
        CHECK(close_fd(x.vc, x.dvc, x.nce, 0.0));
    }
    bufs_free(&x);
}

static void test_f32(void) {
    check_section("float32 over shapes");
    static const int heads[][2] = {{1, 1}, {4, 1}, {6, 3}, {12, 12}};
    static const int dims[] = {1, 7, 64, 80};
    static const int rows[] = {1, 4};
    const int len = 11;
    for (size_t hi = 0; hi < 4; hi++)
        for (size_t di = 0; di < 4; di++)
            for (size_t ri = 0; ri < 2; ri++) {
                int nq = rows[ri];
                const int poss[] = {0, (len - nq) / 2, len - nq};
                for (int pi = 0; pi < 3; pi++)
                    for (int variant = 0; variant < 4; variant++) {
                        problem p = {variant == 3 ? 2 : 1, nq, heads[hi][0], heads[hi][1],
                                     dims[di], len, poss[pi], variant != 1, variant == 2,
                                     variant == 3};
                        if (p.mask) p.causal = false;
                        run_custom_sdpa(&p);
                        run_sdpa_with_kv_cache(&p);
                    }
            }
}

/*
 * Decode steps after a prefill, through llama::update_cache and
 * llama::custom_sdpa as ExecuTorch's custom KV cache calls them, equal one
 * llama::sdpa_with_kv_cache prefill of the whole sequence.
 */
static void test_decode_matches_prefill(void) {
    check_section("update_cache + custom_sdpa steps = one sdpa_with_kv_cache prefill");
    enum { NH = 4, NKV = 2, D = 16, LEN = 12, N = 9, P = 3 };
    static float q[N * NH * D], k[N * NKV * D], v[N * NKV * D];
    static float kc1[LEN * NKV * D], vc1[LEN * NKV * D], kc2[LEN * NKV * D], vc2[LEN * NKV * D];
    static float full[N * NH * D], steps[N * NH * D], dummy[1];
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) q[i] = rng_float();
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        k[i] = rng_float();
        v[i] = rng_float();
    }
    ember_value dp = kt_double(0.0), ca = kt_bool(true), none = kt_none();
    {
        tt tq, tk, tv, tkc, tvc, to;
        ember_value sp = kt_int(0), sl = kt_int(N);
        ember_value *args[13] = {tt_4d(&tq, EMBER_FLOAT32, 1, N, NH, D, q, false),
                                 tt_4d(&tk, EMBER_FLOAT32, 1, N, NKV, D, k, false),
                                 tt_4d(&tv, EMBER_FLOAT32, 1, N, NKV, D, v, false),
                                 tt_4d(&tkc, EMBER_FLOAT32, 1, LEN, NKV, D, kc1, false),
                                 tt_4d(&tvc, EMBER_FLOAT32, 1, LEN, NKV, D, vc1, false),
                                 &sp,
                                 &sl,
                                 &none,
                                 &dp,
                                 &ca,
                                 &none,
                                 tt_4d(&to, EMBER_FLOAT32, 1, N, NH, D, full, true),
                                 &to.v};
        CHECK_OK(kc_call("llama::sdpa_with_kv_cache.out", args, 13));
    }
    for (int start = 0; start < N;) {
        int nt = start == 0 ? P : 1;
        tt tk, tv, tkc, tvc, tq, to, td;
        ember_value sp = kt_int(start);
        const int32_t one = 1;
        ember_value *ua[5] = {
            tt_4d(&tk, EMBER_FLOAT32, 1, nt, NKV, D, k + start * NKV * D, false),
            tt_4d(&tkc, EMBER_FLOAT32, 1, LEN, NKV, D, kc2, false), &sp,
            tt_init(&td, EMBER_FLOAT32, &one, 1, dummy, sizeof dummy, false, NULL), &td.v};
        CHECK_OK(kc_call("llama::update_cache.out", ua, 5));
        ua[0] = tt_4d(&tv, EMBER_FLOAT32, 1, nt, NKV, D, v + start * NKV * D, false);
        ua[1] = tt_4d(&tvc, EMBER_FLOAT32, 1, LEN, NKV, D, vc2, false);
        CHECK_OK(kc_call("llama::update_cache.out", ua, 5));
        ember_value *sa[10] = {tt_4d(&tq, EMBER_FLOAT32, 1, nt, NH, D, q + start * NH * D, false),
                               &tkc.v,
                               &tvc.v,
                               &sp,
                               &none,
                               &dp,
                               &ca,
                               &none,
                               tt_4d(&to, EMBER_FLOAT32, 1, P, NH, D, steps + start * NH * D, true),
                               &to.v};
        if (!CHECK_OK(kc_call("llama::custom_sdpa.out", sa, 10))) return;
        CHECK(to.t.sizes[1] == nt);
        start += nt;
    }
    bool same = true;
    for (size_t i = 0; i < sizeof full / sizeof *full; i++)
        if (fabsf(full[i] - steps[i]) > 1e-6f * (1.0f + fabsf(full[i]))) same = false;
    CHECK(same);
    CHECK(memcmp(kc1, kc2, sizeof kc1) == 0);
    CHECK(memcmp(vc1, vc2, sizeof vc1) == 0);
}

static void test_update_cache_with_indices(void) {
    check_section("update_cache_with_indices");
    enum { NB = 2, NT = 3, NH = 2, D = 5, LEN = 7 };
    static float val[NB * NT * NH * D], cache[NB * LEN * NH * D], want[NB * LEN * NH * D],
        dummy[1];
    for (size_t i = 0; i < sizeof val / sizeof *val; i++) val[i] = rng_float();
    for (size_t i = 0; i < sizeof cache / sizeof *cache; i++) want[i] = cache[i] = rng_float();
    int64_t idx[NB * NT] = {6, 0, 3, 2, 2, 5}; /* a repeated index: the later row wins */
    for (int b = 0; b < NB; b++)
        for (int t = 0; t < NT; t++)
            memcpy(want + ((size_t)b * LEN + idx[b * NT + t]) * NH * D,
                   val + ((size_t)b * NT + t) * NH * D, sizeof(float) * NH * D);
    tt tv, tc, ti, td;
    const int32_t is[2] = {NB, NT}, one = 1;
    ember_value sp = kt_int(12345); /* unused with indices */
    ember_value *args[6] = {tt_4d(&tv, EMBER_FLOAT32, NB, NT, NH, D, val, false),
                            tt_4d(&tc, EMBER_FLOAT32, NB, LEN, NH, D, cache, false),
                            &sp,
                            tt_init(&ti, EMBER_INT64, is, 2, idx, sizeof idx, false, NULL),
                            tt_init(&td, EMBER_FLOAT32, &one, 1, dummy, sizeof dummy, false, NULL),
                            &td.v};
    CHECK_OK(kc_call("llama::update_cache_with_indices.out", args, 6));
    CHECK(memcmp(cache, want, sizeof cache) == 0);
    idx[4] = LEN;
    CHECK_ERR(kc_call("llama::update_cache_with_indices.out", args, 6),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "index 7 (entry 4)");
    idx[4] = -1;
    CHECK_ERR(kc_call("llama::update_cache_with_indices.out", args, 6),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "index -1");
    CHECK(memcmp(cache, want, sizeof cache) == 0); /* nothing written on error */
    tt ti32;
    int32_t idx32[NB * NT] = {0};
    args[3] = tt_init(&ti32, EMBER_INT32, is, 2, idx32, sizeof idx32, false, NULL);
    CHECK_ERR(kc_call("llama::update_cache_with_indices.out", args, 6), EMBER_ERR_TYPE_MISMATCH,
              "int64");
}

/* ------------------------------------------------------------------------ */
/* Other dtypes                                                              */
/* ------------------------------------------------------------------------ */

static void test_dtypes(void) {
    enum { NQ = 3, NH = 4, NKV = 2, D = 9, LEN = 8, POS = 4 };
    enum { NQE = NQ * NH * D, NCE = LEN * NKV * D };
    static double dq[NQE], dkc[NCE], dvc[NCE], dout[NQE];
    for (size_t i = 0; i < NQE; i++) dq[i] = rng_float();
    for (size_t i = 0; i < NCE; i++) {
        dkc[i] = rng_float();
        dvc[i] = rng_float();
    }
    reference(dout, dq, dkc, dvc, 1, NQ, NH, NKV, D, LEN, POS, true, NULL, 1.0 / 3.0);
    const int dts[] = {EMBER_FLOAT64, EMBER_FLOAT16, EMBER_BFLOAT16};
    const double tols[] = {1e-12, 2e-3, 2e-2};
    for (int i = 0; i < 3; i++) {
        check_section(ember_dtype_name(dts[i]));
        size_t es = ember_dtype_size(dts[i]);
        static uint8_t q[NQE * 8], kc[NCE * 8], vc[NCE * 8], out[NQE * 8];
        /* inputs rounded to the dtype, so only the computation's error remains */
        double rq[NQE], rkc[NCE], rvc[NCE], rout[NQE];
        for (size_t j = 0; j < NQE + 2 * NCE; j++) {
            double x = j < NQE ? dq[j] : j < NQE + NCE ? dkc[j - NQE] : dvc[j - NQE - NCE];
            uint8_t *dst = j < NQE ? q + j * es : j < NQE + NCE ? kc + (j - NQE) * es
                                                                : vc + (j - NQE - NCE) * es;
            double r;
            if (dts[i] == EMBER_FLOAT64) {
                memcpy(dst, &x, 8);
                r = x;
            } else {
                uint16_t h = dts[i] == EMBER_FLOAT16 ? ember_float_to_half((float)x)
                                                      : ember_float_to_bf16((float)x);
                memcpy(dst, &h, 2);
                r = dts[i] == EMBER_FLOAT16 ? ember_half_to_float(h) : ember_bf16_to_float(h);
            }
            if (j < NQE)
                rq[j] = r;
            else if (j < NQE + NCE)
                rkc[j - NQE] = r;
            else
                rvc[j - NQE - NCE] = r;
        }
        reference(rout, rq, rkc, rvc, 1, NQ, NH, NKV, D, LEN, POS, true, NULL, 1.0 / 3.0);
        tt tq, tkc, tvc, to;
        ember_value sp = kt_int(POS), dp = kt_double(0.0), ca = kt_bool(true), sc = kt_double(1.0 / 3.0),
                    none = kt_none();
        ember_value *args[10] = {tt_4d(&tq, dts[i], 1, NQ, NH, D, q, false),
                                 tt_4d(&tkc, dts[i], 1, LEN, NKV, D, kc, false),
                                 tt_4d(&tvc, dts[i], 1, LEN, NKV, D, vc, false),
                                 &sp,
                                 &none,
                                 &dp,
                                 &ca,
                                 &sc,
                                 tt_4d(&to, dts[i], 1, NQ, NH, D, out, true),
                                 &to.v};
        if (!CHECK_OK(kc_call("llama::custom_sdpa.out", args, 10))) continue;
        bool ok = true;
        for (size_t j = 0; j < NQE; j++) {
            double got;
            if (dts[i] == EMBER_FLOAT64) {
                memcpy(&got, out + j * 8, 8);
            } else {
                uint16_t h;
                memcpy(&h, out + j * 2, 2);
                got = dts[i] == EMBER_FLOAT16 ? ember_half_to_float(h) : ember_bf16_to_float(h);
            }
            if (!(fabs(got - rout[j]) <= tols[i] * (1.0 + fabs(rout[j])))) {
                printf("  element %zu: %.9g vs %.9g\n", j, got, rout[j]);
                ok = false;
                break;
            }
        }
        CHECK(ok);
    }
}

/* ------------------------------------------------------------------------ */
/* Bad input                                                                 */
/* ------------------------------------------------------------------------ */

enum { EB = 1, EQ = 2, EH = 4, EKV = 2, ED = 8, EL = 6 };
static float e_q[EB * EQ * EH * ED], e_k[EB * EQ * EKV * ED], e_v[EB * EQ * EKV * ED];
static float e_kc[EB * EL * EKV * ED], e_vc[EB * EL * EKV * ED], e_out[EB * EQ * EH * ED];
static float e_mask[EQ * EL];

/* llama::sdpa_with_kv_cache with one thing changed by the caller. */
typedef struct kv_call {
    tt q, k, v, kc, vc, m, out;
    ember_value sp, sl, mask, dp, ca, sc;
    ember_value *args[13];
} kv_call;

static void kv_call_init(kv_call *c) {
    c->sp = kt_int(2);
    c->sl = kt_int(EQ);
    c->mask = kt_none();
    c->dp = kt_double(0.0);
    c->ca = kt_bool(true);
    c->sc = kt_none();
    ember_value *a[13] = {tt_4d(&c->q, EMBER_FLOAT32, EB, EQ, EH, ED, e_q, false),
                          tt_4d(&c->k, EMBER_FLOAT32, EB, EQ, EKV, ED, e_k, false),
                          tt_4d(&c->v, EMBER_FLOAT32, EB, EQ, EKV, ED, e_v, false),
                          tt_4d(&c->kc, EMBER_FLOAT32, EB, EL, EKV, ED, e_kc, false),
                          tt_4d(&c->vc, EMBER_FLOAT32, EB, EL, EKV, ED, e_vc, false),
                          &c->sp,
                          &c->sl,
                          &c->mask,
                          &c->dp,
                          &c->ca,
                          &c->sc,
                          tt_4d(&c->out, EMBER_FLOAT32, EB, EQ, EH, ED, e_out, true),
                          &c->out.v};
    memcpy(c->args, a, sizeof a);
}

static void test_errors(void) {
    check_section("errors");
    static float kc0[sizeof e_kc / sizeof *e_kc];
    for (size_t i = 0; i < sizeof e_kc / sizeof *e_kc; i++) kc0[i] = e_kc[i] = rng_float();
    const char *K = "llama::sdpa_with_kv_cache.out";
    kv_call c;
    kv_call_init(&c);
    CHECK_OK(kc_call(K, c.args, 13));
    memcpy(kc0, e_kc, sizeof kc0);

    /* start_pos out of range: negative, at the end, rows past the end */
    const int64_t bad_pos[] = {-1, EL, EL - 1, 1000000000000LL};
    for (size_t i = 0; i < 4; i++) {
        kv_call_init(&c);
        c.sp = kt_int(bad_pos[i]);
        CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_DATA_OUT_OF_BOUNDS, "start_pos");
    }
    kv_call_init(&c);
    c.sl = kt_int(EL);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_DATA_OUT_OF_BOUNDS, "seq_len 6");
    kv_call_init(&c);
    tt m;
    const int32_t ms[2] = {EQ, EL};
    c.args[7] = tt_init(&m, EMBER_FLOAT32, ms, 2, e_mask, sizeof e_mask, false, NULL);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_INVALID_ARGUMENT, "attn_mask and is_causal");
    c.ca = kt_bool(false);
    CHECK_OK(kc_call(K, c.args, 13));
    memcpy(kc0, e_kc, sizeof kc0);
    const int32_t ms_bad[2] = {EQ, EL - 1};
    c.args[7] = tt_init(&m, EMBER_FLOAT32, ms_bad, 2, e_mask, sizeof e_mask, false, NULL);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_SHAPE_MISMATCH, "attn_mask must be (2, 6)");
    c.args[7] = tt_init(&m, EMBER_INT64, ms, 2, e_mask, sizeof e_mask, false, NULL);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_TYPE_MISMATCH, "float tensor");
    kv_call_init(&c);
    c.dp = kt_double(0.5);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_NOT_SUPPORTED, "drpout_p");
    kv_call_init(&c);
    tt_4d(&c.q, EMBER_FLOAT32, EB, EQ, 3, ED, e_q, false); /* 3 heads, 2 kv heads */
    tt_4d(&c.out, EMBER_FLOAT32, EB, EQ, 3, ED, e_out, true);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_SHAPE_MISMATCH, "not a multiple");
    kv_call_init(&c);
    tt_4d(&c.k, EMBER_FLOAT32, EB, EQ, EKV, ED - 1, e_k, false);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_SHAPE_MISMATCH, "key must be (1, 2, 2, 8)");
    kv_call_init(&c);
    tt_4d(&c.vc, EMBER_FLOAT32, EB, EL - 1, EKV, ED, e_vc, false);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_SHAPE_MISMATCH, "value_cache");
    kv_call_init(&c);
    tt_4d(&c.kc, EMBER_FLOAT16, EB, EL, EKV, ED, e_kc, false);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_TYPE_MISMATCH, "key_cache is float16");
    kv_call_init(&c);
    const int32_t s3[3] = {EQ, EH, ED};
    tt_init(&c.q, EMBER_FLOAT32, s3, 3, e_q, sizeof e_q, false, NULL);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_SHAPE_MISMATCH, "query must be 4-d");
    kv_call_init(&c);
    tt_4d(&c.q, EMBER_INT32, EB, EQ, EH, ED, e_q, false);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_NOT_SUPPORTED, "float types only");
    kv_call_init(&c);
    c.args[4] = &c.kc.v;
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_INVALID_PROGRAM, "same tensor");
    kv_call_init(&c);
    c.args[11] = c.args[12] = &c.kc.v;
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_INVALID_PROGRAM, "cache is also argument");
    kv_call_init(&c);
    CHECK_ERR(kc_call(K, c.args, 12), EMBER_ERR_INVALID_PROGRAM, "");
    kv_call_init(&c);
    c.sp = kt_double(1.0);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_INVALID_PROGRAM, "Int");
    CHECK(memcmp(kc0, e_kc, sizeof kc0) == 0); /* no failed call wrote the cache */

    /* custom_sdpa: start_pos + rows past the cache, a negative one */
    const char *C = "llama::custom_sdpa.out";
    kv_call_init(&c);
    ember_value *ca[10] = {&c.q.v, &c.kc.v, &c.vc.v, &c.sp, &c.mask, &c.dp, &c.ca, &c.sc,
                           &c.out.v, &c.out.v};
    c.sp = kt_int(EL - 1);
    CHECK_ERR(kc_call(C, ca, 10), EMBER_ERR_DATA_OUT_OF_BOUNDS, "start_pos 5 with 2 query rows");
    c.sp = kt_int(-3);
    CHECK_ERR(kc_call(C, ca, 10), EMBER_ERR_DATA_OUT_OF_BOUNDS, "start_pos -3");
    c.sp = kt_int(EL - EQ);
    CHECK_OK(kc_call(C, ca, 10));
    ca[8] = ca[9] = &c.kc.v;
    CHECK_ERR(kc_call(C, ca, 10), EMBER_ERR_INVALID_PROGRAM, "out is also one of the inputs");

    /* update_cache */
    const char *U = "llama::update_cache.out";
    static float dummy[1];
    tt td;
    const int32_t one = 1;
    ember_value sp = kt_int(EL - EQ + 1);
    ember_value *ua[5] = {&c.k.v, &c.kc.v, &sp,
                          tt_init(&td, EMBER_FLOAT32, &one, 1, dummy, sizeof dummy, false, NULL),
                          &td.v};
    memcpy(kc0, e_kc, sizeof kc0);
    CHECK_ERR(kc_call(U, ua, 5), EMBER_ERR_DATA_OUT_OF_BOUNDS, "start_pos 5 with 2 new rows");
    sp = kt_int(-1);
    CHECK_ERR(kc_call(U, ua, 5), EMBER_ERR_DATA_OUT_OF_BOUNDS, "start_pos -1");
    sp = kt_int(0);
    ua[0] = &c.q.v; /* 4 heads into a cache of 2 */
    CHECK_ERR(kc_call(U, ua, 5), EMBER_ERR_SHAPE_MISMATCH, "differ outside dim 1");
    ua[0] = &c.kc.v;
    CHECK_ERR(kc_call(U, ua, 5), EMBER_ERR_INVALID_PROGRAM, "same tensor");
    tt kh;
    ua[0] = tt_4d(&kh, EMBER_FLOAT16, EB, EQ, EKV, ED, e_k, false);
    CHECK_ERR(kc_call(U, ua, 5), EMBER_ERR_TYPE_MISMATCH, "value is float16");
    CHECK(memcmp(kc0, e_kc, sizeof kc0) == 0);
    ua[0] = &c.k.v;
    CHECK_OK(kc_call(U, ua, 5));
    CHECK(memcmp(e_kc, e_k, sizeof e_k) == 0); /* rows 0, 1 of batch 0 */

    /* empty tensors: nothing to copy, nothing to compute */
    check_section("empty");
    tt e0, e1, e2, e3;
    ember_value sp0 = kt_int(0);
    ember_value *ea[5] = {tt_4d(&e0, EMBER_FLOAT32, 0, EQ, EKV, ED, e_k, false),
                          tt_4d(&e1, EMBER_FLOAT32, 0, EL, EKV, ED, e_kc, false), &sp0, &td.v,
                          &td.v};
    CHECK_OK(kc_call(U, ea, 5));
    ea[0] = tt_4d(&e2, EMBER_FLOAT32, EB, EQ, EKV, 0, e_k, false);
    ea[1] = tt_4d(&e3, EMBER_FLOAT32, EB, EL, EKV, 0, e_kc, false);
    CHECK_OK(kc_call(U, ea, 5));
    kv_call_init(&c);
    tt_4d(&c.q, EMBER_FLOAT32, 0, EQ, EH, ED, e_q, false);
    tt_4d(&c.k, EMBER_FLOAT32, 0, EQ, EKV, ED, e_k, false);
    tt_4d(&c.v, EMBER_FLOAT32, 0, EQ, EKV, ED, e_v, false);
    tt_4d(&c.kc, EMBER_FLOAT32, 0, EL, EKV, ED, e_kc, false);
    tt_4d(&c.vc, EMBER_FLOAT32, 0, EL, EKV, ED, e_vc, false);
    tt_4d(&c.out, EMBER_FLOAT32, 0, EQ, EH, ED, e_out, true);
    CHECK_OK(kc_call(K, c.args, 13));
    CHECK(c.out.t.sizes[0] == 0);

    /* scratch too small for a row of scores */
    check_section("scratch exhausted");
    kc_set_scratch(16);
    kv_call_init(&c);
    CHECK_ERR(kc_call(K, c.args, 13), EMBER_ERR_OUT_OF_MEMORY, "scratch");
    kc_set_scratch(KC_SCRATCH_BYTES);
}

/* ------------------------------------------------------------------------ */
/* llama::custom_quantized_sdpa (int8 rows, per-row scales and zero points)  */
/* ------------------------------------------------------------------------ */

enum { QB = 1, QS = 3, QH = 4, QKV = 2, QD = 8, QL = 10 };

typedef struct qcase {
    int8_t q[QB * QS * QH * QD], k[QB * QL * QKV * QD], v[QB * QL * QKV * QD];
    float qs[QB * QS * QH], ks[QB * QL * QKV], vs[QB * QL * QKV];
    int8_t qz[QB * QS * QH], kz[QB * QL * QKV], vz[QB * QL * QKV];
    float mask[QS * QL], out[QB * QS * QH * QD];
} qcase;

static void qcase_fill(qcase *c) {
    int8_t *bytes[] = {c->q, c->k, c->v, c->qz, c->kz, c->vz};
    size_t sizes[] = {sizeof c->q, sizeof c->k, sizeof c->v, sizeof c->qz, sizeof c->kz,
                      sizeof c->vz};
    for (size_t i = 0; i < 6; i++)
        for (size_t j = 0; j < sizes[i]; j++)
            bytes[i][j] = (int8_t)((int)(rng_bits() % 256) - 128);
    float *scales[] = {c->qs, c->ks, c->vs};
    size_t n[] = {QB * QS * QH, QB * QL * QKV, QB * QL * QKV};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < n[i]; j++) scales[i][j] = 0.002f + 0.01f * (float)(rng_bits() % 100) / 100;
    for (size_t j = 0; j < QS * QL; j++) c->mask[j] = j % 3 == 1 ? -INFINITY : 0.1f * (float)(j % 5);
}

/* The dequantized rows in double, then reference(): the exact products of
 * the dequantized rows are the kernel's integer products times the scales. */
static void qcase_reference(const qcase *c, int pos, bool causal, bool mask, double *out) {
    double q[QB * QS * QH * QD], k[QB * QL * QKV * QD], v[QB * QL * QKV * QD], m[QS * QL];
    for (int i = 0; i < QB * QS * QH * QD; i++) q[i] = ((double)c->q[i] - c->qz[i / QD]) * c->qs[i / QD];
    for (int i = 0; i < QB * QL * QKV * QD; i++) {
        k[i] = ((double)c->k[i] - c->kz[i / QD]) * c->ks[i / QD];
        v[i] = ((double)c->v[i] - c->vz[i / QD]) * c->vs[i / QD];
    }
    for (int i = 0; i < QS * QL; i++) m[i] = c->mask[i];
    reference(out, q, k, v, QB, QS, QH, QKV, QD, QL, pos, causal, mask ? m : NULL,
              1.0 / sqrt((double)QD));
}

/* Calls the kernel; seq_at_2 lays every tensor out as (B, H, S, X). */
static ember_status qcall(qcase *c, int pos, bool causal, bool mask, bool seq_at_2, int q_dtype,
                          bool drop_k_scales) {
    tt q, k, v, qs, ks, vs, qz, kz, vz, m, out;
    const int hq = seq_at_2 ? QH : QS, sq = seq_at_2 ? QS : QH;
    const int hk = seq_at_2 ? QKV : QL, sk = seq_at_2 ? QL : QKV;
    ember_value sp = kt_int(pos), dp = kt_double(0.0), ca = kt_bool(causal), none = kt_none(),
                s2 = kt_bool(seq_at_2);
    ember_value *args[17] = {
        tt_init(&q, q_dtype, DIMS(QB, hq, sq, QD), c->q, sizeof c->q, false, NULL),
        tt_init(&k, EMBER_INT8, DIMS(QB, hk, sk, QD), c->k, sizeof c->k, false, NULL),
        tt_init(&v, EMBER_INT8, DIMS(QB, hk, sk, QD), c->v, sizeof c->v, false, NULL),
        &sp,
        mask ? tt_init(&m, EMBER_FLOAT32, DIMS(QS, QL), c->mask, sizeof c->mask, false, NULL)
             : &none,
        &dp, &ca, &none,
        tt_init(&qz, EMBER_INT8, DIMS(QB, hq, sq, 1), c->qz, sizeof c->qz, false, NULL),
        tt_init(&qs, EMBER_FLOAT32, DIMS(QB, hq, sq, 1), c->qs, sizeof c->qs, false, NULL),
        tt_init(&kz, EMBER_INT8, DIMS(QB, hk, sk, 1), c->kz, sizeof c->kz, false, NULL),
        drop_k_scales ? &none
                      : tt_init(&ks, EMBER_FLOAT32, DIMS(QB, hk, sk, 1), c->ks, sizeof c->ks,
                                false, NULL),
        tt_init(&vz, EMBER_INT8, DIMS(QB, hk, sk, 1), c->vz, sizeof c->vz, false, NULL),
        tt_init(&vs, EMBER_FLOAT32, DIMS(QB, hk, sk, 1), c->vs, sizeof c->vs, false, NULL),
        &s2,
        tt_init(&out, EMBER_FLOAT32, DIMS(QB, hq, sq, QD), c->out, sizeof c->out, true, NULL),
        &out.v};
    return kc_call("llama::custom_quantized_sdpa.out", args, 17);
}

/* (B, S, H, X) -> (B, H, S, X) of n-byte elements, one batch. */
static void to_seq_at_2(void *dst, const void *src, int s, int h, int x, size_t n) {
    for (int i = 0; i < s; i++)
        for (int j = 0; j < h; j++)
            memcpy((char *)dst + (((size_t)j * s + i) * x) * n,
                   (const char *)src + (((size_t)i * h + j) * x) * n, (size_t)x * n);
}

static void test_quantized_sdpa(void) {
    check_section("llama::custom_quantized_sdpa");
    static qcase c, t;
    double want[QB * QS * QH * QD];
    qcase_fill(&c);
    const struct { int pos; bool causal, mask; } cases[] = {
        {0, true, false}, {4, true, false}, {7, true, false}, {4, false, false}, {0, false, true}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qcase_reference(&c, cases[i].pos, cases[i].causal, cases[i].mask, want);
        if (CHECK_OK(qcall(&c, cases[i].pos, cases[i].causal, cases[i].mask, false, EMBER_INT8,
                           false)))
            CHECK_MSG(close_fd(c.out, want, QB * QS * QH * QD, 1e-5), "case %zu", i);
        /* the same rows laid out (B, H, S, D): the same numbers, transposed */
        t = c;
        to_seq_at_2(t.q, c.q, QS, QH, QD, 1);
        to_seq_at_2(t.qz, c.qz, QS, QH, 1, 1);
        to_seq_at_2(t.qs, c.qs, QS, QH, 1, 4);
        to_seq_at_2(t.k, c.k, QL, QKV, QD, 1);
        to_seq_at_2(t.kz, c.kz, QL, QKV, 1, 1);
        to_seq_at_2(t.ks, c.ks, QL, QKV, 1, 4);
        to_seq_at_2(t.v, c.v, QL, QKV, QD, 1);
        to_seq_at_2(t.vz, c.vz, QL, QKV, 1, 1);
        to_seq_at_2(t.vs, c.vs, QL, QKV, 1, 4);
        if (CHECK_OK(qcall(&t, cases[i].pos, cases[i].causal, cases[i].mask, true, EMBER_INT8,
                           false))) {
            float back[QB * QS * QH * QD];
            for (int s = 0; s < QS; s++) /* (H, S, D) -> (S, H, D) */
                for (int h = 0; h < QH; h++)
                    memcpy(back + ((size_t)s * QH + h) * QD, t.out + ((size_t)h * QS + s) * QD,
                           sizeof(float) * QD);
            CHECK_MSG(close_fd(back, want, QB * QS * QH * QD, 1e-5), "case %zu, seq at dim 2", i);
        }
    }
    /* bad input: a float query, a missing scale, rows past the cache */
    CHECK_ERR(qcall(&c, 0, true, false, false, EMBER_FLOAT32, false), EMBER_ERR_TYPE_MISMATCH,
              "query must be int8");
    CHECK_ERR(qcall(&c, 0, true, false, false, EMBER_INT8, true), EMBER_ERR_INVALID_ARGUMENT,
              "key scales and zero points");
    CHECK_ERR(qcall(&c, QL - QS + 1, true, false, false, EMBER_INT8, false),
              EMBER_ERR_DATA_OUT_OF_BOUNDS, "does not fit");
    CHECK_ERR(qcall(&c, -1, true, false, false, EMBER_INT8, false), EMBER_ERR_DATA_OUT_OF_BOUNDS,
              "does not fit");
    CHECK_ERR(qcall(&c, 0, true, true, false, EMBER_INT8, false), EMBER_ERR_INVALID_ARGUMENT,
              "cannot both be set");
}

int main(void) {
    kc_init();
    rng_seed(99);
    test_f32();
    test_decode_matches_prefill();
    test_update_cache_with_indices();
    test_dtypes();
    test_errors();
    test_quantized_sdpa();
    return check_finish();
}
