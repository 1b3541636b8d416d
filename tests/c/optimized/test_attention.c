/*
 * test_attention.c — the fast fused attention (kernels/optimized/attention.h)
 * against the reference runner (ek_attn_reference), at every
 * instruction-set level this CPU has, on one thread and on pools of 2 and 3.
 *
 * Problems in both cache layouts the kernels use (ember's (B, H, L, D) and
 * ExecuTorch's (B, L, Hkv, D)), over heads 1..12, head sizes 1, 7, 8, 64, 80
 * and 130, cache positions at 0, in the middle and at the end of the cache,
 * one query row (decode) and several (prefill, also more rows than one task
 * takes and more keys than one block), causal or not, with an additive mask
 * (-inf entries included), grouped-query attention, batch 2.
 * Then the registered twins: every optimized kernel key gives the portable
 * kernel's outputs, cache contents and error statuses, and a mask hiding
 * every key gives NaN in both.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/kernel.h"
#include "ember/threadpool.h"
#include "kernels/kernel_test.h"
#include "kernels/llm/attention.h"
#include "kernels/optimized/attention.h"
#include "rng.h"

static uint8_t g_scratch[1 << 20];
static ember_arena g_arena;
static size_t g_fast_scratch; /* nonzero: the fast run gets only this much scratch */

static float *rand_buf(size_t n, float amp) {
    float *p = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) p[i] = amp * rng_float();
    return p;
}

typedef struct shape {
    int nb, nq, nh, nkvh, d, len, pos;
    bool llama_layout, causal, mask;
} shape;

/* Largest |fast - ref| / (tol (1 + |ref|)); > 1 fails. NaN must match NaN. */
static double compare(const float *fast, const float *ref, size_t n, double tol) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(ref[i]) || isnan(fast[i])) {
            if (!(isnan(ref[i]) && isnan(fast[i]))) return 1e9;
            continue;
        }
        double e = fabs((double)fast[i] - (double)ref[i]) / (tol * (1.0 + fabs((double)ref[i])));
        if (e > worst) worst = e;
    }
    return worst;
}

/* One problem: fast at the level in use (on pool) against the reference. */
static double run_case(const shape *s, ember_threadpool *pool) {
    const int64_t nb = s->nb, nq = s->nq, nh = s->nh, nkvh = s->nkvh, d = s->d, len = s->len;
    const size_t nqe = (size_t)(nb * nq * nh * d), nce = (size_t)(nb * len * nkvh * d);
    float *q = rand_buf(nqe, 1.0f), *k = rand_buf(nce, 1.0f), *v = rand_buf(nce, 1.0f);
    float *mask = rand_buf((size_t)(nq * len), 2.0f);
    float *ref = rand_buf(nqe, 0.0f), *fast = rand_buf(nqe, 0.0f);
    for (int64_t i = 0; i < nq * len; i += 5) mask[i] = -INFINITY;
    /* keep one key visible per row, so the rows are not all NaN */
    for (int64_t t = 0; t < nq; t++) mask[t * len + (t % len)] = 0.0f;
    ek_attn a = {.dtype = EMBER_FLOAT32,
                 .q = q,
                 .k = k,
                 .v = v,
                 .mask = s->mask ? mask : NULL,
                 .mask_dtype = EMBER_FLOAT32,
                 .mask_st = len,
                 .nb = nb,
                 .nq = nq,
                 .nh = nh,
                 .nkvh = nkvh,
                 .d = d,
                 .n_keys = s->mask ? len : s->pos + nq,
                 .start_pos = s->pos,
                 .causal = s->causal,
                 .scale = 1.0 / sqrt((double)d),
                 .q_sb = nq * nh * d,
                 .q_st = nh * d,
                 .q_sh = d,
                 .o_sb = nq * nh * d,
                 .o_st = nh * d,
                 .o_sh = d};
    if (s->llama_layout) {
        a.k_sb = a.v_sb = len * nkvh * d;
        a.k_sn = a.v_sn = nkvh * d;
        a.k_sh = a.v_sh = d;
    } else {
        a.k_sb = a.v_sb = nkvh * len * d;
        a.k_sn = a.v_sn = d;
        a.k_sh = a.v_sh = len * d;
    }
    struct ember_kernel_ctx ctx = {&g_arena, "attention", 0, NULL};
    double worst = 1e9;
    ember_arena_reset(&g_arena);
    a.out = ref;
    if (ek_attn_reference(&ctx, &a) == EMBER_OK) {
        ctx.threadpool = pool;
        ember_arena_reset(&g_arena);
        ember_arena limited;
        if (g_fast_scratch > 0) {
            ember_arena_init(&limited, g_scratch, g_fast_scratch);
            ctx.scratch = &limited;
        }
        a.out = fast;
        if (eko_attention(&ctx, &a) == EMBER_OK) worst = compare(fast, ref, nqe, 2e-5);
    }
    free(q);
    free(k);
    free(v);
    free(mask);
    free(ref);
    free(fast);
    return worst;
}

