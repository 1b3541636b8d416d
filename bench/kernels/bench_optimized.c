/*
 * bench_optimized.c — the optimized float32 kernels against the portable
 * kernels of the same keys, called through the kernel ABI at GPT-2 sizes:
 *
 *   softmax      _softmax.out over the last dim of (12, 128, 128)
 *   layer_norm   native_layer_norm.out of (64, 768) and of (1, 768)
 *   add_bcast    add.out (64, 768) + (768)
 *   gelu         gelu.out of (64, 3072), erf and tanh forms
 *   linear       linear.out 1 x 768 @ [3072, 768]^T + bias (decode) and 64 rows (prefill)
 *   addmm        addmm.out 1 x 768 @ (768, 3072) + bias (decode, mat2 as rows of n)
 *
 * The portable kernel on one thread, then the optimized one at every
 * instruction-set level the CPU has, on 1 and 2 threads. Build against a
 * build directory (scripts/build.sh build-opt) and run:
 *
 *   cc -O2 -std=c11 -Iinclude -Isrc bench/kernels/bench_optimized.c \
 *      build-opt/libember_kernels_portable.a build-opt/libember_core.a -lm -lpthread \
 *      -o build-opt/bench_optimized && build-opt/bench_optimized
 *
 * Prints the fastest of repeated calls (the least disturbed, on a shared
 * machine) in microseconds, and the speed-up over the portable kernel.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "ember/kernel.h"
#include "ember/threadpool.h"
#include "kernels/optimized/cpu.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static unsigned char g_scratch[4 << 20];

static ember_kernel_fn find(size_t (*count)(void), const ember_kernel *(*at)(size_t),
                            const char *key) {
    for (size_t i = 0; i < count(); i++)
        if (strcmp(at(i)->name, key) == 0) return at(i)->fn;
    return NULL;
}

/* Fastest call of fn over about 0.2 s (at least 5 calls). */
static double time_call(ember_kernel_fn fn, ember_threadpool *pool, ember_value **args,
                        size_t n) {
    ember_arena arena;
    ember_arena_init(&arena, g_scratch, sizeof g_scratch);
    struct ember_kernel_ctx ctx = {&arena, "bench", 0, pool};
    double best = 1e30, t0 = now_us();
    for (int calls = 0; calls < 5 || now_us() - t0 < 200000; calls++) {
        ember_arena_reset(&arena);
        const double t = now_us();
        if (fn(&ctx, args, n) != EMBER_OK) {
            printf("call failed: %s\n", ember_last_error());
            exit(1);
        }
        const double dt = now_us() - t;
        best = dt < best ? dt : best;
    }
    return best;
}

/* A float32 tensor (contiguous) over fresh memory with values in [-1, 1). */
typedef struct bt {
    ember_tensor t;
    int32_t sizes[4], bounds[4];
    uint8_t order[4];
    int64_t strides[4];
    ember_value v;
} bt;

/* Every buffer tensor() allocated, freed at the end. */
static void *g_buffers[64];
static size_t g_nbuffers;

static ember_value *tensor(bt *x, const int32_t *sizes, size_t dim) {
    memset(x, 0, sizeof *x);
    size_t n = 1;
    for (size_t i = 0; i < dim; i++) {
        x->sizes[i] = x->bounds[i] = sizes[i];
        x->order[i] = (uint8_t)i;
        n *= (size_t)sizes[i];
    }
    float *data = malloc(n * sizeof(float));
    if (data == NULL || g_nbuffers == sizeof g_buffers / sizeof g_buffers[0]) exit(1);
    g_buffers[g_nbuffers++] = data;
    for (size_t i = 0; i < n; i++) data[i] = (float)((i * 2654435761u) % 2000u) / 1000.0f - 1.0f;
    x->t.data = data;
    x->t.sizes = x->sizes;
    x->t.bounds = x->bounds;
    x->t.dim_order = x->order;
    x->t.strides = x->strides;
    x->t.dim = (uint32_t)dim;
    x->t.dtype = EMBER_FLOAT32;
    x->t.storage = EMBER_STORAGE_PLANNED;
    x->t.numel = (int64_t)n;
    x->t.nbytes = x->t.capacity = n * sizeof(float);
    ember_tensor_compute_strides(&x->t);
    x->v.tag = EMBER_TAG_TENSOR;
    x->v.u.t = &x->t;
    return &x->v;
}

static ember_threadpool *g_pool2;

static void row(const char *name, const char *key, ember_value **args, size_t n) {
    ember_kernel_fn port = find(ember_portable_kernel_count, ember_portable_kernel_at, key);
    ember_kernel_fn opt = find(ember_optimized_kernel_count, ember_optimized_kernel_at, key);
    const double tp = time_call(port, NULL, args, n);
    printf("%-22s %10.1f", name, tp);
    for (int isa = 0; isa < EKO_ISA_COUNT; isa++) {
        if (!eko_isa_set((eko_isa)isa)) continue;
        const double t1 = time_call(opt, NULL, args, n), t2 = time_call(opt, g_pool2, args, n);
        printf("   %s %8.1f (x%5.1f) %8.1f (x%5.1f)", eko_isa_name((eko_isa)isa), t1, tp / t1, t2,
               tp / t2);
    }
    printf("\n");
}

