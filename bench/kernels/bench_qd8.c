/*
 * bench_qd8.c — dynamically quantized products (qd8_gemm.h) against the
 * float32 GEMM on packed weights (gemm.h), at GPT-2 linear sizes:
 *
 *   decode   1 x 768 @ [3072, 768]^T      (one row: the weight streamed once)
 *   prefill  64 x 768 @ [3072, 768]^T
 *
 * weights as float32 (the GEMM of the level in use), int8 per channel, and
 * int4 in groups of 32; activations quantized per row at every call (the
 * Convert node's work, included in the qd8 times). Every qd8 kernel set the
 * CPU runs, on 1 and 2 threads. Build against a build directory and run:
 *
 *   cc -O2 -std=c11 -Iinclude -Isrc bench/kernels/bench_qd8.c \
 *      build/libember_kernels_portable.a build/libember_core.a -lm -lpthread \
 *      -o build/bench_qd8 && build/bench_qd8
 *
 * Prints the fastest of repeated calls (the least disturbed, on a shared
 * machine) in microseconds and the speed-up over float32 on as many threads.
 *
 * Then "stream": one row through int4 weights (groups of 32, bfloat16
 * scales) of a 1B model's sizes, 80 matrices of [8192, 2048] (727 MB, more
 * than any last-level cache), against a plain read of the same packed
 * bytes: the bandwidth a decode step's products reach, and its share of
 * what one or two cores can read.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember/threadpool.h"
#include "kernels/optimized/gemm.h"
#include "kernels/optimized/qd8_gemm.h"

#define K 768
#define N 3072
#define MAX_M 64

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static float g_x[MAX_M * K], g_y[MAX_M * N], g_w[N * K], g_bias[N], g_scales[N * (K / 32)];
static int8_t g_q[MAX_M * K + EKO_QD8_X_PAD], g_w8[N * K];
static uint8_t g_w4[N * K / 2];
static eko_qd8_row g_rows[MAX_M];

typedef struct job {
    const eko_f32_gemm_config *f32;
    const float *packed;
    const eko_qd8_gemm_config *qd8;
    const eko_qd8_weights *qw;
    ember_threadpool *pool;
    size_t m;
} job;

static void run_f32(const job *j) {
    eko_f32_gemm(j->f32, j->pool, j->m, N, K, g_x, K, j->packed, g_y, N, -INFINITY, INFINITY);
}

static void run_qd8(const job *j) {
    eko_qd8_quantize(j->qd8, j->pool, j->m, K, g_x, K, g_q, K, g_rows);
    eko_qd8_gemm(j->qd8, j->pool, j->m, g_q, K, g_rows, j->qw, g_y, N, -INFINITY, INFINITY);
}

static double best_of(void (*fn)(const job *), const job *j) {
    fn(j); /* warm */
    double best = 1e30, start = now_us();
    for (int it = 0; it < 2000 && now_us() - start < 300e3; it++) {
        const double t0 = now_us();
        fn(j);
        const double t = now_us() - t0;
        best = t < best ? t : best;
    }
    return best;
}

/* ---- stream ---- */
#define SK 2048
#define SN 8192
#define SL 80
typedef struct stream_job {
    const eko_qd8_gemm_config *cfg;
    ember_threadpool *pool;
    const eko_qd8_weights *w; /* SL matrices */
} stream_job;

static void run_stream(const stream_job *j) {
    for (size_t l = 0; l < SL; l++) {
        eko_qd8_quantize(j->cfg, j->pool, 1, SK, g_x, SK, g_q, SK, g_rows);
        eko_qd8_gemm(j->cfg, j->pool, 1, g_q, SK, g_rows, &j->w[l], g_y, SN, -INFINITY, INFINITY);
    }
}

typedef struct read_task {
    const uint8_t *const *p;
    size_t bytes;
    uint64_t sums[64];
} read_task;

/* reads whole matrices, split over the threads (the pool's tasks) */
static void read_range(void *ctx, size_t thread, size_t start, size_t count) {
    read_task *t = ctx;
    uint64_t acc = 0;
    for (size_t l = start; l < start + count; l++) {
        const uint64_t *q = (const uint64_t *)(const void *)t->p[l];
        for (size_t i = 0; i < t->bytes / 8; i += 8)
            acc ^= q[i] + q[i + 1] + q[i + 2] + q[i + 3] + q[i + 4] + q[i + 5] + q[i + 6] + q[i + 7];
    }
    t->sums[thread % 64] += acc; /* read back (g_sink): the loads stay */
}

static volatile uint64_t g_sink;

static double time_read(ember_threadpool *pool, const uint8_t *const *p, size_t bytes) {
    read_task t = {p, bytes, {0}};
    double best = 1e30;
    for (int it = 0; it < 5; it++) {
        const double t0 = now_us();
        if (pool != NULL) ember_parallel_1d(pool, read_range, &t, SL, 1);
        else read_range(&t, 0, 0, SL);
        const double us = now_us() - t0;
        best = us < best ? us : best;
    }
    g_sink = t.sums[0] ^ t.sums[1];
    return best;
}