static void test_level(eko_isa isa, ember_threadpool **pools, size_t npools) {
    if (!eko_isa_supported(isa) || eko_f32_attn_for(isa) == NULL) {
        printf("-- %s: skipped (not on this CPU or not in this build)\n", eko_isa_name(isa));
        return;
    }
    char name[64];
    snprintf(name, sizeof name, "attention %s", eko_isa_name(isa));
    check_section(name);
    CHECK(eko_isa_set(isa));
    CHECK(eko_f32_attn_active()->isa == isa);
    static const int heads[][2] = {{1, 1}, {2, 1}, {3, 3}, {4, 2}, {12, 12}, {12, 4}};
    static const int dims[] = {1, 7, 8, 64, 80, 130};
    static const int rows[] = {1, 3, 9};
    int cases = 0, failures = 0;
    for (size_t p = 0; p < npools; p++)
        for (size_t hi = 0; hi < sizeof heads / sizeof *heads; hi++)
            for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
                for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++) {
                    const int len = 21, nq = rows[ri];
                    /* cache positions: start, middle, end (the last rows fill it) */
                    const int poss[] = {0, (len - nq) / 2, len - nq};
                    for (int pi = 0; pi < 3; pi++)
                        for (int variant = 0; variant < 4; variant++) {
                            shape s = {variant == 3 ? 2 : 1, nq, heads[hi][0], heads[hi][1],
                                       dims[di], len, poss[pi], variant != 0, variant != 2,
                                       variant == 2};
                            double e = run_case(&s, pools[p]);
                            cases++;
                            if (!(e <= 1.0)) {
                                failures++;
                                if (failures <= 5)
                                    printf("  %s threads %zu: b %d rows %d heads %d/%d d %d "
                                           "pos %d variant %d: error %.3g x tol\n",
                                           eko_isa_name(isa), ember_threadpool_size(pools[p]),
                                           s.nb, s.nq, s.nh, s.nkvh, s.d, s.pos, variant, e);
                            }
                        }
                }
    /* blocks: more rows than one task holds, more keys than one block */
    static const int bheads[][2] = {{2, 1}, {3, 3}};
    static const int bdims[] = {7, 64, 80};
    static const int brows[] = {17, 40};
    for (size_t p = 0; p < npools; p++)
        for (size_t hi = 0; hi < 2; hi++)
            for (size_t di = 0; di < 3; di++)
                for (size_t ri = 0; ri < 2; ri++) {
                    const int len = 200, nq = brows[ri];
                    const int poss[] = {0, 77, len - nq};
                    for (int pi = 0; pi < 3; pi++)
                        for (int variant = 0; variant < 4; variant++) {
                            shape s = {variant == 3 ? 2 : 1, nq, bheads[hi][0], bheads[hi][1],
                                       bdims[di], len, poss[pi], variant != 0, variant != 2,
                                       variant == 2};
                            double e = run_case(&s, pools[p]);
                            cases++;
                            if (!(e <= 1.0)) {
                                failures++;
                                if (failures <= 5)
                                    printf("  %s threads %zu: b %d rows %d heads %d/%d d %d "
                                           "pos %d variant %d: error %.3g x tol\n",
                                           eko_isa_name(isa), ember_threadpool_size(pools[p]),
                                           s.nb, s.nq, s.nh, s.nkvh, s.d, s.pos, variant, e);
                            }
                        }
                }
    CHECK_MSG(failures == 0, "%d of %d cases", failures, cases);
    /* GPT-2 sizes: 12 heads of 64, cache 1024, decode and a 64-row prefill */
    shape big[] = {{1, 1, 12, 12, 64, 1024, 191, false, true, false},
                   {1, 1, 12, 12, 64, 1024, 1023, true, true, false},
                   {1, 64, 12, 12, 64, 1024, 128, true, true, false},
                   {1, 64, 12, 12, 64, 1024, 0, false, true, false}};
    for (size_t i = 0; i < sizeof big / sizeof *big; i++)
        for (size_t p = 0; p < npools; p++) {
            double e = run_case(&big[i], pools[p]);
            CHECK_MSG(e <= 1.0, "GPT-2 case %zu threads %zu: error %.3g x tol", i,
                      ember_threadpool_size(pools[p]), e);
        }
}

/* ------------------------------------------------------------------------ */
/* The registered twins against the portable kernels                         */
/* ------------------------------------------------------------------------ */

static ember_kernel_fn optimized(const char *key) {
    for (size_t i = 0; i < ember_optimized_kernel_count(); i++)
        if (strcmp(ember_optimized_kernel_at(i)->name, key) == 0)
            return ember_optimized_kernel_at(i)->fn;
    return NULL;
}

/*
 * llama::sdpa_with_kv_cache.out at start_pos, portable and optimized on
 * copies of the same caches: same status, and on success the same caches
 * and outputs (within tolerance).
 */