int main(void) {
    if (ember_threadpool_create(2, &g_pool2) != EMBER_OK) return 1;
    printf("microseconds per call (fastest); portable on 1 thread, then optimized on 1 and 2 "
           "threads per level\n");
    bt x, y, w, b, o1, o2, o3, v;
    ember_value iv, bv, dv, sv, nv, none, one;
    iv.tag = EMBER_TAG_INT;
    iv.u.i = -1;
    bv.tag = EMBER_TAG_BOOL;
    bv.u.b = false;
    dv.tag = EMBER_TAG_DOUBLE;
    dv.u.d = 1e-5;
    one.tag = EMBER_TAG_INT;
    one.u.i = 1;
    memset(&none, 0, sizeof none);
    none.tag = EMBER_TAG_NONE;

    { /* softmax (12, 128, 128) */
        const int32_t s[3] = {12, 128, 128};
        ember_value *a[5] = {tensor(&x, s, 3), &iv, &bv, tensor(&o1, s, 3), NULL};
        a[4] = a[3];
        row("softmax 12x128x128", "aten::_softmax.out", a, 5);
    }
    for (int rows = 64; rows >= 1; rows -= 63) { /* layer norm */
        const int32_t s[2] = {rows, 768}, c[1] = {768}, st[2] = {rows, 1};
        int64_t norm = 768;
        ember_value item = {.tag = EMBER_TAG_INT, .u.i = norm}, *items[1] = {&item};
        nv.tag = EMBER_TAG_INT_LIST;
        nv.u.int_list.items = items;
        nv.u.int_list.unboxed = &norm;
        nv.u.int_list.len = 1;
        ember_value list, *outs[3];
        ember_value *a[9] = {tensor(&x, s, 2), &nv, tensor(&w, c, 1), tensor(&b, c, 1), &dv,
                             outs[0] = tensor(&o1, s, 2), outs[1] = tensor(&o2, st, 2),
                             outs[2] = tensor(&o3, st, 2), &list};
        list.tag = EMBER_TAG_TENSOR_LIST;
        list.u.tensor_list.items = outs;
        list.u.tensor_list.len = 3;
        row(rows == 64 ? "layer_norm 64x768" : "layer_norm 1x768", "aten::native_layer_norm.out",
            a, 9);
    }
    { /* add broadcast */
        const int32_t s[2] = {64, 768}, c[1] = {768};
        ember_value *a[5] = {tensor(&x, s, 2), tensor(&y, c, 1), &one, tensor(&o1, s, 2), NULL};
        a[4] = a[3];
        row("add 64x768 + 768", "aten::add.out", a, 5);
    }
    static const char *const forms[2] = {"none", "tanh"};
    for (int f = 0; f < 2; f++) { /* gelu */
        const int32_t s[2] = {64, 3072};
        sv.tag = EMBER_TAG_STRING;
        sv.u.str.data = forms[f];
        sv.u.str.len = 4;
        ember_value *a[4] = {tensor(&x, s, 2), &sv, tensor(&o1, s, 2), NULL};
        a[3] = a[2];
        row(f == 0 ? "gelu 64x3072" : "gelu tanh 64x3072", "aten::gelu.out", a, 4);
    }
    for (int rows = 1; rows <= 64; rows += 63) { /* linear */
        const int32_t s[2] = {rows, 768}, ws[2] = {3072, 768}, bs[1] = {3072}, os[2] = {rows, 3072};
        ember_value *a[5] = {tensor(&x, s, 2), tensor(&w, ws, 2), tensor(&b, bs, 1),
                             tensor(&o1, os, 2), NULL};
        a[4] = a[3];
        row(rows == 1 ? "linear 1x768->3072" : "linear 64x768->3072", "aten::linear.out", a, 5);
    }
    { /* addmm decode, mat2 (768, 3072) */
        const int32_t s[2] = {1, 768}, ws[2] = {768, 3072}, bs[1] = {3072}, os[2] = {1, 3072};
        ember_value *a[7] = {tensor(&b, bs, 1), tensor(&x, s, 2), tensor(&v, ws, 2), &one, &one,
                             tensor(&o1, os, 2), NULL};
        a[6] = a[5];
        row("addmm 1x768@768x3072", "aten::addmm.out", a, 7);
    }
    ember_threadpool_destroy(g_pool2);
    for (size_t i = 0; i < g_nbuffers; i++) free(g_buffers[i]);
    return 0;
}
