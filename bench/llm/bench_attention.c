/*
 * bench_attention.c — the attention kernel alone at GPT-2 shapes: 12 heads of
 * 64, a cache of 1024 positions, float32. The reference runner (the portable
 * kernels' loop, one thread) against the fast one at every instruction-set
 * level the CPU has, on 1 and 2 threads, in both cache layouts (ember's
 * (B, H, L, D) and ExecuTorch's (B, L, H, D)).
 *
 *   decode   one query row at position 64, 128, 192 (attends over pos + 1 keys)
 *   prefill  64 rows at positions 0..63, and 128 rows at 64..191 (causal)
 *
 * Build against a build directory (scripts/build.sh build-llm) and run:
 *
 *   cc -O2 -std=c11 -Iinclude -Isrc bench/llm/bench_attention.c \
 *      build-llm/libember_kernels_portable.a build-llm/libember_core.a -lm -lpthread \
 *      -o build-llm/bench_attention && build-llm/bench_attention
 *
 * Prints the fastest of repeated runs (on a shared machine the least
 * disturbed one), in microseconds per call. EMBER_BENCH_THREADS=1 skips the
 * two-thread columns.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "ember/kernel.h"
#include "ember/threadpool.h"
#include "kernels/llm/attention.h"
#include "kernels/optimized/attention.h"

enum { NH = 12, D = 64, LEN = 1024, MAXQ = 128 };

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint8_t g_scratch[1 << 20];

typedef ember_status (*runner)(ember_kernel_ctx *, const ek_attn *);

/* Fastest time of one call, over enough repetitions for about 0.3 s. */
static double time_it(runner run, ember_threadpool *pool, const ek_attn *a) {
    ember_arena arena;
    ember_arena_init(&arena, g_scratch, sizeof g_scratch);
    struct ember_kernel_ctx ctx = {&arena, "attention", 0, pool};
    double t0 = now_us();
    int calls = 0;
    while (now_us() - t0 < 50000 || calls < 3) {
        ember_arena_reset(&arena);
        run(&ctx, a);
        calls++;
    }
    double per = (now_us() - t0) / calls;
    int reps = (int)(300000 / per);
    if (reps < 5) reps = 5;
    if (reps > 2001) reps = 2001;
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        ember_arena_reset(&arena);
        double s = now_us();
        run(&ctx, a);
        t[r] = now_us() - s;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double best = t[0];
    free(t);
    return best;
}

int main(void) {
    float *q = malloc(sizeof(float) * MAXQ * NH * D), *out = malloc(sizeof(float) * MAXQ * NH * D);
    float *k = malloc(sizeof(float) * LEN * NH * D), *v = malloc(sizeof(float) * LEN * NH * D);
    uint32_t seed = 1;
    for (size_t i = 0; i < (size_t)LEN * NH * D; i++) {
        seed = seed * 1664525u + 1013904223u;
        k[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
        v[i] = (float)(seed >> 9) / 8388608.0f - 0.5f;
        if (i < (size_t)MAXQ * NH * D) q[i] = k[i] * 2.0f;
    }
    ember_threadpool *pool2 = NULL;
    const char *env = getenv("EMBER_BENCH_THREADS");
    const bool two = env == NULL || strcmp(env, "1") != 0;
    if (two && ember_threadpool_create(2, &pool2) != EMBER_OK) pool2 = NULL;

    struct {
        const char *name;
        int nq, pos;
    } cases[] = {{"decode@64", 1, 64},     {"decode@128", 1, 128},
                 {"decode@192", 1, 192},   {"prefill64@0", 64, 0},
                 {"prefill128@64", 128, 64}};
    printf("%-18s %-7s %10s", "case", "layout", "reference");
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++)
        if (eko_isa_supported((eko_isa)isa))
            printf(two ? " %9s/1 %9s/2" : " %9s/1", eko_isa_name((eko_isa)isa),
                   eko_isa_name((eko_isa)isa));
    printf("   (us per call; fast: level/threads)\n");
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int llama = 0; llama < 2; llama++) {
            const int nq = cases[c].nq, pos = cases[c].pos;
            ek_attn a = {.dtype = EMBER_FLOAT32, .q = q, .k = k, .v = v, .out = out, .nb = 1,
                         .nq = nq, .nh = NH, .nkvh = NH, .d = D, .n_keys = pos + nq,
                         .start_pos = pos, .causal = true, .scale = 0.125, .q_sb = nq * NH * D,
                         .q_st = NH * D, .q_sh = D, .o_sb = nq * NH * D, .o_st = NH * D,
                         .o_sh = D};
            a.k_sb = a.v_sb = LEN * NH * D;
            a.k_sn = a.v_sn = llama ? NH * D : D;
            a.k_sh = a.v_sh = llama ? D : LEN * D;
            printf("%-18s %-7s %10.1f", cases[c].name, llama ? "llama" : "ember",
                   time_it(ek_attn_reference, NULL, &a));
            for (int isa = 0; isa < EKO_ISA_COUNT; isa++) {
                if (!eko_isa_set((eko_isa)isa)) continue;
                printf(" %11.1f", time_it(eko_attention, NULL, &a));
                if (two) printf(" %11.1f", pool2 != NULL ? time_it(eko_attention, pool2, &a) : NAN);
            }
            printf("\n");
            fflush(stdout);
        }
    ember_threadpool_destroy(pool2);
    free(q);
    free(out);
    free(k);
    free(v);
    return 0;
}