static void twin_llama_kv(ember_threadpool *pool, int nq, int nh, int nkvh, int d, int len,
                          int64_t pos, int64_t seq_len, bool causal, bool use_mask,
                          double dropout) {
    const size_t nqe = (size_t)nq * nh * d, nne = (size_t)nq * nkvh * d,
                 nce = (size_t)len * nkvh * d;
    float *q = rand_buf(nqe, 1), *k = rand_buf(nne, 1), *v = rand_buf(nne, 1);
    float *kc[2] = {rand_buf(nce, 1), NULL}, *vc[2] = {rand_buf(nce, 1), NULL};
    float *out[2] = {rand_buf(nqe, 0), rand_buf(nqe, 0)};
    float *mask = rand_buf((size_t)nq * len, 1);
    kc[1] = malloc(nce * sizeof(float));
    vc[1] = malloc(nce * sizeof(float));
    memcpy(kc[1], kc[0], nce * sizeof(float));
    memcpy(vc[1], vc[0], nce * sizeof(float));
    ember_status st[2];
    ember_kernel_fn fns[2] = {kt_kernel("llama::sdpa_with_kv_cache.out"),
                              optimized("llama::sdpa_with_kv_cache.out")};
    if (!CHECK(fns[0] != NULL && fns[1] != NULL)) return;
    for (int w = 0; w < 2; w++) {
        tt tq, tk, tv, tkc, tvc, tm, to;
        ember_value sp = kt_int(pos), sl = kt_int(seq_len), dp = kt_double(dropout), ca = kt_bool(causal),
                    sc = kt_none(), none = kt_none();
        const int32_t ms[2] = {nq, len};
        ember_value *args[13] = {tt_4d(&tq, EMBER_FLOAT32, 1, nq, nh, d, q, false),
                                 tt_4d(&tk, EMBER_FLOAT32, 1, nq, nkvh, d, k, false),
                                 tt_4d(&tv, EMBER_FLOAT32, 1, nq, nkvh, d, v, false),
                                 tt_4d(&tkc, EMBER_FLOAT32, 1, len, nkvh, d, kc[w], false),
                                 tt_4d(&tvc, EMBER_FLOAT32, 1, len, nkvh, d, vc[w], false),
                                 &sp,
                                 &sl,
                                 use_mask ? tt_init(&tm, EMBER_FLOAT32, ms, 2, mask,
                                                    (size_t)nq * len * sizeof(float), false, NULL)
                                          : &none,
                                 &dp,
                                 &ca,
                                 &sc,
                                 tt_4d(&to, EMBER_FLOAT32, 1, nq, nh, d, out[w], true),
                                 &to.v};
        struct ember_kernel_ctx ctx = {&g_arena, "llama::sdpa_with_kv_cache.out", 0,
                                       w == 1 ? pool : NULL};
        ember_arena_reset(&g_arena);
        ember_clear_error();
        st[w] = fns[w](&ctx, args, 13);
    }
    CHECK_MSG(st[0] == st[1], "portable %s, optimized %s", ember_status_str(st[0]),
              ember_status_str(st[1]));
    CHECK(memcmp(kc[0], kc[1], nce * sizeof(float)) == 0);
    CHECK(memcmp(vc[0], vc[1], nce * sizeof(float)) == 0);
    if (st[0] == EMBER_OK) CHECK(compare(out[1], out[0], nqe, 2e-5) <= 1.0);
    free(q);
    free(k);
    free(v);
    free(kc[0]);
    free(kc[1]);
    free(vc[0]);
    free(vc[1]);
    free(out[0]);
    free(out[1]);
    free(mask);
}

static void test_twins(ember_threadpool *pool) {
    check_section("registered twins");
    CHECK(optimized("ember::sdpa_with_kv_cache.out") != NULL);
    CHECK(optimized("llama::custom_sdpa.out") != NULL);
    /* every optimized key has a portable kernel (the reference) */
    for (size_t i = 0; i < ember_optimized_kernel_count(); i++)
        CHECK_MSG(kt_kernel(ember_optimized_kernel_at(i)->name) != NULL, "%s",
                  ember_optimized_kernel_at(i)->name);
    CHECK(ember_optimized_kernel_at(ember_optimized_kernel_count()) == NULL);
    twin_llama_kv(pool, 1, 12, 12, 64, 32, 17, 1, true, false, 0.0);
    twin_llama_kv(pool, 5, 8, 2, 16, 32, 0, 5, true, false, 0.0);
    twin_llama_kv(pool, 5, 8, 2, 16, 32, 27, 5, false, false, 0.0);
    twin_llama_kv(pool, 4, 4, 4, 7, 12, 3, 4, false, true, 0.0);
    /* errors: out of range start_pos / seq_len, mask with is_causal, dropout */
    twin_llama_kv(pool, 1, 2, 2, 8, 12, 12, 1, true, false, 0.0);
    twin_llama_kv(pool, 1, 2, 2, 8, 12, -1, 1, true, false, 0.0);
    twin_llama_kv(pool, 3, 2, 2, 8, 12, 10, 3, true, false, 0.0);
    twin_llama_kv(pool, 1, 2, 2, 8, 12, 5, 8, true, false, 0.0);
    twin_llama_kv(pool, 2, 2, 2, 8, 12, 5, 2, true, true, 0.0);
    twin_llama_kv(pool, 2, 2, 2, 8, 12, 5, 2, true, false, 0.1);
}

