/*
 * test_sdpa_with_kv_cache.c — the fused attention-with-KV-cache kernel
 * (ember::sdpa_with_kv_cache.out).
 *
 * Numerics are compared with a plain reference computed here in double:
 * append k and v to copies of the caches, then for every query a full
 * softmax over the visible positions. Covered: prefill (T > 1) at offset 0
 * and later, one-token decode steps that together must equal one prefill of
 * the whole sequence, head sizes below and above the unrolled width, an
 * explicit scale, int32 start_pos, float64 / float16 / bfloat16. Bad input
 * gives a clean status: start_pos out of range (the data-dependent check),
 * wrong dtypes and shapes, aliased arguments, a read-only cache, an output
 * too small, exhausted scratch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/kernel.h"
#include "kernel_call.h"

#define KEY "ember::sdpa_with_kv_cache.out"

/* ------------------------------------------------------------------------ */
/* Reference                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * In double: kc/vc (nb, nh, len, d) get k/v (nb, nt, nh, d) at [pos, pos+nt);
 * out (nb, nt, nh, d) = causal softmax attention over [0, pos + t].
 */
static void reference(double *out, const double *q, const double *k, const double *v, double *kc,
                      double *vc, int nb, int nt, int nh, int d, int len, int pos, double scale) {
    for (int b = 0; b < nb; b++)
        for (int t = 0; t < nt; t++)
            for (int h = 0; h < nh; h++)
                for (int i = 0; i < d; i++) {
                    size_t src = (((size_t)b * nt + t) * nh + h) * d + i;
                    size_t dst = (((size_t)b * nh + h) * len + pos + t) * d + i;
                    kc[dst] = k[src];
                    vc[dst] = v[src];
                }
    double w[256];
    for (int b = 0; b < nb; b++)
        for (int t = 0; t < nt; t++)
            for (int h = 0; h < nh; h++) {
                const double *qr = q + (((size_t)b * nt + t) * nh + h) * d;
                const double *kh = kc + ((size_t)b * nh + h) * len * d;
                const double *vh = vc + ((size_t)b * nh + h) * len * d;
                int n = pos + t + 1;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < n; j++) {
                    double s = 0;
                    for (int i = 0; i < d; i++) s += qr[i] * kh[j * d + i];
                    w[j] = s * scale;
                    if (w[j] > mx) mx = w[j];
                }
                for (int j = 0; j < n; j++) sum += (w[j] = exp(w[j] - mx));
                double *o = out + (((size_t)b * nt + t) * nh + h) * d;
                for (int i = 0; i < d; i++) {
                    double acc = 0;
                    for (int j = 0; j < n; j++) acc += w[j] * vh[j * d + i];
                    o[i] = acc / sum;
                }
            }
}

/* ------------------------------------------------------------------------ */
/* float32 numerics                                                          */
/* ------------------------------------------------------------------------ */

#define MAXN 4096

static float fq[MAXN], fk[MAXN], fv[MAXN], fkc[MAXN], fvc[MAXN], fout[MAXN];
static double dq[MAXN], dk[MAXN], dv[MAXN], dkc[MAXN], dvc[MAXN], dout[MAXN];

/*
 * One call with random q/k/v and caches already holding random rows; checks
 * out and both caches against the reference. A sentinel marks cache rows the
 * kernel must not touch.
 */