static void stream(ember_threadpool *const pools[2]) {
    static uint16_t sc[SN * (SK / 32)];
    static uint8_t w4[SN * SK / 2];
    static float bias[SN];
    uint32_t seed = 7;
    for (size_t i = 0; i < sizeof w4; i++) {
        seed = seed * 1664525u + 1013904223u;
        w4[i] = (uint8_t)(seed >> 24);
    }
    for (size_t i = 0; i < SN * (SK / 32); i++) sc[i] = 0x3c23; /* bfloat16 0.00995 */
    eko_qd8_weights w[SL];
    uint8_t *p[SL] = {NULL};
    size_t bytes = 0;
    for (size_t l = 0; l < SL; l++) {
        if (!eko_qd8_weights_init(&w[l], SN, SK, 32, true, true, &bytes) ||
            (p[l] = aligned_alloc(64, (bytes + 63) / 64 * 64)) == NULL) {
            fprintf(stderr, "stream: no memory for %d matrices\n", SL);
            for (size_t i = 0; i < l; i++) free(p[i]);
            return;
        }
        eko_qd8_pack(&w[l], w4, sc, bias, p[l]);
    }
    printf("\nstream: 1 x %d @ [%d, %d]^T int4 g32, %d matrices (%zu MB)\n", SK, SN, SK, SL,
           bytes * SL >> 20);
    printf("%-11s %7s %10s %10s %12s\n", "kernels", "threads", "GB/s", "read GB/s", "% of read");
    for (size_t t = 0; t < 2; t++) {
        const double read_us = time_read(pools[t], (const uint8_t *const *)p, bytes);
        for (size_t i = 0; eko_qd8_gemm_config_at(i) != NULL; i++) {
            const eko_qd8_gemm_config *cfg = eko_qd8_gemm_config_at(i);
            if (!eko_qd8_gemm_config_supported(cfg)) continue;
            stream_job j = {cfg, pools[t], w};
            double best = 1e30;
            for (int it = 0; it < 5; it++) {
                const double t0 = now_us();
                run_stream(&j);
                const double us = now_us() - t0;
                best = us < best ? us : best;
            }
            const double gbs = (double)(bytes * SL) / best * 1e-3;
            const double rgbs = (double)(bytes * SL) / read_us * 1e-3;
            printf("%-11s %7zu %10.1f %10.1f %11.0f%%\n", cfg->name, t + 1, gbs, rgbs,
                   100.0 * gbs / rgbs);
        }
    }
    for (size_t l = 0; l < SL; l++) free(p[l]);
}

int main(void) {
    uint32_t seed = 5;
    for (size_t i = 0; i < N * K; i++) {
        seed = seed * 1664525u + 1013904223u;
        g_w8[i] = (int8_t)((int)(seed >> 24) % 127);
        g_w[i] = (float)g_w8[i] * 0.01f;
        if (i % 2 == 0) g_w4[i / 2] = (uint8_t)(seed >> 28);
        else g_w4[i / 2] |= (uint8_t)((seed >> 28) << 4);
    }
    for (size_t i = 0; i < MAX_M * K; i++) g_x[i] = (float)((i * 37) % 101) * 0.02f - 1.0f;
    for (size_t i = 0; i < N * (K / 32); i++) g_scales[i] = 0.01f;
    for (size_t i = 0; i < N; i++) g_bias[i] = 0.1f;

    const eko_f32_gemm_config *f32 = eko_f32_gemm_config_active();
    size_t floats;
    eko_f32_packed_size(f32, N, K, &floats);
    float *packed = aligned_alloc(64, (floats * 4 + 63) / 64 * 64);
    eko_f32_pack(f32, N, K, g_w, false, g_bias, packed);
    eko_qd8_weights w8, w4;
    size_t b8, b4;
    eko_qd8_weights_init(&w8, N, K, K, false, false, &b8);
    eko_qd8_weights_init(&w4, N, K, 32, true, false, &b4);
    uint8_t *p8 = aligned_alloc(64, (b8 + 63) / 64 * 64), *p4 = aligned_alloc(64, (b4 + 63) / 64 * 64);
    eko_qd8_pack(&w8, g_w8, g_scales, g_bias, p8);
    eko_qd8_pack(&w4, g_w4, g_scales, g_bias, p4);

    ember_threadpool *pools[2] = {NULL, NULL};
    ember_threadpool_create(2, &pools[1]);
    printf("%-8s %-11s %-10s %7s %12s %10s\n", "shape", "kernels", "weights", "threads", "us", "vs f32");
    static const size_t ms[] = {1, MAX_M};
    for (size_t a = 0; a < 2; a++)
        for (size_t t = 0; t < 2; t++) {
            const char *shape = ms[a] == 1 ? "decode" : "prefill";
            job j = {f32, packed, NULL, NULL, pools[t], ms[a]};
            const double base = best_of(run_f32, &j);
            printf("%-8s %-11s %-10s %7zu %12.1f %10s\n", shape, eko_isa_name(f32->isa), "f32",
                   t + 1, base, "1.00x");
            for (size_t i = 0; eko_qd8_gemm_config_at(i) != NULL; i++) {
                const eko_qd8_gemm_config *cfg = eko_qd8_gemm_config_at(i);
                if (!eko_qd8_gemm_config_supported(cfg)) continue;
                for (int four = 0; four < 2; four++) {
                    job q = {f32, packed, cfg, four ? &w4 : &w8, pools[t], ms[a]};
                    const double us = best_of(run_qd8, &q);
                    printf("%-8s %-11s %-10s %7zu %12.1f %9.2fx\n", shape, cfg->name,
                           four ? "int4 g32" : "int8 pc", t + 1, us, base / us);
                }
            }
        }
    stream(pools);
    ember_threadpool_destroy(pools[1]);
    free(packed);
    free(p8);
    free(p4);
    return 0;
}