/*
 * llama::custom_quantized_sdpa.out (int8 q, k, v with per-row scales and
 * zero points), portable and optimized: same status, outputs within
 * tolerance (both compute the exact int32 products; the sums differ in
 * order). seq2: the (B, H, S, D) layout.
 */
static void twin_quantized(ember_threadpool *pool, int nq, int nh, int nkvh, int d, int len,
                           int64_t pos, bool seq2, bool use_mask) {
    const size_t nqe = (size_t)nq * nh * d, nce = (size_t)len * nkvh * d;
    const size_t nqr = (size_t)nq * nh, ncr = (size_t)len * nkvh;
    int8_t *q = malloc(nqe), *k = malloc(nce), *v = malloc(nce);
    int8_t *qz = malloc(nqr), *kz = malloc(ncr), *vz = malloc(ncr);
    float *qs = rand_buf(nqr, 0.0f), *ks = rand_buf(ncr, 0.0f), *vs = rand_buf(ncr, 0.0f);
    float *out[2] = {rand_buf(nqe, 0), rand_buf(nqe, 0)};
    float *mask = rand_buf((size_t)nq * len, 1);
    for (size_t i = 0; i < nqe; i++) q[i] = (int8_t)(rng_bits() & 0xff);
    for (size_t i = 0; i < nce; i++) k[i] = (int8_t)(rng_bits() & 0xff);
    for (size_t i = 0; i < nce; i++) v[i] = (int8_t)(rng_bits() & 0xff);
    for (size_t i = 0; i < nqr; i++) qz[i] = (int8_t)(rng_bits() % 41) - 20;
    for (size_t i = 0; i < ncr; i++) kz[i] = (int8_t)(rng_bits() % 41) - 20;
    for (size_t i = 0; i < ncr; i++) vz[i] = (int8_t)(rng_bits() % 41) - 20;
    for (size_t i = 0; i < nqr; i++) qs[i] = 0.002f + 0.01f * fabsf(rng_float());
    for (size_t i = 0; i < ncr; i++) ks[i] = 0.002f + 0.01f * fabsf(rng_float());
    for (size_t i = 0; i < ncr; i++) vs[i] = 0.002f + 0.01f * fabsf(rng_float());
    ember_status st[2];
    const char *key = "llama::custom_quantized_sdpa.out";
    ember_kernel_fn fns[2] = {kt_kernel(key), optimized(key)};
    if (CHECK(fns[0] != NULL && fns[1] != NULL)) {
        for (int w = 0; w < 2; w++) {
            tt tq, tk, tv, tqz, tqs, tkz, tks, tvz, tvs, tm, to;
            const int s_q = seq2 ? nh : nq, h_q = seq2 ? nq : nh;       /* dims 1, 2 of q */
            const int s_c = seq2 ? nkvh : len, h_c = seq2 ? len : nkvh; /* of the caches */
            ember_value sp = kt_int(pos), dp = kt_double(0.0), ca = kt_bool(!use_mask),
                        sc = kt_none(), s2 = kt_bool(seq2), none = kt_none();
            const int32_t ms[2] = {nq, len};
            ember_value *args[17] = {
                tt_4d(&tq, EMBER_INT8, 1, s_q, h_q, d, q, false),
                tt_4d(&tk, EMBER_INT8, 1, s_c, h_c, d, k, false),
                tt_4d(&tv, EMBER_INT8, 1, s_c, h_c, d, v, false),
                &sp,
                use_mask ? tt_init(&tm, EMBER_FLOAT32, ms, 2, mask,
                                   (size_t)nq * len * sizeof(float), false, NULL)
                         : &none,
                &dp,
                &ca,
                &sc,
                tt_4d(&tqz, EMBER_INT8, 1, s_q, h_q, 1, qz, false),
                tt_4d(&tqs, EMBER_FLOAT32, 1, s_q, h_q, 1, qs, false),
                tt_4d(&tkz, EMBER_INT8, 1, s_c, h_c, 1, kz, false),
                tt_4d(&tks, EMBER_FLOAT32, 1, s_c, h_c, 1, ks, false),
                tt_4d(&tvz, EMBER_INT8, 1, s_c, h_c, 1, vz, false),
                tt_4d(&tvs, EMBER_FLOAT32, 1, s_c, h_c, 1, vs, false),
                &s2,
                tt_4d(&to, EMBER_FLOAT32, 1, s_q, h_q, d, out[w], true),
                &to.v};
            struct ember_kernel_ctx ctx = {&g_arena, key, 0, w == 1 ? pool : NULL};
            ember_arena_reset(&g_arena);
            ember_clear_error();
            st[w] = fns[w](&ctx, args, 17);
        }
        CHECK_MSG(st[0] == EMBER_OK && st[1] == EMBER_OK, "portable %s, optimized %s (%s)",
                  ember_status_str(st[0]), ember_status_str(st[1]), ember_last_error());
        if (st[0] == EMBER_OK) {
            const double e = compare(out[1], out[0], nqe, 2e-5);
            CHECK_MSG(e <= 1.0, "int8 nq %d nh %d/%d d %d len %d pos %lld%s%s: error %.3g", nq,
                      nh, nkvh, d, len, (long long)pos, seq2 ? " seq2" : "",
                      use_mask ? " mask" : "", e);
        }
    }
    free(q);
    free(k);
    free(v);
    free(qz);
    free(kz);
    free(vz);
    free(qs);
    free(ks);
    free(vs);
    free(out[0]);
    free(out[1]);
    free(mask);
}