static void run_f32(const char *name, int nb, int nt, int nh, int d, int len, int pos,
                    const double *scale) {
    check_section(name);
    size_t nq = (size_t)nb * nt * nh * d, nc = (size_t)nb * nh * len * d;
    for (size_t i = 0; i < nq; i++) {
        dq[i] = fq[i] = rng_float();
        dk[i] = fk[i] = rng_float();
        dv[i] = fv[i] = rng_float();
    }
    for (size_t i = 0; i < nc; i++) {
        size_t row = (i / (size_t)d) % (size_t)len;
        bool filled = row < (size_t)pos;
        dkc[i] = fkc[i] = filled ? rng_float() : 7.0f;
        dvc[i] = fvc[i] = filled ? rng_float() : -7.0f;
    }
    double s = scale != NULL ? *scale : 1.0 / sqrt((double)d);
    reference(dout, dq, dk, dv, dkc, dvc, nb, nt, nh, d, len, pos, s);

    int64_t sp = pos;
    tt q, k, v, kc, vc, spt, out;
    ember_value sc = scale != NULL ? kt_double(*scale) : kt_none();
    const int32_t one = 1;
    ember_value *args[9] = {
        tt_4d(&q, EMBER_FLOAT32, nb, nt, nh, d, fq, false),
        tt_4d(&k, EMBER_FLOAT32, nb, nt, nh, d, fk, false),
        tt_4d(&v, EMBER_FLOAT32, nb, nt, nh, d, fv, false),
        tt_4d(&kc, EMBER_FLOAT32, nb, nh, len, d, fkc, false),
        tt_4d(&vc, EMBER_FLOAT32, nb, nh, len, d, fvc, false),
        tt_init(&spt, EMBER_INT64, &one, 1, &sp, sizeof sp, false, NULL),
        &sc,
        tt_4d(&out, EMBER_FLOAT32, nb, nt, nh, d, fout, true),
        &out.v,
    };
    if (!CHECK_OK(kc_call(KEY, args, 9))) return;
    CHECK(close_fd(fout, dout, nq, 1e-5));
    CHECK(close_fd(fkc, dkc, nc, 0.0));
    CHECK(close_fd(fvc, dvc, nc, 0.0));
}

/*
 * Prefill of p tokens then one-token decode steps up to n tokens: the outputs
 * of all steps must equal one prefill of all n tokens.
 */
static void test_decode_matches_prefill(void) {
    check_section("decode steps = one prefill");
    enum { NH = 3, D = 16, LEN = 12, N = 10, P = 4 };
    static float q[N * NH * D], k[N * NH * D], v[N * NH * D];
    static float kc1[NH * LEN * D], vc1[NH * LEN * D], kc2[NH * LEN * D], vc2[NH * LEN * D];
    static float full[N * NH * D], steps[N * NH * D];
    for (size_t i = 0; i < (size_t)N * NH * D; i++) {
        q[i] = rng_float();
        k[i] = rng_float();
        v[i] = rng_float();
    }
    memset(kc1, 0, sizeof kc1);
    memset(vc1, 0, sizeof vc1);
    memset(kc2, 0, sizeof kc2);
    memset(vc2, 0, sizeof vc2);
    const int32_t one = 1;
    ember_value none = kt_none();
    {
        int64_t sp = 0;
        tt tq, tk, tv, tkc, tvc, tsp, to;
        ember_value *args[9] = {tt_4d(&tq, EMBER_FLOAT32, 1, N, NH, D, q, false),
                                tt_4d(&tk, EMBER_FLOAT32, 1, N, NH, D, k, false),
                                tt_4d(&tv, EMBER_FLOAT32, 1, N, NH, D, v, false),
                                tt_4d(&tkc, EMBER_FLOAT32, 1, NH, LEN, D, kc1, false),
                                tt_4d(&tvc, EMBER_FLOAT32, 1, NH, LEN, D, vc1, false),
                                tt_init(&tsp, EMBER_INT64, &one, 1, &sp, sizeof sp, false, NULL),
                                &none,
                                tt_4d(&to, EMBER_FLOAT32, 1, N, NH, D, full, true),
                                &to.v};
        CHECK_OK(kc_call(KEY, args, 9));
    }
    for (int start = 0; start < N;) {
        int nt = start == 0 ? P : 1;
        size_t off = (size_t)start * NH * D;
        int64_t sp = start;
        tt tq, tk, tv, tkc, tvc, tsp, to;
        /* the output's bound is the longest step; the kernel resizes it */
        ember_value *args[9] = {tt_4d(&tq, EMBER_FLOAT32, 1, nt, NH, D, q + off, false),
                                tt_4d(&tk, EMBER_FLOAT32, 1, nt, NH, D, k + off, false),
                                tt_4d(&tv, EMBER_FLOAT32, 1, nt, NH, D, v + off, false),
                                tt_4d(&tkc, EMBER_FLOAT32, 1, NH, LEN, D, kc2, false),
                                tt_4d(&tvc, EMBER_FLOAT32, 1, NH, LEN, D, vc2, false),
                                tt_init(&tsp, EMBER_INT64, &one, 1, &sp, sizeof sp, false, NULL),
                                &none,
                                tt_4d(&to, EMBER_FLOAT32, 1, P, NH, D, steps + off, true),
                                &to.v};
        if (!CHECK_OK(kc_call(KEY, args, 9))) return;
        CHECK(to.t.sizes[1] == nt);
        start += nt;
    }
    bool same = true;
    for (size_t i = 0; i < (size_t)N * NH * D; i++)
        if (fabsf(full[i] - steps[i]) > 1e-6f * (1.0f + fabsf(full[i]))) same = false;
    CHECK(same);
    CHECK(memcmp(kc1, kc2, sizeof kc1) == 0);
    CHECK(memcmp(vc1, vc2, sizeof vc1) == 0);
}

