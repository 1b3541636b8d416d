/*
 * tests/c/kernels/kernel_call.h — the call harness the kernel tests share
 * (header only; one test program includes it once, after kernel_test.h):
 *
 *     kc_init()              sets up the kernel context: a scratch arena of
 *                            KC_SCRATCH_BYTES (define it first for another size)
 *     CALL(key, args...)     resets the scratch, calls the portable kernel `key`
 *                            with the argument values (ember_value *)
 *     VP(expr)               a pointer to a temporary value
 *     IN(x, dtype, data, sizes...)   an input tensor over a data array
 *     IN0(x, dtype, scalar)          a 0-dim input
 *     OUT(x, dtype, buf, bounds...)  an output the kernel resizes
 *     IL(l, ints...), IL0(l)         an int list
 *     SHAPE_IS(t, sizes...)          whether t has those sizes
 *     close_f(a, b, n, tol)          floats equal within tol * (1 + |b|)
 *                                    (NaN matches NaN), the first miss printed
 */
#ifndef EMBER_TESTS_KERNEL_CALL_H
#define EMBER_TESTS_KERNEL_CALL_H

#include <math.h>

#include "kernel_test.h"

#ifndef KC_SCRATCH_BYTES
#define KC_SCRATCH_BYTES (1 << 16)
#endif

#define MAXD EMBER_MAX_DIM

/* The kernel context: a scratch arena, as a method would hand it. */
static uint8_t g_scratch[KC_SCRATCH_BYTES];
static ember_arena g_arena;
static struct ember_kernel_ctx g_ctx;

static inline void kc_init(void) {
    ember_arena_init(&g_arena, g_scratch, sizeof g_scratch);
    g_ctx.scratch = &g_arena;
    g_ctx.op_name = "";
    g_ctx.instruction = 0;
}

/* Calls kernel key with the given argument values. */
static inline ember_status kc_call(const char *key, ember_value **args, size_t n) {
    ember_arena_reset(&g_arena);
    return kt_call(&g_ctx, key, args, n);
}
#define CALL(key, ...)                                                                             \
    kc_call((key), (ember_value *[]){__VA_ARGS__},                                                 \
            sizeof((ember_value *[]){__VA_ARGS__}) / sizeof(ember_value *))

#define VP(expr) (&(ember_value[]){expr}[0]) /* a pointer to a temporary value */

/* x over data (capacity bytes); sizes start at the bounds. dynamic: an
 * output a kernel resizes; order NULL: contiguous. */
static inline ember_tensor *tt_make(tt *x, int dtype, const int32_t *sizes, size_t dim,
                                    void *data, size_t capacity, bool dynamic,
                                    const uint8_t *order) {
    return tt_init(x, dtype, sizes, dim, data, capacity, dynamic, order)->u.t;
}

/* An input tensor over a data array (its size is its capacity). */
#define IN(x, dtype, data, ...)                                                                    \
    tt_make(&(x), (dtype), (const int32_t[]){__VA_ARGS__},                                         \
            sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t), (data), sizeof(data), false, \
            NULL)
/* A 0-dim input. */
#define IN0(x, dtype, data) tt_make(&(x), (dtype), NULL, 0, &(data), sizeof(data), false, NULL)
/* An output with bounds ... over a buffer (resized by the kernel). */
#define OUT(x, dtype, buf, ...)                                                                    \
    tt_make(&(x), (dtype), (const int32_t[]){__VA_ARGS__},                                         \
            sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t), (buf), sizeof(buf), true,    \
            NULL)

#define IL(l, ...)                                                                                 \
    il_init(&(l), (const int64_t[]){__VA_ARGS__},                                                  \
            sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define IL0(l) il_init(&(l), NULL, 0)

static inline bool close_f(const float *a, const float *b, size_t n, float tol) {
    for (size_t i = 0; i < n; i++) {
        if ((isnan(a[i]) && isnan(b[i])) || a[i] == b[i]) continue;
        if (!(fabsf(a[i] - b[i]) <= tol * (1.0f + fabsf(b[i])))) {
            printf("  element %zu: %.9g vs %.9g\n", i, (double)a[i], (double)b[i]);
            return false;
        }
    }
    return true;
}

static inline bool same_shape(const ember_tensor *t, const int32_t *want, size_t dim) {
    if (t->dim != dim) return false;
    for (size_t i = 0; i < dim; i++)
        if (t->sizes[i] != want[i]) return false;
    return true;
}
#define SHAPE_IS(t, ...)                                                                           \
    same_shape((t), (const int32_t[]){__VA_ARGS__},                                                \
               sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

#endif /* EMBER_TESTS_KERNEL_CALL_H */