static void test_quantized(ember_threadpool *pool) {
    check_section("int8 attention (llama::custom_quantized_sdpa) against the portable kernel");
    CHECK(optimized("llama::custom_quantized_sdpa.out") != NULL);
    for (int seq2 = 0; seq2 < 2; seq2++) {
        twin_quantized(pool, 1, 4, 1, 64, 40, 17, seq2, false);     /* decode, grouped */
        twin_quantized(pool, 1, 32, 8, 64, 1300, 1299, seq2, false); /* 1B decode, 3 chunks */
        twin_quantized(pool, 9, 4, 2, 64, 700, 600, seq2, false);   /* prefill rows */
        twin_quantized(pool, 5, 2, 2, 7, 64, 0, seq2, true);        /* odd head, mask */
        twin_quantized(pool, 3, 2, 1, 128, 600, 0, seq2, true);     /* mask, 2 chunks */
    }
    twin_quantized(pool, 1, 2, 2, 300, 20, 5, false, false); /* head over 256: the reference */
}

/* A mask hiding every key of a row: NaN in the reference and the fast path. */
static void test_all_masked(ember_threadpool *pool) {
    check_section("a row with every key masked");
    enum { NQ = 2, NH = 2, D = 16, LEN = 8 };
    static float q[NQ * NH * D], kv[LEN * NH * D], mask[NQ * LEN], ref[NQ * NH * D],
        fast[NQ * NH * D];
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) q[i] = rng_float();
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++) kv[i] = rng_float();
    for (size_t i = 0; i < NQ * LEN; i++) mask[i] = i < LEN ? -INFINITY : 0.0f;
    ek_attn a = {.dtype = EMBER_FLOAT32, .q = q, .k = kv, .v = kv, .mask = mask,
                 .mask_dtype = EMBER_FLOAT32, .mask_st = LEN, .nb = 1, .nq = NQ, .nh = NH,
                 .nkvh = NH, .d = D, .n_keys = LEN, .scale = 0.25, .q_sb = NQ * NH * D,
                 .q_st = NH * D, .q_sh = D, .k_sb = LEN * NH * D, .k_sn = NH * D, .k_sh = D,
                 .v_sb = LEN * NH * D, .v_sn = NH * D, .v_sh = D, .o_sb = NQ * NH * D,
                 .o_st = NH * D, .o_sh = D};
    struct ember_kernel_ctx ctx = {&g_arena, "attention", 0, pool};
    a.out = ref;
    ember_arena_reset(&g_arena);
    CHECK_OK(ek_attn_reference(&ctx, &a));
    a.out = fast;
    ember_arena_reset(&g_arena);
    CHECK_OK(eko_attention(&ctx, &a));
    CHECK(isnan(ref[0]) && isnan(fast[0]) && isnan(fast[NH * D - 1]));
    CHECK(!isnan(fast[NH * D]) && compare(fast, ref, sizeof ref / sizeof *ref, 2e-5) <= 1.0);
}

/* A long context in a small scratch: fewer query rows a task, and at
 * last the reference's single row, give the same numbers. */
static void test_scratch_limited(ember_threadpool *pool) {
    check_section("long context, limited scratch");
    const shape s = {1, 40, 4, 2, 64, 2048, 2000, true, true, false};
    /* 96 KB at the usual 14 rows a task (of a 512-key chunk) on 2 threads;
     * 60 KB takes 4 rows; 12 KB not even one row a thread, but the
     * reference's one row */
    const size_t limits[] = {0, 60 * 1024, 12 * 1024};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        g_fast_scratch = limits[i];
        const double e = run_case(&s, pool);
        CHECK_MSG(e <= 1.0, "scratch limit %zu: error %.3g", limits[i], e);
    }
    g_fast_scratch = 0;
}

/* Keys in several chunks of the online softmax (512 keys each): the largest
 * score in a late chunk (the sums of the early ones rescaled), early chunks
 * hidden whole (-inf: nothing to rescale), rows that end inside a chunk,
 * and a decode step of a 1B model's shape at 8k keys. */