/* ------------------------------------------------------------------------ */
/* Other dtypes                                                              */
/* ------------------------------------------------------------------------ */

static void test_dtypes(void) {
    enum { NT = 3, NH = 2, D = 9, LEN = 6, POS = 2 };
    enum { NQ = NT * NH * D, NC = NH * LEN * D };
    const int32_t one = 1;
    ember_value none = kt_none();
    for (size_t i = 0; i < NQ; i++) {
        dq[i] = rng_float();
        dk[i] = rng_float();
        dv[i] = rng_float();
    }
    for (size_t i = 0; i < NC; i++) {
        dkc[i] = rng_float();
        dvc[i] = rng_float();
    }
    static double kc0[NC], vc0[NC];
    memcpy(kc0, dkc, sizeof kc0);
    memcpy(vc0, dvc, sizeof vc0);

    /* float64 against the reference directly */
    check_section("float64");
    {
        static double q[NQ], k[NQ], v[NQ], kc[NC], vc[NC], out[NQ];
        memcpy(q, dq, sizeof q);
        memcpy(k, dk, sizeof k);
        memcpy(v, dv, sizeof v);
        memcpy(kc, kc0, sizeof kc);
        memcpy(vc, vc0, sizeof vc);
        int32_t sp = POS; /* int32 start_pos works too */
        tt tq, tk, tv, tkc, tvc, tsp, to;
        ember_value *args[9] = {tt_4d(&tq, EMBER_FLOAT64, 1, NT, NH, D, q, false),
                                tt_4d(&tk, EMBER_FLOAT64, 1, NT, NH, D, k, false),
                                tt_4d(&tv, EMBER_FLOAT64, 1, NT, NH, D, v, false),
                                tt_4d(&tkc, EMBER_FLOAT64, 1, NH, LEN, D, kc, false),
                                tt_4d(&tvc, EMBER_FLOAT64, 1, NH, LEN, D, vc, false),
                                tt_init(&tsp, EMBER_INT32, &one, 1, &sp, sizeof sp, false, NULL),
                                &none,
                                tt_4d(&to, EMBER_FLOAT64, 1, NT, NH, D, out, true),
                                &to.v};
        memcpy(dkc, kc0, sizeof kc0);
        memcpy(dvc, vc0, sizeof vc0);
        reference(dout, dq, dk, dv, dkc, dvc, 1, NT, NH, D, LEN, POS, 1.0 / sqrt((double)D));
        if (CHECK_OK(kc_call(KEY, args, 9))) {
            bool ok = true;
            for (size_t i = 0; i < NQ; i++)
                if (fabs(out[i] - dout[i]) > 1e-12) ok = false;
            CHECK(ok);
            CHECK(memcmp(kc, dkc, sizeof kc) == 0);
        }
    }

    /* float16 and bfloat16: inputs rounded, compared with 1e-2 tolerance */
    for (int pass = 0; pass < 2; pass++) {
        int dt = pass == 0 ? EMBER_FLOAT16 : EMBER_BFLOAT16;
        check_section(pass == 0 ? "float16" : "bfloat16");
        static uint16_t q[NQ], k[NQ], v[NQ], kc[NC], vc[NC], out[NQ];
        static double rq[NQ], rk[NQ], rv[NQ];
#define TO16(x) (pass == 0 ? ember_float_to_half((float)(x)) : ember_float_to_bf16((float)(x)))
#define FROM16(x) (pass == 0 ? ember_half_to_float(x) : ember_bf16_to_float(x))
        for (size_t i = 0; i < NQ; i++) {
            q[i] = TO16(dq[i]);
            k[i] = TO16(dk[i]);
            v[i] = TO16(dv[i]);
            rq[i] = FROM16(q[i]);
            rk[i] = FROM16(k[i]);
            rv[i] = FROM16(v[i]);
        }
        for (size_t i = 0; i < NC; i++) {
            kc[i] = TO16(kc0[i]);
            vc[i] = TO16(vc0[i]);
            dkc[i] = FROM16(kc[i]);
            dvc[i] = FROM16(vc[i]);
        }
        reference(dout, rq, rk, rv, dkc, dvc, 1, NT, NH, D, LEN, POS, 1.0 / sqrt((double)D));
        int64_t sp = POS;
        tt tq, tk, tv, tkc, tvc, tsp, to;
        ember_value *args[9] = {tt_4d(&tq, dt, 1, NT, NH, D, q, false),
                                tt_4d(&tk, dt, 1, NT, NH, D, k, false),
                                tt_4d(&tv, dt, 1, NT, NH, D, v, false),
                                tt_4d(&tkc, dt, 1, NH, LEN, D, kc, false),
                                tt_4d(&tvc, dt, 1, NH, LEN, D, vc, false),
                                tt_init(&tsp, EMBER_INT64, &one, 1, &sp, sizeof sp, false, NULL),
                                &none,
                                tt_4d(&to, dt, 1, NT, NH, D, out, true),
                                &to.v};
        if (CHECK_OK(kc_call(KEY, args, 9))) {
            bool ok = true, cache_ok = true;
            for (size_t i = 0; i < NQ; i++)
                if (fabs(FROM16(out[i]) - dout[i]) > 1e-2 * (1 + fabs(dout[i]))) ok = false;
            for (size_t i = 0; i < NC; i++)
                if (FROM16(kc[i]) != dkc[i] || FROM16(vc[i]) != dvc[i]) cache_ok = false;
            CHECK(ok);
            CHECK(cache_ok);
        }
#undef TO16
#undef FROM16
    }
}

