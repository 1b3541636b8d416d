/*
 * tests/c/optimized/opt_test.h — what the tests of the optimized kernels
 * share (header only): tensors on the heap, the optimized and portable
 * kernels by key, a kernel context with scratch and a thread pool, random
 * data with special values mixed in, and comparisons.
 *
 *     ot t;  ot_new(&t, dtype, sizes, dim, dynamic)   a tensor over calloc'd storage
 *     ot_free(&t)
 *     ot_call(fn, args, n)                           calls with the shared context
 *     ot_ctx_set(pool, scratch_bytes)                its pool and scratch size
 *     ot_fill(&t, seed, specials)                    random values (+ NaN, inf, 0, -0)
 *     ot_close(a, b, n, rtol, atol)                  NaN positions equal, values close
 */
#ifndef EMBER_TESTS_OPTIMIZED_OPT_TEST_H
#define EMBER_TESTS_OPTIMIZED_OPT_TEST_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/kernel.h"
#include "ember/threadpool.h"
#include "kernels/kernel_test.h"
#include "kernels/optimized/cpu.h"
#include "rng.h"

typedef struct ot {
    tt x;
    void *data;
    size_t bytes;
} ot;

/* A tensor of sizes[0..dim) over zeroed heap storage; dynamic: an output. */
static inline ember_value *ot_new(ot *t, int dtype, const int32_t *sizes, size_t dim,
                                  bool dynamic) {
    size_t n = 1;
    for (size_t i = 0; i < dim; i++) n *= (size_t)sizes[i];
    t->bytes = n * ember_dtype_size(dtype);
    t->data = calloc(t->bytes + 64, 1); /* never NULL for empty tensors */
    return tt_init(&t->x, dtype, sizes, dim, t->data, t->bytes, dynamic, NULL);
}

static inline void ot_free(ot *t) {
    free(t->data);
    t->data = NULL;
}

static inline float *ot_f(ot *t) { return (float *)t->data; }

/* The optimized kernel registered under key (NULL if none). */
static inline ember_kernel_fn ot_optimized(const char *key) {
    for (size_t i = 0; i < ember_optimized_kernel_count(); i++)
        if (strcmp(ember_optimized_kernel_at(i)->name, key) == 0)
            return ember_optimized_kernel_at(i)->fn;
    printf("no optimized kernel %s\n", key);
    return NULL;
}

static struct ember_kernel_ctx g_ot_ctx;
static ember_arena g_ot_arena;
static unsigned char *g_ot_scratch;

/* The context's pool (NULL: the caller only) and scratch bytes (0: none). */
static inline void ot_ctx_set(ember_threadpool *pool, size_t scratch_bytes) {
    free(g_ot_scratch);
    g_ot_scratch = scratch_bytes > 0 ? malloc(scratch_bytes) : NULL;
    ember_arena_init(&g_ot_arena, g_ot_scratch, scratch_bytes);
    g_ot_ctx.scratch = &g_ot_arena;
    g_ot_ctx.threadpool = pool;
    g_ot_ctx.op_name = "";
    g_ot_ctx.instruction = 0;
}

static inline ember_status ot_call(ember_kernel_fn fn, ember_value **args, size_t n) {
    ember_arena_reset(&g_ot_arena);
    ember_clear_error();
    return fn != NULL ? fn(&g_ot_ctx, args, n) : EMBER_ERR_OPERATOR_MISSING;
}

/* Random floats scaled by scale; with specials, about one value in 61 is
 * NaN, +-inf, 0 or -0. */
static inline void ot_fill(ot *t, float scale, bool specials) {
    float *f = ot_f(t);
    const float sp[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
    for (size_t i = 0; i < t->bytes / sizeof(float); i++) {
        f[i] = rng_float() * scale;
        if (specials && i % 61 == 17) f[i] = sp[(i / 61) % 5];
    }
}

/* NaN where b has NaN, equal infinities, else |a - b| <= rtol |b| + atol. */
static inline bool ot_close(const float *a, const float *b, size_t n, double rtol, double atol,
                            size_t *bad) {
    for (size_t i = 0; i < n; i++) {
        const bool ok = isnan(b[i]) ? isnan(a[i])
                        : isinf(b[i]) ? a[i] == b[i]
                                      : fabs((double)a[i] - b[i]) <= rtol * fabs(b[i]) + atol;
        if (!ok) {
            *bad = i;
            return false;
        }
    }
    return true;
}

/* The thread pools the tests run on: none, two and three threads. */
static ember_threadpool *g_ot_pools[3];
static inline size_t ot_pools_init(void) {
    g_ot_pools[0] = NULL;
    if (ember_threadpool_create(2, &g_ot_pools[1]) != EMBER_OK) return 1;
    if (ember_threadpool_create(3, &g_ot_pools[2]) != EMBER_OK) return 2;
    /* split even the small cases over every thread */
    ember_threadpool_set_grain(g_ot_pools[1], 1);
    ember_threadpool_set_grain(g_ot_pools[2], 1);
    return 3;
}
static inline void ot_pools_free(void) {
    ember_threadpool_destroy(g_ot_pools[1]);
    ember_threadpool_destroy(g_ot_pools[2]);
    free(g_ot_scratch);
}

#endif /* EMBER_TESTS_OPTIMIZED_OPT_TEST_H */