static void test_chunks(ember_threadpool *pool) {
    check_section("keys in several chunks (online softmax)");
    enum { D = 64 };
    const struct {
        int nq, nh, nkvh, len;
        int mode; /* 0: rising mask; 1: first 700 keys hidden; 2: causal, no mask */
    } cases[] = {{3, 4, 2, 1500, 0}, {2, 2, 2, 1300, 1}, {17, 4, 1, 1100, 2},
                 {1, 32, 8, 8200, 2}, {1, 4, 4, 2049, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const int nq = cases[c].nq, nh = cases[c].nh, nkvh = cases[c].nkvh, len = cases[c].len;
        const size_t nqe = (size_t)nq * nh * D, nce = (size_t)len * nkvh * D;
        float *q = rand_buf(nqe, 1.0f), *k = rand_buf(nce, 1.0f), *v = rand_buf(nce, 1.0f);
        float *mask = rand_buf((size_t)nq * len, 0.0f);
        float *ref = rand_buf(nqe, 0.0f), *fast = rand_buf(nqe, 0.0f);
        for (int t = 0; t < nq; t++)
            for (int j = 0; j < len; j++)
                mask[t * len + j] = cases[c].mode == 0 ? 12.0f * (float)j / (float)len - 12.0f
                                    : j < 700          ? -INFINITY
                                                       : 0.0f;
        ek_attn a = {.dtype = EMBER_FLOAT32, .q = q, .k = k, .v = v,
                     .mask = cases[c].mode == 2 ? NULL : mask, .mask_dtype = EMBER_FLOAT32,
                     .mask_st = len, .nb = 1, .nq = nq, .nh = nh, .nkvh = nkvh, .d = D,
                     .n_keys = len, .start_pos = len - nq, .causal = cases[c].mode == 2,
                     .scale = 0.125, .q_sb = nq * nh * D, .q_st = nh * D, .q_sh = D,
                     .k_sb = len * nkvh * D, .k_sn = nkvh * D, .k_sh = D,
                     .v_sb = len * nkvh * D, .v_sn = nkvh * D, .v_sh = D,
                     .o_sb = nq * nh * D, .o_st = nh * D, .o_sh = D};
        struct ember_kernel_ctx ctx = {&g_arena, "attention", 0, NULL};
        a.out = ref;
        ember_arena_reset(&g_arena);
        if (CHECK_OK(ek_attn_reference(&ctx, &a))) {
            ctx.threadpool = pool;
            a.out = fast;
            ember_arena_reset(&g_arena);
            if (CHECK_OK(eko_attention(&ctx, &a))) {
                const double e = compare(fast, ref, nqe, 2e-5);
                CHECK_MSG(e <= 1.0, "case %zu (%d keys): error %.3g", c, len, e);
            }
        }
        free(q);
        free(k);
        free(v);
        free(mask);
        free(ref);
        free(fast);
    }
}

/* Scratch too small for the rows of scores: a clean status. */
static void test_scratch_exhausted(void) {
    check_section("scratch exhausted");
    static uint8_t tiny[64];
    ember_arena arena;
    ember_arena_init(&arena, tiny, sizeof tiny);
    static float q[64], kv[64 * 64], out[64];
    ek_attn a = {.dtype = EMBER_FLOAT32, .q = q, .k = kv, .v = kv, .out = out, .nb = 1, .nq = 1,
                 .nh = 1, .nkvh = 1, .d = 1, .n_keys = 64, .causal = true, .start_pos = 63,
                 .scale = 1.0, .q_sb = 1, .q_st = 1, .q_sh = 1, .k_sb = 64, .k_sn = 1, .k_sh = 1,
                 .v_sb = 64, .v_sn = 1, .v_sh = 1, .o_sb = 1, .o_st = 1, .o_sh = 1};
    struct ember_kernel_ctx ctx = {&arena, "attention", 0, NULL};
    CHECK_ERR(eko_attention(&ctx, &a), EMBER_ERR_OUT_OF_MEMORY, "scratch");
}

/* The int8 micro-kernels, which convert rows in registers, give the same
 * bits as converting the rows first (int8_row) and using the float ones:
 * the scores' sums are exact integers, the weighted sums add the same
 * products in the same order. Every level this CPU has; head sizes across
 * the vector widths, 1 to 4 rows, keys across the 4-key steps. */
static void test_int8_kernels(void) {
    check_section("int8 micro-kernels against converting first");
    enum { MAXD = 256, MAXN = 67, ZS = 3 };
    static const size_t ds[] = {1, 7, 8, 16, 33, 64, 80, 130, 256};
    static const size_t ns[] = {1, 3, 4, 5, 17, 67};
    static int8_t k[MAXN * MAXD], kz[MAXN * ZS];
    static float ksc[MAXN * ZS], q[4 * MAXD], qmul[4], conv[MAXN * MAXD], p[4 * MAXN],
        p2[4 * MAXN], s1[4 * MAXN], s2[4 * MAXN], acc1[4 * MAXD], out1[4 * MAXD],
        out2[4 * MAXD], tmp[MAXN];
    int bad = 0, cases = 0;
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) {
        const eko_f32_attn *cfg = eko_f32_attn_for((eko_isa)isa);
        if (!eko_isa_supported((eko_isa)isa) || cfg == NULL) continue;
        for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
                for (size_t nr = 1; nr <= 4; nr++) {
                    const size_t d = ds[di], n = ns[ni];
                    for (size_t i = 0; i < n * d; i++) k[i] = (int8_t)(rng_bits() & 0xff);
                    for (size_t j = 0; j < n * ZS; j++) {
                        kz[j] = (int8_t)(rng_bits() & 0xff);
                        ksc[j] = 0.001f + 0.01f * fabsf(rng_float());
                    }
                    for (size_t i = 0; i < nr * d; i++) /* int8 rows less zero points */
                        q[i] = (float)((int)(rng_bits() % 511) - 255);
                    for (size_t r = 0; r < nr; r++) qmul[r] = 0.002f + 0.01f * fabsf(rng_float());
                    for (size_t j = 0; j < n; j++)
                        cfg->int8_row(k + j * d, d, (float)kz[j * ZS], conv + j * d);
                    /* scores: converted, scale 1, then the scales */
                    for (size_t r = 0; r < nr; r++) {
                        cfg->scores(q + r * d, conv, d, n, d, 1.0f, tmp);
                        for (size_t j = 0; j < n; j++)
                            s1[r * n + j] = tmp[j] * (qmul[r] * ksc[j * ZS]) * 0.125f;
                    }
                    cfg->scores_i8(q, d, nr, qmul, k, d, kz, ksc, ZS, n, d, 0.125f, s2, n);
                    cases++;
                    if (memcmp(s1, s2, nr * n * sizeof(float)) != 0 && bad++ < 5)
                        printf("  %s scores d %zu n %zu rows %zu differ\n",
                               eko_isa_name((eko_isa)isa), d, n, nr);
                    /* weighted sums: weights times scales, then converted rows;
                     * from sums carried in (acc) and from none */
                    for (size_t i = 0; i < nr * n; i++) p[i] = p2[i] = fabsf(rng_float());
                    for (size_t i = 0; i < nr * d; i++) acc1[i] = rng_float();
                    const bool carried = (n + d + nr) % 2 == 0;
                    float inv[4], *accs[4], *outs[4];
                    for (size_t r = 0; r < nr; r++) {
                        inv[r] = r % 2 ? 1.0f : 0.37f;
                        for (size_t j = 0; j < n; j++) p[r * n + j] *= ksc[j * ZS];
                        cfg->weighted_sum(p + r * n, conv, d, n, d, carried ? acc1 + r * d : NULL,
                                          inv[r], out1 + r * d);
                        accs[r] = carried ? acc1 + r * d : NULL;
                        outs[r] = out2 + r * d;
                    }
                    cfg->weighted_sum_i8(p2, n, nr, k, d, kz, ksc, ZS, n, d, accs, inv, outs);
                    cases++;
                    if ((memcmp(p, p2, nr * n * sizeof(float)) != 0 ||
                         memcmp(out1, out2, nr * d * sizeof(float)) != 0) &&
                        bad++ < 5)
                        printf("  %s weighted sums d %zu n %zu rows %zu differ\n",
                               eko_isa_name((eko_isa)isa), d, n, nr);
                }
    }
    CHECK_MSG(bad == 0, "%d of %d cases differ", bad, cases);
}