/* ------------------------------------------------------------------------ */
/* Bad input                                                                 */
/* ------------------------------------------------------------------------ */

/* A valid call (1, 2, 2, 4) over caches of 5 positions, for the error cases to break. */
typedef struct errcase {
    float q[16], k[16], v[16], kc[40], vc[40], out[16];
    double dcache[40];
    int64_t sp;
    tt tq, tk, tv, tkc, tvc, tsp, to;
    ember_value scale;
    ember_value *args[9];
} errcase;

static void err_setup(errcase *e, int64_t sp) {
    memset(e, 0, sizeof *e);
    const int32_t one = 1;
    e->sp = sp;
    e->scale = kt_none();
    e->args[0] = tt_4d(&e->tq, EMBER_FLOAT32, 1, 2, 2, 4, e->q, false);
    e->args[1] = tt_4d(&e->tk, EMBER_FLOAT32, 1, 2, 2, 4, e->k, false);
    e->args[2] = tt_4d(&e->tv, EMBER_FLOAT32, 1, 2, 2, 4, e->v, false);
    e->args[3] = tt_4d(&e->tkc, EMBER_FLOAT32, 1, 2, 5, 4, e->kc, false);
    e->args[4] = tt_4d(&e->tvc, EMBER_FLOAT32, 1, 2, 5, 4, e->vc, false);
    e->args[5] = tt_init(&e->tsp, EMBER_INT64, &one, 1, &e->sp, sizeof e->sp, false, NULL);
    e->args[6] = &e->scale;
    e->args[7] = tt_4d(&e->to, EMBER_FLOAT32, 1, 2, 2, 4, e->out, true);
    e->args[8] = &e->to.v;
}

