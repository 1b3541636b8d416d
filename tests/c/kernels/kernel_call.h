/*
 * tests/c/kernels/kernel_call.h — the call harness the kernel tests share
 * (header only; one test program includes it once):
 *
 *     kc_init()              sets up the kernel context: a scratch arena of
 *                            KC_SCRATCH_BYTES (define it first for another size)
 *     kc_set_scratch(bytes)  the scratch the next calls get: up to
 *                            KC_SCRATCH_BYTES, 0 for none (an arena with no
 *                            memory), to reach a kernel's no-scratch paths
 *     CALL(key, args...)     resets the scratch, calls the portable kernel `key`
 *                            with the argument values (ember_value *)
 *     VP(expr)               a pointer to a temporary value
 *     v_int(i), v_dbl(d), v_bool(b), v_none(), v_str(s)
 *                            boxed scalars from a ring of KC_RING values
 *     IN(x, dtype, data, sizes...)   an input tensor over a data array
 *     IN0(x, dtype, scalar)          a 0-dim input
 *     OUT(x, dtype, buf, bounds...)  an output the kernel resizes
 *     DIMS(sizes...)                 a sizes array and its length, as tt_new takes
 *     IL(l, ints...), IL0(l)         an int list in storage the test owns
 *     INTS(ints...), INTS0()         an int list from a ring of KC_RING lists
 *     kc_fill(t)                     fills t with rng_double() (rng.h;
 *                                    integers: -4 .. 4)
 *     SHAPE_IS(t, sizes...)          whether t has those sizes
 *     close_f(a, b, n, tol)          floats equal within tol * (1 + |b|)
 *                                    (NaN matches NaN), the first miss printed
 *     close_fd(a, b, n, tol)         the same for floats against doubles
 *     NEAR(got, floats...)           got[0..n) within 1e-6 of the listed floats
 *     EQ_I64(got, ints...)           got[0..n) equal to the listed int64s
 *     tt_close(t, want, n, tol, what)
 *                                    t's logical elements against doubles
 */
#ifndef EMBER_TESTS_KERNEL_CALL_H
#define EMBER_TESTS_KERNEL_CALL_H

#include <math.h>

#include "kernel_test.h"
#include "rng.h"

#ifndef KC_SCRATCH_BYTES
#define KC_SCRATCH_BYTES (1 << 16)
#endif

#define MAXD EMBER_MAX_DIM

/* Boxed scalars and int lists come from rings this long (a call uses far fewer). */
#define KC_RING 256

/* The kernel context: a scratch arena over g_scratch (or part of it), as a
 * method would hand it. */
static uint8_t g_scratch[KC_SCRATCH_BYTES];
static ember_arena g_arena;
static struct ember_kernel_ctx g_ctx;

/* The scratch the next calls get: bytes (at most KC_SCRATCH_BYTES), or 0 for
 * an arena with no memory, as a method with no scratch planned. */
static inline void kc_set_scratch(size_t bytes) {
    if (bytes > KC_SCRATCH_BYTES) {
        printf("kc_set_scratch: %zu bytes, KC_SCRATCH_BYTES is %zu\n", bytes,
               (size_t)KC_SCRATCH_BYTES);
        abort();
    }
    ember_arena_init(&g_arena, bytes > 0 ? g_scratch : NULL, bytes);
}

static inline void kc_init(void) {
    kc_set_scratch(KC_SCRATCH_BYTES);
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

/* v boxed in a ring slot: valid until KC_RING more are boxed. */
static ember_value g_kc_vals[KC_RING];
static size_t g_kc_nvals;
static inline ember_value *kc_box(ember_value v) {
    ember_value *p = &g_kc_vals[g_kc_nvals++ % KC_RING];
    *p = v;
    return p;
}
static inline ember_value *v_int(int64_t i) { return kc_box(kt_int(i)); }
static inline ember_value *v_dbl(double d) { return kc_box(kt_double(d)); }
static inline ember_value *v_bool(bool b) { return kc_box(kt_bool(b)); }
static inline ember_value *v_none(void) { return kc_box(kt_none()); }
static inline ember_value *v_str(const char *s) { return kc_box(kt_str(s)); }

#define DIMS(...) (const int32_t[]){__VA_ARGS__}, sizeof((const int32_t[]){__VA_ARGS__}) / 4

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

/* An int list in a ring slot: valid until KC_RING more are made. */
static il g_kc_lists[KC_RING];
static size_t g_kc_nlists;
static inline ember_value *kc_ints(const int64_t *vals, size_t n) {
    return il_init(&g_kc_lists[g_kc_nlists++ % KC_RING], vals, n);
}
#define INTS(...)                                                                                  \
    kc_ints((const int64_t[]){__VA_ARGS__},                                                        \
            sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define INTS0() kc_ints(NULL, 0)

/* t's elements from rng_double() (integers: -4 .. 4), in logical order. */
static inline void kc_fill(ember_tensor *t) {
    for (int64_t i = 0; i < t->numel; i++)
        tt_set(t, i, kt_is_int(t->dtype) ? floor(rng_double() * 4.5) : rng_double());
}

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

static inline bool close_fd(const float *a, const double *b, size_t n, double tol) {
    for (size_t i = 0; i < n; i++) {
        if ((isnan(a[i]) && isnan(b[i])) || a[i] == b[i]) continue;
        if (!(fabs(a[i] - b[i]) <= tol * (1.0 + fabs(b[i])))) {
            printf("  element %zu: %.9g vs %.9g\n", i, (double)a[i], b[i]);
            return false;
        }
    }
    return true;
}

/* got[0..n) against the listed values, relative tolerance 1e-6 */
#define NEAR(got, ...)                                                                             \
    close_f((got), (const float[]){__VA_ARGS__}, sizeof((const float[]){__VA_ARGS__}) / 4, 1e-6f)

static inline bool same_i64(const int64_t *got, const int64_t *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            printf("  element %zu: got %lld, want %lld\n", i, (long long)got[i],
                   (long long)want[i]);
            return false;
        }
    return true;
}
#define EQ_I64(got, ...)                                                                           \
    same_i64((got), (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / 8)

/* got's logical elements against want[0..n) within tol * (1 + |want|), NaN
 * matching NaN, infinities matching exactly; the first miss printed after what. */
static inline bool tt_close(const ember_tensor *got, const double *want, int64_t n, double tol,
                            const char *what) {
    if (got->numel != n) {
        printf("  %s: %lld elements, want %lld\n", what, (long long)got->numel, (long long)n);
        return false;
    }
    for (int64_t i = 0; i < n; i++) {
        double g = tt_at(got, i), w = want[i];
        if (isnan(w) ? isnan(g) : (isinf(w) ? g == w : fabs(g - w) <= tol * (1.0 + fabs(w))))
            continue;
        printf("  %s: element %lld: got %.9g, want %.9g\n", what, (long long)i, g, w);
        return false;
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