/* Every thread count gives the same bits: a row's arithmetic does not
 * depend on how rows and kv heads are split into tasks (decode steps group
 * whole kv heads when they split evenly over the threads, else split each
 * head's rows). Float and int8, both cache layouts, decode and prefill. */
static void same_bits_case(ember_threadpool **pools, size_t npools, bool int8, bool llama_layout,
                           int nq, int nh, int nkvh, int len, int pos) {
    const int d = 64;
    const size_t nqe = (size_t)nq * nh * d, nce = (size_t)len * nkvh * d;
    const size_t esize = int8 ? 1 : sizeof(float);
    unsigned char *q = malloc(nqe * esize), *k = malloc(nce * esize), *v = malloc(nce * esize);
    float *scales = rand_buf((size_t)(nq * nh + 2 * len * nkvh), 0.0f);
    int8_t *zeros = malloc((size_t)(nq * nh + 2 * len * nkvh));
    for (size_t i = 0; i < nqe * esize; i++) q[i] = (unsigned char)(rng_bits() & 0xff);
    for (size_t i = 0; i < nce * esize; i++) k[i] = (unsigned char)(rng_bits() & 0xff);
    for (size_t i = 0; i < nce * esize; i++) v[i] = (unsigned char)(rng_bits() & 0xff);
    if (!int8) { /* finite floats of moderate size */
        for (size_t i = 0; i < nqe; i++) ((float *)(void *)q)[i] = rng_float();
        for (size_t i = 0; i < nce; i++) ((float *)(void *)k)[i] = rng_float();
        for (size_t i = 0; i < nce; i++) ((float *)(void *)v)[i] = rng_float();
    }
    for (int i = 0; i < nq * nh + 2 * len * nkvh; i++) {
        scales[i] = 0.002f + 0.01f * fabsf(rng_float());
        zeros[i] = (int8_t)(rng_bits() % 41) - 20;
    }
    ek_attn a = {.dtype = int8 ? EMBER_INT8 : EMBER_FLOAT32,
                 .q = q,
                 .k = k,
                 .v = v,
                 .nb = 1,
                 .nq = nq,
                 .nh = nh,
                 .nkvh = nkvh,
                 .d = d,
                 .n_keys = pos + nq,
                 .start_pos = pos,
                 .causal = true,
                 .scale = 0.125,
                 .q_sb = (int64_t)nq * nh * d,
                 .q_st = (int64_t)nh * d,
                 .q_sh = d,
                 .o_sb = (int64_t)nq * nh * d,
                 .o_st = (int64_t)nh * d,
                 .o_sh = d,
                 .q_scale = scales,
                 .k_scale = scales + nq * nh,
                 .v_scale = scales + nq * nh + len * nkvh,
                 .q_zero = zeros,
                 .k_zero = zeros + nq * nh,
                 .v_zero = zeros + nq * nh + len * nkvh};
    a.k_sb = a.v_sb = (int64_t)len * nkvh * d;
    a.k_sn = a.v_sn = llama_layout ? (int64_t)nkvh * d : d;
    a.k_sh = a.v_sh = llama_layout ? d : (int64_t)len * d;
    float *out[4];
    for (size_t p = 0; p < npools; p++) {
        out[p] = rand_buf(nqe, 0.0f);
        struct ember_kernel_ctx ctx = {&g_arena, "attention", 0, pools[p]};
        ember_arena_reset(&g_arena);
        a.out = out[p];
        CHECK(eko_attention(&ctx, &a) == EMBER_OK);
        CHECK_MSG(memcmp(out[p], out[0], nqe * sizeof(float)) == 0,
                  "%s %s nq %d heads %d/%d len %d: %zu threads differ from 1",
                  int8 ? "int8" : "float", llama_layout ? "(B, L, Hkv, D)" : "(B, H, L, D)", nq,
                  nh, nkvh, len, ember_threadpool_size(pools[p]));
    }
    for (size_t p = 0; p < npools; p++) free(out[p]);
    free(q);
    free(k);
    free(v);
    free(scales);
    free(zeros);
}