static void test_errors(void) {
    check_section("errors");
    errcase e;

    err_setup(&e, 3); /* 3 + 2 = 5 fits exactly */
    CHECK_OK(kc_call(KEY, e.args, 9));

    err_setup(&e, 4); /* 4 + 2 > 5 */
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_DATA_OUT_OF_BOUNDS, "start_pos 4");
    err_setup(&e, -1);
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_DATA_OUT_OF_BOUNDS, "start_pos -1");
    err_setup(&e, INT64_MAX);
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_DATA_OUT_OF_BOUNDS, "does not fit");
    /* the failed calls wrote nothing into the caches */
    bool untouched = true;
    for (size_t i = 0; i < 40; i++)
        if (e.kc[i] != 0.0f || e.vc[i] != 0.0f) untouched = false;
    CHECK(untouched);

    err_setup(&e, 0);
    CHECK_ERR(kc_call(KEY, e.args, 8), EMBER_ERR_INVALID_PROGRAM, "");

    err_setup(&e, 0); /* start_pos of a float dtype */
    e.tsp.t.dtype = EMBER_FLOAT64;
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_TYPE_MISMATCH, "start_pos");

    err_setup(&e, 0); /* start_pos with two elements */
    {
        int64_t two[2] = {0, 0};
        const int32_t n2 = 2;
        tt_init(&e.tsp, EMBER_INT64, &n2, 1, two, sizeof two, false, NULL);
        CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_TYPE_MISMATCH, "one element");
    }

    err_setup(&e, 0); /* k of another shape */
    tt_4d(&e.tk, EMBER_FLOAT32, 1, 2, 1, 4, e.k, false);
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_SHAPE_MISMATCH, "k has shape");

    err_setup(&e, 0); /* q not 4-d */
    {
        const int32_t s3[3] = {2, 2, 4};
        tt_init(&e.tq, EMBER_FLOAT32, s3, 3, e.q, sizeof e.q, false, NULL);
        CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_SHAPE_MISMATCH, "q must be 4-d");
    }

    err_setup(&e, 0); /* cache with another head count */
    tt_4d(&e.tvc, EMBER_FLOAT32, 1, 1, 5, 8, e.vc, false);
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_SHAPE_MISMATCH, "v_cache must be");

    err_setup(&e, 0); /* caches of different lengths */
    tt_4d(&e.tvc, EMBER_FLOAT32, 1, 2, 4, 4, e.vc, false);
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_SHAPE_MISMATCH, "positions");

    err_setup(&e, 0); /* cache of another dtype */
    tt_4d(&e.tkc, EMBER_FLOAT64, 1, 2, 5, 4, e.dcache, false);
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_TYPE_MISMATCH, "k_cache");

    err_setup(&e, 0); /* integer q */
    e.tq.t.dtype = EMBER_INT32;
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_NOT_SUPPORTED, "float types only");

    err_setup(&e, 0); /* a cache in read-only program data */
    e.tkc.t.storage = EMBER_STORAGE_CONSTANT;
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_INVALID_PROGRAM, "");

    err_setup(&e, 0); /* one tensor as both caches */
    e.args[4] = &e.tkc.v;
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_INVALID_PROGRAM, "v_cache is also argument 3");

    err_setup(&e, 0); /* out aliasing q */
    e.args[7] = e.args[8] = &e.tq.v;
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_INVALID_PROGRAM, "out is also argument 0");

    err_setup(&e, 0); /* an output bound smaller than q */
    tt_4d(&e.to, EMBER_FLOAT32, 1, 1, 2, 4, e.out, true);
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_SHAPE_MISMATCH, "");

    err_setup(&e, 0); /* scale of the wrong kind */
    e.scale.tag = EMBER_TAG_STRING;
    e.scale.u.str.data = "x";
    e.scale.u.str.len = 1;
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_INVALID_PROGRAM, "");

    err_setup(&e, 3); /* no scratch left */
    kc_set_scratch(8);
    CHECK_ERR(kc_call(KEY, e.args, 9), EMBER_ERR_OUT_OF_MEMORY, "scratch");
    kc_set_scratch(KC_SCRATCH_BYTES);

    err_setup(&e, 5); /* no new tokens at the very end: nothing to do */
    tt_4d(&e.tq, EMBER_FLOAT32, 1, 0, 2, 4, e.q, false);
    tt_4d(&e.tk, EMBER_FLOAT32, 1, 0, 2, 4, e.k, false);
    tt_4d(&e.tv, EMBER_FLOAT32, 1, 0, 2, 4, e.v, false);
    CHECK_OK(kc_call(KEY, e.args, 9));
    CHECK(e.to.t.numel == 0);
}

int main(void) {
    kc_init();
    rng_seed(2024);

    if (!CHECK(kt_kernel(KEY) != NULL)) return check_finish();
    run_f32("prefill at 0, head size 5", 1, 4, 2, 5, 8, 0, NULL);
    run_f32("prefill after cached rows, batch 2", 2, 3, 2, 5, 8, 2, NULL);
    run_f32("decode step, head size 16", 1, 1, 3, 16, 10, 6, NULL);
    run_f32("decode into the last position, head size 64", 1, 1, 2, 64, 12, 11, NULL);
    run_f32("prefill filling the cache, head size 19", 1, 7, 2, 19, 7, 0, NULL);
    double s = 0.3;
    run_f32("explicit scale", 1, 2, 2, 8, 6, 3, &s);
    test_decode_matches_prefill();
    test_dtypes();
    test_errors();
    return check_finish();
}