static void test_same_bits(ember_threadpool **pools, size_t npools) {
    check_section("the same bits on 1, 2, 3 and 4 threads");
    for (int int8 = 0; int8 < 2; int8++)
        for (int layout = 0; layout < 2; layout++) {
            same_bits_case(pools, npools, int8, layout, 1, 32, 8, 1300, 1299); /* 1B decode */
            same_bits_case(pools, npools, int8, layout, 1, 16, 8, 700, 650);   /* 2 rows a head */
            same_bits_case(pools, npools, int8, layout, 1, 12, 12, 600, 599);  /* 1 row a head */
            same_bits_case(pools, npools, int8, layout, 9, 32, 8, 700, 600);   /* prefill */
        }
}

int main(void) {
    rng_seed(4242);
    ember_arena_init(&g_arena, g_scratch, sizeof g_scratch);
    ember_threadpool *pools[3] = {NULL, NULL, NULL};
    size_t npools = 1;
    if (ember_threadpool_create(2, &pools[1]) == EMBER_OK) npools++;
    if (npools == 2 && ember_threadpool_create(3, &pools[2]) == EMBER_OK) npools++;
    for (size_t i = 1; i < npools; i++) ember_threadpool_set_grain(pools[i], 1); /* split all */
    const eko_isa start = eko_isa_active();
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) test_level((eko_isa)isa, pools, npools);
    eko_isa_set(start);
    test_twins(pools[npools - 1]);
    test_all_masked(pools[npools - 1]);
    test_scratch_limited(pools[npools - 1]);
    test_chunks(pools[npools - 1]);
    test_quantized(pools[npools - 1]);
    test_int8_kernels();
    ember_threadpool *four = NULL;
    if (npools == 3 && ember_threadpool_create(4, &four) == EMBER_OK) {
        ember_threadpool_set_grain(four, 1);
        ember_threadpool *all[4] = {pools[0], pools[1], pools[2], four};
        test_same_bits(all, 4);
        ember_threadpool_destroy(four);
    }
    test_scratch_exhausted();
    for (size_t p = 1; p < npools; p++) ember_threadpool_destroy(pools[p]);
    return check_finish();
}
