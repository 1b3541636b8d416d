/*
 * Core runtime pieces without a program: status names, dtypes, tensor
 * resize and strides, the arena, the kernel and backend registries, boxed
 * int lists, last-error messages, the platform table, and the half/bfloat16
 * conversions of kernel.h checked against references computed here.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "ember/backend.h"
#include "ember/ember.h"
#include "ember/kernel.h"
#include "ember/platform.h"

#if !defined(__STDC_NO_THREADS__) && defined(__has_include)
#if __has_include(<threads.h>)
#include <threads.h>
#define HAVE_C11_THREADS 1
#endif
#endif

/* ---------------------------------------------------------------------- */
/* Status strings                                                         */
/* ---------------------------------------------------------------------- */

static const ember_status k_all_status[] = {
    EMBER_OK,
    EMBER_ERR_INVALID_ARGUMENT, EMBER_ERR_INVALID_STATE, EMBER_ERR_NOT_FOUND,
    EMBER_ERR_INDEX_OUT_OF_RANGE, EMBER_ERR_TYPE_MISMATCH, EMBER_ERR_SHAPE_MISMATCH,
    EMBER_ERR_INVALID_PROGRAM, EMBER_ERR_TRUNCATED, EMBER_ERR_BAD_IDENTIFIER,
    EMBER_ERR_NOT_SUPPORTED, EMBER_ERR_OPERATOR_MISSING, EMBER_ERR_BACKEND_MISSING,
    EMBER_ERR_OUT_OF_MEMORY, EMBER_ERR_IO, EMBER_ERR_TABLE_FULL,
    EMBER_ERR_KERNEL_FAILED, EMBER_ERR_DELEGATE_FAILED, EMBER_ERR_DATA_OUT_OF_BOUNDS,
    EMBER_ERR_LOOP_LIMIT, EMBER_ERR_OUTPUT_MISMATCH,
};
#define NUM_STATUS (sizeof k_all_status / sizeof k_all_status[0])

static void test_status_strings(void) {
    check_section("status strings");
    for (size_t i = 0; i < NUM_STATUS; i++) {
        const char *s = ember_status_str(k_all_status[i]);
        if (!CHECK_MSG(s != NULL && s[0] != '\0', "status 0x%04x", (unsigned)k_all_status[i]))
            continue;
        CHECK_MSG(strstr(s, "unknown") == NULL, "status 0x%04x is \"%s\"",
                  (unsigned)k_all_status[i], s);
        for (size_t j = 0; j < i; j++)
            CHECK_MSG(strcmp(s, ember_status_str(k_all_status[j])) != 0,
                      "0x%04x and 0x%04x share \"%s\"", (unsigned)k_all_status[i],
                      (unsigned)k_all_status[j], s);
    }
    CHECK_EQ_STR(ember_status_str(EMBER_OK), "ok");
    /* Codes outside the enum still get a string, never NULL. */
    const char *u = ember_status_str((ember_status)0x7777);
    CHECK(u != NULL && strstr(u, "unknown") != NULL);
    u = ember_status_str((ember_status)0x0106);
    CHECK(u != NULL && strstr(u, "unknown") != NULL);
    /* The groups of the enum are as documented. */
    CHECK_EQ_INT(EMBER_ERR_INVALID_ARGUMENT >> 8, 1);
    CHECK_EQ_INT(EMBER_ERR_INVALID_PROGRAM >> 8, 2);
    CHECK_EQ_INT(EMBER_ERR_NOT_SUPPORTED >> 8, 3);
    CHECK_EQ_INT(EMBER_ERR_OUT_OF_MEMORY >> 8, 4);
    CHECK_EQ_INT(EMBER_ERR_KERNEL_FAILED >> 8, 5);
}

/* ---------------------------------------------------------------------- */
/* Dtypes                                                                 */
/* ---------------------------------------------------------------------- */

static void test_dtypes(void) {
    static const struct { int code; size_t size; const char *name; } known[] = {
        {0, 1, "uint8"}, {1, 1, "int8"}, {2, 2, "int16"}, {3, 4, "int32"},
        {4, 8, "int64"}, {5, 2, "float16"}, {6, 4, "float32"}, {7, 8, "float64"},
        {11, 1, "bool"}, {12, 1, "qint8"}, {13, 1, "quint8"}, {14, 4, "qint32"},
        {15, 2, "bfloat16"}, {16, 1, "quint4x2"}, {17, 1, "quint2x4"}, {22, 2, "bits16"},
        {23, 1, "float8_e5m2"}, {24, 1, "float8_e4m3fn"}, {25, 1, "float8_e5m2fnuz"},
        {26, 1, "float8_e4m3fnuz"}, {27, 2, "uint16"}, {28, 4, "uint32"}, {29, 8, "uint64"},
    };
    static const int unknown[] = {-1, 8, 9, 10, 18, 19, 20, 21, 30, 31, 64, 255, 256, 100000};
    size_t nk = sizeof known / sizeof known[0];
    check_section("dtypes");
    for (size_t i = 0; i < nk; i++) {
        CHECK_MSG(ember_dtype_size(known[i].code) == known[i].size, "dtype %d: size %zu, want %zu",
                  known[i].code, ember_dtype_size(known[i].code), known[i].size);
        CHECK_EQ_STR(ember_dtype_name(known[i].code), known[i].name);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(ember_dtype_name(known[i].code), ember_dtype_name(known[j].code)) != 0);
    }
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        CHECK_MSG(ember_dtype_size(unknown[i]) == 0, "dtype %d", unknown[i]);
        CHECK_EQ_STR(ember_dtype_name(unknown[i]), "unknown");
    }
    /* The enum's codes are the file format's ScalarType codes. */
    CHECK_EQ_INT(EMBER_FLOAT32, 6);
    CHECK_EQ_INT(EMBER_BOOL, 11);
    CHECK_EQ_INT(EMBER_BFLOAT16, 15);
    CHECK_EQ_INT(EMBER_UINT64, 29);
}

/* ---------------------------------------------------------------------- */
/* Tensors                                                                */
/* ---------------------------------------------------------------------- */

/* A tensor with its own arrays, as the method builds them. */
typedef struct tbox {
    ember_tensor t;
    int32_t sizes[EMBER_MAX_DIM];
    int32_t bounds[EMBER_MAX_DIM];
    uint8_t order[EMBER_MAX_DIM];
    int64_t strides[EMBER_MAX_DIM];
    float data[256];
} tbox;

/* Sets up a tensor at its bound shape. capacity 0 means "no storage". */
static void tbox_init(tbox *b, size_t dim, const int32_t *bounds, const uint8_t *order,
                      uint8_t dynamism, size_t capacity) {
    memset(b, 0, sizeof *b);
    for (size_t i = 0; i < dim; i++) {
        b->sizes[i] = bounds[i];
        b->bounds[i] = bounds[i];
        b->order[i] = order != NULL ? order[i] : (uint8_t)i;
    }
    b->t.sizes = b->sizes;
    b->t.bounds = b->bounds;
    b->t.dim_order = b->order;
    b->t.strides = b->strides;
    b->t.dim = (uint32_t)dim;
    b->t.dtype = EMBER_FLOAT32;
    b->t.dynamism = dynamism;
    b->t.storage = capacity > 0 ? EMBER_STORAGE_PLANNED : EMBER_STORAGE_NONE;
    b->t.data = capacity > 0 ? b->data : NULL;
    b->t.capacity = capacity;
    ember_shape_bytes(b->sizes, dim, 4, &b->t.numel, &b->t.nbytes);
    ember_tensor_compute_strides(&b->t);
}

static bool sizes_are(const ember_tensor *t, const int32_t *want) {
    for (uint32_t i = 0; i < t->dim; i++)
        if (t->sizes[i] != want[i]) return false;
    return true;
}

static bool strides_are(const ember_tensor *t, const int64_t *want) {
    for (uint32_t i = 0; i < t->dim; i++)
        if (t->strides[i] != want[i]) return false;
    return true;
}

static void test_resize_static(void) {
    tbox b;
    const int32_t bound[2] = {4, 8};
    check_section("resize: static");
    tbox_init(&b, 2, bound, NULL, EMBER_SHAPE_STATIC, sizeof b.data);
    const int64_t same[2] = {4, 8}, smaller[2] = {2, 8}, other[2] = {8, 4};
    CHECK_OK(ember_tensor_resize(&b.t, same, 2));
    CHECK(sizes_are(&b.t, bound));
    CHECK_EQ_INT(b.t.numel, 32);
    CHECK_EQ_INT(b.t.nbytes, 128);
    CHECK_ERR(ember_tensor_resize(&b.t, smaller, 2), EMBER_ERR_SHAPE_MISMATCH, "dim 0");
    CHECK_STATUS(ember_tensor_resize(&b.t, other, 2), EMBER_ERR_SHAPE_MISMATCH);
    CHECK(sizes_are(&b.t, bound));
    CHECK_EQ_INT(b.t.numel, 32);
}

static void test_resize_dynamic_bound(void) {
    tbox b;
    const int32_t bound[2] = {4, 8};
    check_section("resize: dynamic bound, every dimension");
    tbox_init(&b, 2, bound, NULL, EMBER_SHAPE_DYNAMIC_BOUND, 4 * 8 * sizeof(float));

    const int64_t ok1[2] = {2, 8};
    CHECK_OK(ember_tensor_resize(&b.t, ok1, 2));
    const int32_t want1[2] = {2, 8};
    const int64_t stride1[2] = {8, 1};
    CHECK(sizes_are(&b.t, want1));
    CHECK(strides_are(&b.t, stride1));
    CHECK_EQ_INT(b.t.numel, 16);
    CHECK_EQ_INT(b.t.nbytes, 64);

    /* numel 5 is far below the bound's 32, but dim 0 exceeds its bound. */
    const int64_t over0[2] = {5, 1};
    CHECK_ERR(ember_tensor_resize(&b.t, over0, 2), EMBER_ERR_SHAPE_MISMATCH, "dim 0");
    CHECK(sizes_are(&b.t, want1)); /* unchanged after a failed resize */
    CHECK_EQ_INT(b.t.numel, 16);
    const int64_t over1[2] = {1, 9};
    CHECK_ERR(ember_tensor_resize(&b.t, over1, 2), EMBER_ERR_SHAPE_MISMATCH, "dim 1");
    /* The transposed shape has the same numel and still is rejected. */
    const int64_t swapped[2] = {8, 4};
    CHECK_STATUS(ember_tensor_resize(&b.t, swapped, 2), EMBER_ERR_SHAPE_MISMATCH);

    const int64_t full[2] = {4, 8}, zero[2] = {0, 8}, one[2] = {1, 1};
    CHECK_OK(ember_tensor_resize(&b.t, full, 2));
    CHECK_EQ_INT(b.t.numel, 32);
    CHECK_OK(ember_tensor_resize(&b.t, zero, 2));
    CHECK_EQ_INT(b.t.numel, 0);
    CHECK_EQ_INT(b.t.nbytes, 0);
    CHECK_OK(ember_tensor_resize(&b.t, one, 2));
    CHECK_EQ_INT(b.t.numel, 1);

    /* Rank must stay the same. */
    const int64_t rank3[3] = {1, 2, 2}, rank1[1] = {4};
    CHECK_ERR(ember_tensor_resize(&b.t, rank3, 3), EMBER_ERR_SHAPE_MISMATCH, "rank");
    CHECK_ERR(ember_tensor_resize(&b.t, rank1, 1), EMBER_ERR_SHAPE_MISMATCH, "rank");
    CHECK_STATUS(ember_tensor_resize(&b.t, NULL, 0), EMBER_ERR_SHAPE_MISMATCH);
    /* Negative and out-of-int32 sizes. */
    const int64_t neg[2] = {-1, 8}, neg2[2] = {2, -3}, huge[2] = {1, (int64_t)INT32_MAX + 1};
    CHECK_STATUS(ember_tensor_resize(&b.t, neg, 2), EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(ember_tensor_resize(&b.t, neg2, 2), EMBER_ERR_SHAPE_MISMATCH);
    CHECK_STATUS(ember_tensor_resize(&b.t, huge, 2), EMBER_ERR_SHAPE_MISMATCH);
    CHECK_EQ_INT(b.t.sizes[0], 1);
    CHECK_EQ_INT(b.t.sizes[1], 1);
    /* NULL arguments. */
    CHECK_STATUS(ember_tensor_resize(NULL, full, 2), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_tensor_resize(&b.t, NULL, 2), EMBER_ERR_INVALID_ARGUMENT);
}

static void test_resize_capacity(void) {
    tbox b;
    const int32_t bound[2] = {4, 8};
    check_section("resize: capacity");
    /* Storage smaller than the bound (e.g. a caller's output buffer). */
    tbox_init(&b, 2, bound, NULL, EMBER_SHAPE_DYNAMIC_BOUND, 10 * sizeof(float));
    const int64_t fits[2] = {2, 5}, too_big[2] = {2, 6}, exact[2] = {1, 8};
    CHECK_OK(ember_tensor_resize(&b.t, fits, 2));
    CHECK_ERR(ember_tensor_resize(&b.t, too_big, 2), EMBER_ERR_SHAPE_MISMATCH, "bytes");
    CHECK_OK(ember_tensor_resize(&b.t, exact, 2));
    CHECK_EQ_INT(b.t.nbytes, 32);

    /* Unbounded: sizes may pass the file's sizes; capacity still limits. */
    tbox_init(&b, 2, bound, NULL, EMBER_SHAPE_DYNAMIC_UNBOUND, 32 * sizeof(float));
    const int64_t wide[2] = {1, 32}, wider[2] = {1, 33};
    CHECK_OK(ember_tensor_resize(&b.t, wide, 2));
    CHECK_EQ_INT(b.t.sizes[1], 32);
    CHECK_STATUS(ember_tensor_resize(&b.t, wider, 2), EMBER_ERR_SHAPE_MISMATCH);

    /* Sizes whose byte count overflows size_t are rejected, not wrapped
     * (an unbounded tensor without storage has no other limit). */
    const int32_t ones[4] = {1, 1, 1, 1};
    tbox_init(&b, 4, ones, NULL, EMBER_SHAPE_DYNAMIC_UNBOUND, 0);
    const int64_t all_max[4] = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
    CHECK_STATUS(ember_tensor_resize(&b.t, all_max, 4), EMBER_ERR_SHAPE_MISMATCH);
    /* numel is 0 here, but the strides (zeros count as 1) would overflow. */
    const int64_t zero_big[4] = {0, INT32_MAX, INT32_MAX, INT32_MAX};
    CHECK_STATUS(ember_tensor_resize(&b.t, zero_big, 4), EMBER_ERR_SHAPE_MISMATCH);
    const int64_t small4[4] = {1, 2, 3, 4};
    CHECK_OK(ember_tensor_resize(&b.t, small4, 4));
    CHECK_EQ_INT(b.t.numel, 24);
    const int64_t strides4[4] = {24, 12, 4, 1};
    CHECK(strides_are(&b.t, strides4));
    const int32_t big_bound[4] = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};

    /* The checked shape helper itself. */
    int64_t numel;
    size_t nbytes;
    const int32_t neg[2] = {3, -1}, ok[3] = {2, 3, 4};
    CHECK(!ember_shape_bytes(big_bound, 4, 8, &numel, &nbytes));
    CHECK(!ember_shape_bytes(neg, 2, 4, &numel, &nbytes));
    const int32_t zero_big32[4] = {0, INT32_MAX, INT32_MAX, INT32_MAX};
    CHECK(!ember_shape_bytes(zero_big32, 4, 4, &numel, &nbytes));
    CHECK(ember_shape_bytes(ok, 3, 8, &numel, &nbytes) && numel == 24 && nbytes == 192);
    CHECK(ember_shape_bytes(ok, 0, 4, &numel, &nbytes) && numel == 1 && nbytes == 4);
}

static void test_strides(void) {
    tbox b;
    check_section("strides from dim order");
    const int32_t nchw[4] = {2, 3, 4, 5};
    tbox_init(&b, 4, nchw, NULL, EMBER_SHAPE_DYNAMIC_BOUND, 0);
    const int64_t contig[4] = {60, 20, 5, 1};
    CHECK(strides_are(&b.t, contig));
    CHECK(ember_tensor_is_contiguous(&b.t));

    /* Channels last: dim order [0,2,3,1] (N, H, W, C in memory). */
    const uint8_t cl[4] = {0, 2, 3, 1};
    tbox_init(&b, 4, nchw, cl, EMBER_SHAPE_DYNAMIC_BOUND, 0);
    const int64_t cl_strides[4] = {60, 1, 15, 3};
    CHECK_MSG(strides_are(&b.t, cl_strides), "strides %lld %lld %lld %lld",
              (long long)b.strides[0], (long long)b.strides[1], (long long)b.strides[2],
              (long long)b.strides[3]);
    CHECK(!ember_tensor_is_contiguous(&b.t));
    /* Resize recomputes strides in the same dim order. */
    const int64_t smaller[4] = {1, 2, 2, 3};
    CHECK_OK(ember_tensor_resize(&b.t, smaller, 4));
    const int64_t cl_small[4] = {12, 1, 6, 2};
    CHECK(strides_are(&b.t, cl_small));
    /* With one channel, channels-last memory is also row-major. */
    const int64_t one_c[4] = {2, 1, 4, 5};
    CHECK_OK(ember_tensor_resize(&b.t, one_c, 4));
    CHECK(ember_tensor_is_contiguous(&b.t));

    /* A transpose-like order on a matrix: [1,0] is column-major. */
    const int32_t mat[2] = {3, 4};
    const uint8_t t10[2] = {1, 0};
    tbox_init(&b, 2, mat, t10, EMBER_SHAPE_STATIC, 0);
    const int64_t cm[2] = {1, 3};
    CHECK(strides_are(&b.t, cm));
    CHECK(!ember_tensor_is_contiguous(&b.t));

    /* Zero-sized dims count as 1 in strides (as ATen does). */
    const int32_t z[3] = {2, 0, 3};
    tbox_init(&b, 3, z, NULL, EMBER_SHAPE_STATIC, 0);
    const int64_t zs[3] = {3, 3, 1};
    CHECK(strides_are(&b.t, zs));
    CHECK(ember_tensor_is_contiguous(&b.t));
    CHECK_EQ_INT(b.t.numel, 0);

    /* Rank 0: a scalar tensor. */
    tbox_init(&b, 0, NULL, NULL, EMBER_SHAPE_STATIC, 4);
    CHECK_OK(ember_tensor_resize(&b.t, NULL, 0));
    CHECK_EQ_INT(b.t.numel, 1);
    CHECK(ember_tensor_is_contiguous(&b.t));

    /* An invalid dim order is reported by the internal helper. */
    const uint8_t bad[2] = {0, 2};
    tbox_init(&b, 2, mat, NULL, EMBER_SHAPE_STATIC, 0);
    b.order[0] = bad[0];
    b.order[1] = bad[1];
    CHECK(!ember_tensor_compute_strides(&b.t));
}

/* ---------------------------------------------------------------------- */
/* Arena                                                                  */
/* ---------------------------------------------------------------------- */

static void test_arena(void) {
    static _Alignas(64) uint8_t mem[1024];
    ember_arena a;
    check_section("arena");
    ember_arena_init(&a, mem, sizeof mem);
    ember_allocator *al = &a.base;
    CHECK(al->alloc != NULL);

    uint8_t *p1 = al->alloc(al->ctx, 3, 1);
    CHECK(p1 == mem);
    CHECK_EQ_INT(a.used, 3);
    uint8_t *p2 = al->alloc(al->ctx, 8, 8);
    CHECK(p2 == mem + 8);
    CHECK(((uintptr_t)p2 & 7) == 0);
    uint8_t *p3 = al->alloc(al->ctx, 1, 64);
    CHECK(p3 == mem + 64);
    CHECK(((uintptr_t)p3 & 63) == 0);
    uint8_t *p4 = al->alloc(al->ctx, 16, 16);
    CHECK(p4 == mem + 80);
    CHECK_EQ_INT(a.used, 96);
    CHECK_EQ_INT(a.peak, 96);
    memset(p1, 0xaa, 3); /* ASan would flag writes outside mem */
    memset(p4, 0xbb, 16);

    /* Bad alignments. */
    CHECK(al->alloc(al->ctx, 4, 0) == NULL);
    CHECK(al->alloc(al->ctx, 4, 3) == NULL);
    CHECK(al->alloc(al->ctx, 4, 24) == NULL);
    CHECK_EQ_INT(a.used, 96);

    /* Exhaustion: exactly the rest fits; one byte more does not. */
    CHECK(al->alloc(al->ctx, sizeof mem - 96 + 1, 1) == NULL);
    CHECK_EQ_INT(a.used, 96);
    CHECK(al->alloc(al->ctx, SIZE_MAX, 1) == NULL);
    CHECK(al->alloc(al->ctx, SIZE_MAX - 8, 16) == NULL);
    uint8_t *rest = al->alloc(al->ctx, sizeof mem - 96, 1);
    CHECK(rest == mem + 96);
    CHECK_EQ_INT(a.used, sizeof mem);
    CHECK(al->alloc(al->ctx, 1, 1) == NULL);
    CHECK_EQ_INT(a.peak, sizeof mem);

    /* Reset: memory is reused from the start; the peak is kept. */
    ember_arena_reset(&a);
    CHECK_EQ_INT(a.used, 0);
    CHECK_EQ_INT(a.peak, sizeof mem);
    CHECK(al->alloc(al->ctx, 10, 4) == mem);
    CHECK_EQ_INT(a.used, 10);

    /* An arena over an unaligned start still aligns what it returns. */
    ember_arena_init(&a, mem + 1, 100);
    uint8_t *q = a.base.alloc(a.base.ctx, 4, 16);
    CHECK(q == mem + 16);
    CHECK_EQ_INT(a.used, 19);

    /* Empty and NULL arenas hand out nothing. */
    ember_arena_init(&a, NULL, 4096);
    CHECK_EQ_INT(a.size, 0);
    CHECK(a.base.alloc(a.base.ctx, 1, 1) == NULL);
    ember_arena_init(&a, mem, 0);
    CHECK(a.base.alloc(a.base.ctx, 1, 1) == NULL);
}

/* ---------------------------------------------------------------------- */
/* Registries                                                             */
/* ---------------------------------------------------------------------- */

static ember_status kern_a(ember_kernel_ctx *c, ember_value **a, size_t n) {
    (void)c, (void)a, (void)n;
    return EMBER_OK;
}
static ember_status kern_b(ember_kernel_ctx *c, ember_value **a, size_t n) {
    (void)c, (void)a, (void)n;
    return EMBER_ERR_KERNEL_FAILED;
}
static ember_status kern_c(ember_kernel_ctx *c, ember_value **a, size_t n) {
    (void)c, (void)a, (void)n;
    return EMBER_ERR_NOT_SUPPORTED;
}

static void test_kernel_registry(void) {
    static const ember_kernel first[] = {
        {"test::op.out", kern_a},
        {"test::other", kern_a},
        {"test::op", kern_c},
    };
    static const ember_kernel second[] = {{"test::op.out", kern_b}};
    static const ember_kernel empty_fn[] = {{"test::x", NULL}};
    static const ember_kernel empty_name[] = {{NULL, kern_a}};
    check_section("kernel registry");
    ember_kernels_clear();
    CHECK(ember_kernel_find("test::op.out", 12) == NULL);

    CHECK_OK(ember_kernels_register(first, 3));
    CHECK(ember_kernel_find("test::op.out", 12) == kern_a);
    CHECK_OK(ember_kernels_register(second, 1));
    /* Later table wins for the name it has; others still come from first. */
    CHECK(ember_kernel_find("test::op.out", 12) == kern_b);
    CHECK(ember_kernel_find("test::other", 11) == kern_a);
    /* Names are length-delimited: a prefix of a longer buffer matches. */
    const char *buf = "test::op.outXYZ";
    CHECK(ember_kernel_find(buf, 12) == kern_b);
    CHECK(ember_kernel_find(buf, 8) == kern_c); /* "test::op" */
    CHECK(ember_kernel_find(buf, 11) == NULL);  /* "test::op.ou" */
    CHECK(ember_kernel_find(buf, 13) == NULL);  /* "test::op.outX" */
    CHECK(ember_kernel_find("", 0) == NULL);
    CHECK(ember_kernel_find("test::missing", 13) == NULL);

    /* Bad tables are refused whole. */
    CHECK_STATUS(ember_kernels_register(NULL, 2), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_kernels_register(empty_fn, 1), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_kernels_register(empty_name, 1), EMBER_ERR_INVALID_ARGUMENT);
    CHECK(ember_kernel_find("test::x", 7) == NULL);

    /* Clear forgets every table. */
    ember_kernels_clear();
    CHECK(ember_kernel_find("test::op.out", 12) == NULL);
    CHECK(ember_kernel_find("test::other", 11) == NULL);

    /* Full table. */
    for (int i = 0; i < EMBER_MAX_KERNEL_TABLES; i++)
        if (!CHECK_OK(ember_kernels_register(i == 0 ? first : second, 1))) break;
    CHECK_ERR(ember_kernels_register(first, 3), EMBER_ERR_TABLE_FULL, "kernel tables");
    CHECK(ember_kernel_find("test::other", 11) == NULL); /* the refused table is not there */
    CHECK(ember_kernel_find("test::op.out", 12) == kern_b);
    ember_kernels_clear();
    CHECK_OK(ember_kernels_register(first, 3));
    CHECK(ember_kernel_find("test::op.out", 12) == kern_a);
    ember_kernels_clear();
}

static bool avail_yes(void) { return true; }
static ember_status binit(const ember_backend_init_ctx *c, const void *p, size_t n,
                          const ember_compile_spec *s, size_t ns, void **h) {
    (void)c, (void)p, (void)n, (void)s, (void)ns;
    *h = NULL;
    return EMBER_OK;
}
static ember_status bexec(void *h, ember_value **a, size_t n) {
    (void)h, (void)a, (void)n;
    return EMBER_OK;
}

static void test_backend_registry(void) {
    static ember_backend a1 = {sizeof(ember_backend), "BackendA", avail_yes, binit, bexec, NULL};
    static ember_backend a2 = {sizeof(ember_backend), "BackendA", NULL, binit, bexec, NULL};
    static ember_backend bb = {sizeof(ember_backend), "BackendB", NULL, binit, bexec, NULL};
    static ember_backend no_init = {sizeof(ember_backend), "X", NULL, NULL, bexec, NULL};
    static ember_backend no_exec = {sizeof(ember_backend), "X", NULL, binit, NULL, NULL};
    static ember_backend no_id = {sizeof(ember_backend), NULL, NULL, binit, bexec, NULL};
    static ember_backend small = {sizeof(ember_backend) - 1, "X", NULL, binit, bexec, NULL};
    static char ids[EMBER_MAX_BACKENDS + 1][16];
    static ember_backend many[EMBER_MAX_BACKENDS + 1];
    check_section("backend registry");
    ember_backends_clear();
    CHECK(ember_backend_find("BackendA", 8) == NULL);
    CHECK_OK(ember_backend_register(&a1));
    CHECK_OK(ember_backend_register(&bb));
    CHECK(ember_backend_find("BackendA", 8) == &a1);
    CHECK(ember_backend_find("BackendB", 8) == &bb);
    CHECK(ember_backend_find("BackendAB", 8) == &a1); /* length-delimited */
    CHECK(ember_backend_find("Backend", 7) == NULL);
    CHECK(ember_backend_find("BackendAB", 9) == NULL);
    /* Same id replaces. */
    CHECK_OK(ember_backend_register(&a2));
    CHECK(ember_backend_find("BackendA", 8) == &a2);
    CHECK(ember_backend_find("BackendB", 8) == &bb);

    CHECK_STATUS(ember_backend_register(NULL), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_backend_register(&no_init), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_backend_register(&no_exec), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_backend_register(&no_id), EMBER_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ember_backend_register(&small), EMBER_ERR_INVALID_ARGUMENT);
    CHECK(ember_backend_find("X", 1) == NULL);

    ember_backends_clear();
    CHECK(ember_backend_find("BackendA", 8) == NULL);
    for (int i = 0; i <= EMBER_MAX_BACKENDS; i++) {
        snprintf(ids[i], sizeof ids[i], "B%d", i);
        many[i] = bb;
        many[i].id = ids[i];
    }
    for (int i = 0; i < EMBER_MAX_BACKENDS; i++)
        if (!CHECK_OK(ember_backend_register(&many[i]))) break;
    CHECK_STATUS(ember_backend_register(&many[EMBER_MAX_BACKENDS]), EMBER_ERR_TABLE_FULL);
    CHECK(ember_backend_find(ids[EMBER_MAX_BACKENDS], strlen(ids[EMBER_MAX_BACKENDS])) == NULL);
    /* Replacing still works when full. */
    static ember_backend again;
    again = many[3];
    CHECK_OK(ember_backend_register(&again));
    CHECK(ember_backend_find("B3", 2) == &again);
    CHECK(ember_backend_find("B0", 2) == &many[0]);
    ember_backends_clear();
}

static void test_kernel_scratch(void) {
    static _Alignas(64) uint8_t mem[256];
    ember_arena scratch;
    ember_kernel_ctx ctx;
    check_section("kernel scratch and failure helpers");
    ember_arena_init(&scratch, mem, sizeof mem);
    memset(&ctx, 0, sizeof ctx);
    ctx.scratch = &scratch;
    void *p = ember_kernel_scratch(&ctx, 100, 32);
    CHECK(p != NULL && ((uintptr_t)p & 31) == 0);
    CHECK(ember_kernel_scratch(&ctx, 200, 1) == NULL);
    CHECK(ember_kernel_scratch(NULL, 1, 1) == NULL);
    ctx.scratch = NULL;
    CHECK(ember_kernel_scratch(&ctx, 1, 1) == NULL);

    ember_clear_error();
    CHECK_STATUS(ember_kernel_fail(&ctx, EMBER_ERR_SHAPE_MISMATCH, "dim %d is %s", 3, "wrong"),
                 EMBER_ERR_SHAPE_MISMATCH);
    CHECK_EQ_STR(ember_last_error(), "dim 3 is wrong");
    CHECK_STATUS(ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "node %d", 42),
                 EMBER_ERR_DELEGATE_FAILED);
    CHECK_EQ_STR(ember_last_error(), "node 42");
}

/* ---------------------------------------------------------------------- */
/* Values                                                                 */
/* ---------------------------------------------------------------------- */

static void test_int_list(void) {
    ember_value ints[3], list, other;
    ember_value *items[4];
    int64_t unboxed[4];
    const int64_t *got = NULL;
    size_t len = 99;
    check_section("boxed int lists");
    memset(ints, 0, sizeof ints);
    for (int i = 0; i < 3; i++) {
        ints[i].tag = EMBER_TAG_INT;
        ints[i].u.i = 10 * (i + 1);
    }
    memset(&list, 0, sizeof list);
    list.tag = EMBER_TAG_INT_LIST;
    /* Items may repeat: [v0, v2, v0, v1]. */
    items[0] = &ints[0];
    items[1] = &ints[2];
    items[2] = &ints[0];
    items[3] = &ints[1];
    list.u.int_list.items = items;
    list.u.int_list.unboxed = unboxed;
    list.u.int_list.len = 4;
    memset(unboxed, 0, sizeof unboxed);
    CHECK_OK(ember_value_int_list(&list, &got, &len));
    CHECK_EQ_INT(len, 4);
    CHECK(got == unboxed);
    CHECK(got[0] == 10 && got[1] == 30 && got[2] == 10 && got[3] == 20);
    /* A symbolic size computed at run time flows through on the next read. */
    ints[0].u.i = -7;
    ints[1].u.i = INT64_MAX;
    CHECK_OK(ember_value_int_list(&list, &got, &len));
    CHECK(got[0] == -7 && got[1] == 30 && got[2] == -7 && got[3] == INT64_MAX);

    list.u.int_list.len = 0;
    CHECK_OK(ember_value_int_list(&list, &got, &len));
    CHECK_EQ_INT(len, 0);

    memset(&other, 0, sizeof other);
    other.tag = EMBER_TAG_DOUBLE_LIST;
    CHECK_STATUS(ember_value_int_list(&other, &got, &len), EMBER_ERR_TYPE_MISMATCH);
    other.tag = EMBER_TAG_INT;
    CHECK_STATUS(ember_value_int_list(&other, &got, &len), EMBER_ERR_TYPE_MISMATCH);
    CHECK_STATUS(ember_value_int_list(NULL, &got, &len), EMBER_ERR_TYPE_MISMATCH);

    /* Scalar reads of kernel.h. */
    double d = 0;
    other.tag = EMBER_TAG_INT;
    other.u.i = -3;
    CHECK(ember_value_as_double(&other, &d) && d == -3.0);
    other.tag = EMBER_TAG_DOUBLE;
    other.u.d = 0.5;
    CHECK(ember_value_as_double(&other, &d) && d == 0.5);
    other.tag = EMBER_TAG_BOOL;
    other.u.b = true;
    CHECK(ember_value_as_double(&other, &d) && d == 1.0);
    other.tag = EMBER_TAG_TENSOR;
    CHECK(!ember_value_as_double(&other, &d));
    other.tag = EMBER_TAG_NONE;
    CHECK(!ember_value_as_double(&other, &d));

    /* Checked arithmetic of kernel.h. */
    size_t r = 0;
    CHECK(!ember_mul_overflow(3, 5, &r) && r == 15);
    CHECK(ember_mul_overflow(SIZE_MAX / 2 + 1, 2, &r));
    CHECK(!ember_mul_overflow(0, SIZE_MAX, &r) && r == 0);
    CHECK(!ember_add_overflow(SIZE_MAX - 1, 1, &r) && r == SIZE_MAX);
    CHECK(ember_add_overflow(SIZE_MAX, 1, &r));
}

/* ---------------------------------------------------------------------- */
/* Last error                                                             */
/* ---------------------------------------------------------------------- */

#ifdef HAVE_C11_THREADS
static int thread_sets_error(void *arg) {
    (void)arg;
    ember_set_error(EMBER_ERR_IO, "from another thread");
    return strcmp(ember_last_error(), "from another thread") == 0 ? 0 : 1;
}
#endif

static void test_last_error(void) {
    char longmsg[EMBER_ERROR_MESSAGE_SIZE * 2];
    check_section("last error");
    ember_clear_error();
    CHECK_EQ_STR(ember_last_error(), "");
    CHECK_STATUS(ember_set_error(EMBER_ERR_NOT_FOUND, "no %s %d", "thing", 7),
                 EMBER_ERR_NOT_FOUND);
    CHECK_EQ_STR(ember_last_error(), "no thing 7");
    ember_clear_error();
    CHECK_EQ_STR(ember_last_error(), "");

    /* A failing API call leaves a message that names the problem. */
    tbox b;
    const int32_t bound[2] = {4, 8};
    const int64_t over[2] = {5, 1};
    tbox_init(&b, 2, bound, NULL, EMBER_SHAPE_DYNAMIC_BOUND, 0);
    CHECK_STATUS(ember_tensor_resize(&b.t, over, 2), EMBER_ERR_SHAPE_MISMATCH);
    CHECK_CONTAINS(ember_last_error(), "dim 0");
    CHECK_CONTAINS(ember_last_error(), "5");
    CHECK_CONTAINS(ember_last_error(), "4");

    /* Long messages are truncated, never overflow. */
    memset(longmsg, 'x', sizeof longmsg - 1);
    longmsg[sizeof longmsg - 1] = '\0';
    ember_set_error(EMBER_ERR_IO, "%s", longmsg);
    CHECK_EQ_INT(strlen(ember_last_error()), EMBER_ERROR_MESSAGE_SIZE - 1);

    /* Prefixes stack in front of the message and are truncated as a whole. */
    ember_set_error(EMBER_ERR_KERNEL_FAILED, "inner");
    ember_error_prefix("instruction %d", 3);
    ember_error_prefix("method '%s'", "forward");
    CHECK_EQ_STR(ember_last_error(), "method 'forward': instruction 3: inner");
    ember_set_error(EMBER_ERR_IO, "%s", longmsg);
    ember_error_prefix("p%d", 1);
    CHECK_EQ_INT(strlen(ember_last_error()), EMBER_ERROR_MESSAGE_SIZE - 1);
    CHECK(strncmp(ember_last_error(), "p1: xxx", 7) == 0);
    ember_set_error(EMBER_ERR_IO, "tail");
    ember_error_prefix("%s", longmsg);
    CHECK_EQ_INT(strlen(ember_last_error()), EMBER_ERROR_MESSAGE_SIZE - 1);

#ifdef HAVE_C11_THREADS
    /* The message is per thread. */
    thrd_t th;
    int rc = -1;
    ember_set_error(EMBER_ERR_NOT_FOUND, "main thread");
    if (CHECK(thrd_create(&th, thread_sets_error, NULL) == thrd_success)) {
        thrd_join(th, &rc);
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_STR(ember_last_error(), "main thread");
    }
#endif
    ember_clear_error();
}

/* ---------------------------------------------------------------------- */
/* Platform                                                               */
/* ---------------------------------------------------------------------- */

typedef struct plat_log {
    int lines;
    int allocs;
    int frees;
    ember_log_level level;
    char last[600];
} plat_log;

static void p_log(void *user, ember_log_level level, const char *msg) {
    plat_log *l = user;
    l->lines++;
    l->level = level;
    snprintf(l->last, sizeof l->last, "%s", msg);
}
static uint64_t p_ticks(void *user) {
    (void)user;
    return 12345;
}
static void *p_alloc(void *user, size_t size, size_t align) {
    plat_log *l = user;
    l->allocs++;
    /* aligned_alloc wants a size that is a multiple of the alignment. */
    size_t rounded = (size + align - 1) / align * align;
    return aligned_alloc(align, rounded ? rounded : align);
}
static void p_free(void *user, void *ptr) {
    plat_log *l = user;
    l->frees++;
    free(ptr);
}

static void test_platform(void) {
    plat_log log;
    memset(&log, 0, sizeof log);
    ember_platform mine = {sizeof(ember_platform), &log, p_log, p_ticks, NULL, p_alloc, p_free};
    ember_platform bare = {sizeof(ember_platform), NULL, NULL, NULL, NULL, NULL, NULL};
    check_section("platform");

    const ember_platform *def = ember_platform_default();
    CHECK(def != NULL);
    CHECK(ember_platform_get() == def);
    CHECK(def->struct_size == sizeof(ember_platform));
#ifndef EMBER_PLATFORM_BAREMETAL
    CHECK(def->alloc != NULL && def->free != NULL && def->log != NULL && def->ticks_ns != NULL);
    uint64_t t0 = ember_ticks_ns(), t1 = ember_ticks_ns();
    CHECK(t0 > 0 && t1 >= t0);
    void *p = ember_platform_alloc(100, 64);
    CHECK(p != NULL && ((uintptr_t)p & 63) == 0);
    if (p != NULL) memset(p, 1, 100);
    ember_platform_free(p);
    ember_platform_free(NULL);
#endif

    ember_platform_set(&mine);
    CHECK(ember_platform_get() == &mine);
    ember_log(EMBER_LOG_WARNING, "hello %d %s", 42, "world");
    CHECK_EQ_INT(log.lines, 1);
    CHECK_EQ_INT(log.level, EMBER_LOG_WARNING);
    CHECK_EQ_STR(log.last, "hello 42 world");
    CHECK_EQ_INT(ember_ticks_ns(), 12345);
    void *q = ember_platform_alloc(32, 16);
    CHECK(q != NULL && ((uintptr_t)q & 15) == 0);
    CHECK_EQ_INT(log.allocs, 1);
    ember_platform_free(q);
    CHECK_EQ_INT(log.frees, 1);
    ember_platform_free(NULL); /* NULL is not passed on */
    CHECK_EQ_INT(log.frees, 1);
    /* Long lines are truncated, not overflowed. */
    char big[2000];
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ember_log(EMBER_LOG_ERROR, "%s", big);
    CHECK_EQ_INT(log.lines, 2);
    CHECK(strlen(log.last) > 0 && strlen(log.last) < sizeof big - 1);

    /* A table with nothing in it: every helper degrades quietly. */
    ember_platform_set(&bare);
    CHECK(ember_platform_get() == &bare);
    ember_log(EMBER_LOG_INFO, "dropped");
    CHECK_EQ_INT(ember_ticks_ns(), 0);
    CHECK(ember_platform_alloc(16, 16) == NULL);
    ember_platform_free(&log); /* must not be passed anywhere */

    ember_platform_set(NULL);
    CHECK(ember_platform_get() == def);
    CHECK_EQ_INT(log.lines, 2);
}

/* ---------------------------------------------------------------------- */
/* Half and bfloat16                                                      */
/* ---------------------------------------------------------------------- */

static uint32_t rng_state = 0x12345678u;
static uint32_t rng(void) {
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    rng_state = x;
    return x;
}

static float f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Reference decode of a binary16 pattern, from the definition. */
static double ref_half_value(uint16_t h) {
    int sign = (h >> 15) & 1;
    int e = (h >> 10) & 0x1f;
    int m = h & 0x3ff;
    double v;
    if (e == 0x1f) v = m == 0 ? INFINITY : NAN;
    else if (e == 0) v = ldexp((double)m, -24);
    else v = ldexp((double)(1024 + m), e - 25);
    return sign ? -v : v;
}

/* Reference rounding of a finite float to a format with `mant` stored
 * mantissa bits, smallest normal exponent emin and largest finite value
 * fmax: round to nearest, ties to even (nearbyint in the default mode).
 * Returns the value the narrow format must represent (maybe +-inf). */
static double ref_round(float f, int mant, int emin, double fmax) {
    double x = fabs((double)f);
    if (x == 0.0) return (double)f;
    int e;
    frexp(x, &e);
    int ex = e - 1;
    if (ex < emin) ex = emin;
    double q = ldexp(1.0, ex - mant);
    double r = nearbyint(x / q) * q;
    if (r > fmax) r = INFINITY;
    return copysign(r, (double)f);
}

static bool same_value(float got, double want) {
    if (isnan(want)) return isnan(got);
    return (double)got == want && !signbit(got) == !signbit(want);
}

static void test_half(void) {
    int bad_decode = 0, bad_trip = 0, bad_round = 0, bad_mid = 0;
    check_section("half <-> float");
    /* Every half decodes to its exact value; non-NaN halves round-trip. */
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = ember_half_to_float((uint16_t)h);
        if (!same_value(f, ref_half_value((uint16_t)h))) {
            if (bad_decode++ < 5) printf("  half 0x%04x decodes to %.9g\n", h, (double)f);
        }
        uint16_t back = ember_float_to_half(f);
        bool nan = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff) != 0;
        if (nan ? !((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0 && (back & 0x8000) == (h & 0x8000))
                : back != h) {
            if (bad_trip++ < 5) printf("  half 0x%04x round-trips to 0x%04x\n", h, back);
        }
    }
    CHECK_EQ_INT(bad_decode, 0);
    CHECK_EQ_INT(bad_trip, 0);

    /* Midpoints between neighbouring halves round to the even one. */
    for (uint32_t h = 0; h < 0x7bff; h++) {
        double lo = ref_half_value((uint16_t)h), hi = ref_half_value((uint16_t)(h + 1));
        float mid = (float)((lo + hi) / 2); /* exact: 12 significant bits */
        uint16_t want = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        uint16_t got = ember_float_to_half(mid);
        uint16_t gotn = ember_float_to_half(-mid);
        if (got != want || gotn != (uint16_t)(want | 0x8000)) {
            if (bad_mid++ < 5) printf("  midpoint %.9g -> 0x%04x, want 0x%04x\n", (double)mid, got, want);
        }
    }
    CHECK_EQ_INT(bad_mid, 0);

    /* Random floats near the half range, and anywhere. */
    for (int i = 0; i < 400000; i++) {
        uint32_t u = rng();
        if (i % 2 == 0) /* exponents 2^-28 .. 2^17 */
            u = (u & 0x807fffffu) | ((uint32_t)(99 + (rng() % 46)) << 23);
        float f = f32_from_bits(u);
        if (isnan(f)) continue;
        double want = ref_round(f, 10, -14, 65504.0);
        float got = ember_half_to_float(ember_float_to_half(f));
        if (!same_value(got, want)) {
            if (bad_round++ < 5)
                printf("  float %a (0x%08x) -> %a, want %a\n", (double)f, u, (double)got, want);
        }
    }
    CHECK_EQ_INT(bad_round, 0);

    /* Named cases. */
    CHECK_EQ_INT(ember_float_to_half(1.0f), 0x3c00);
    CHECK_EQ_INT(ember_float_to_half(-2.0f), 0xc000);
    CHECK_EQ_INT(ember_float_to_half(0.0f), 0x0000);
    CHECK_EQ_INT(ember_float_to_half(-0.0f), 0x8000);
    CHECK_EQ_INT(ember_float_to_half(65504.0f), 0x7bff);
    CHECK_EQ_INT(ember_float_to_half(65519.0f), 0x7bff);
    CHECK_EQ_INT(ember_float_to_half(65520.0f), 0x7c00);
    CHECK_EQ_INT(ember_float_to_half(1e10f), 0x7c00);
    CHECK_EQ_INT(ember_float_to_half(-1e10f), 0xfc00);
    CHECK_EQ_INT(ember_float_to_half(INFINITY), 0x7c00);
    CHECK_EQ_INT(ember_float_to_half(-INFINITY), 0xfc00);
    CHECK_EQ_INT(ember_float_to_half(FLT_MAX), 0x7c00);
    CHECK_EQ_INT(ember_float_to_half(ldexpf(1.0f, -14)), 0x0400); /* smallest normal */
    CHECK_EQ_INT(ember_float_to_half(ldexpf(1.0f, -24)), 0x0001); /* smallest subnormal */
    CHECK_EQ_INT(ember_float_to_half(ldexpf(1.0f, -25)), 0x0000); /* tie to even: 0 */
    CHECK_EQ_INT(ember_float_to_half(ldexpf(1.0f, -25) * 1.0000001f), 0x0001);
    CHECK_EQ_INT(ember_float_to_half(ldexpf(3.0f, -25)), 0x0002); /* 1.5 ulp: tie to 2 */
    CHECK_EQ_INT(ember_float_to_half(ldexpf(1023.0f, -24)), 0x03ff); /* largest subnormal */
    CHECK_EQ_INT(ember_float_to_half(FLT_MIN), 0x0000);
    CHECK_EQ_INT(ember_float_to_half(f32_from_bits(1)), 0x0000); /* float subnormal */
    CHECK_EQ_INT(ember_float_to_half(1.0f + ldexpf(1.0f, -11)), 0x3c00); /* tie: even */
    CHECK_EQ_INT(ember_float_to_half(1.0f + ldexpf(3.0f, -11)), 0x3c02);
    uint16_t n = ember_float_to_half(NAN);
    CHECK((n & 0x7c00) == 0x7c00 && (n & 0x3ff) != 0);
    /* A NaN whose payload lives only in low bits must not become infinity. */
    n = ember_float_to_half(f32_from_bits(0x7f800001u));
    CHECK((n & 0x7c00) == 0x7c00 && (n & 0x3ff) != 0);
    n = ember_float_to_half(f32_from_bits(0xff800001u));
    CHECK((n & 0xfc00) == 0xfc00 && (n & 0x3ff) != 0);
    CHECK(isnan(ember_half_to_float(0x7e00)));
    CHECK(isinf(ember_half_to_float(0xfc00)) && ember_half_to_float(0xfc00) < 0);
    CHECK(ember_half_to_float(0x0001) == ldexpf(1.0f, -24));
    CHECK(signbit(ember_half_to_float(0x8000)) && ember_half_to_float(0x8000) == 0.0f);
}

static void test_bf16(void) {
    int bad_decode = 0, bad_round = 0, bad_mid = 0;
    check_section("bfloat16 <-> float");
    const double bf_max = ldexp(255.0, 120); /* (2 - 2^-7) * 2^127 */
    for (uint32_t b = 0; b < 0x10000u; b++) {
        float f = ember_bf16_to_float((uint16_t)b);
        uint32_t want = b << 16;
        if (bits_of(f) != want) {
            if (bad_decode++ < 5) printf("  bf16 0x%04x decodes to 0x%08x\n", b, bits_of(f));
        }
        uint16_t back = ember_float_to_bf16(f);
        bool nan = (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
        if (nan ? !(isnan(ember_bf16_to_float(back)) && (back & 0x8000) == (b & 0x8000))
                : back != b) {
            if (bad_decode++ < 5) printf("  bf16 0x%04x round-trips to 0x%04x\n", b, back);
        }
    }
    CHECK_EQ_INT(bad_decode, 0);

    /* Midpoints: exactly half an ulp above each finite bf16. */
    for (uint32_t b = 0; b < 0x7f7f; b++) {
        float mid = f32_from_bits((b << 16) | 0x8000u);
        uint16_t want = (b & 1) ? (uint16_t)(b + 1) : (uint16_t)b;
        if (ember_float_to_bf16(mid) != want || ember_float_to_bf16(-mid) != (want | 0x8000)) {
            if (bad_mid++ < 5) printf("  bf16 midpoint 0x%08x\n", bits_of(mid));
        }
    }
    CHECK_EQ_INT(bad_mid, 0);

    for (int i = 0; i < 400000; i++) {
        float f = f32_from_bits(rng());
        if (isnan(f)) {
            uint16_t r = ember_float_to_bf16(f);
            if (!isnan(ember_bf16_to_float(r))) bad_round++;
            continue;
        }
        double want = ref_round(f, 7, -126, bf_max);
        float got = ember_bf16_to_float(ember_float_to_bf16(f));
        if (!same_value(got, want)) {
            if (bad_round++ < 5) printf("  float %a -> %a, want %a\n", (double)f, (double)got, want);
        }
    }
    CHECK_EQ_INT(bad_round, 0);

    CHECK_EQ_INT(ember_float_to_bf16(1.0f), 0x3f80);
    CHECK_EQ_INT(ember_float_to_bf16(-0.0f), 0x8000);
    CHECK_EQ_INT(ember_float_to_bf16(FLT_MAX), 0x7f80); /* rounds up to inf */
    CHECK_EQ_INT(ember_float_to_bf16(INFINITY), 0x7f80);
    CHECK_EQ_INT(ember_float_to_bf16(-INFINITY), 0xff80);
    CHECK_EQ_INT(ember_float_to_bf16(f32_from_bits(0x3f808000u)), 0x3f80); /* tie: even */
    CHECK_EQ_INT(ember_float_to_bf16(f32_from_bits(0x3f818000u)), 0x3f82); /* tie: even up */
    CHECK_EQ_INT(ember_float_to_bf16(f32_from_bits(0x3f808001u)), 0x3f81);
    CHECK_EQ_INT(ember_float_to_bf16(f32_from_bits(0x00008000u)), 0x0000); /* subnormal tie */
    CHECK_EQ_INT(ember_float_to_bf16(f32_from_bits(0x00018000u)), 0x0002);
    CHECK(isnan(ember_bf16_to_float(ember_float_to_bf16(f32_from_bits(0x7f800001u)))));
    CHECK(isnan(ember_bf16_to_float(ember_float_to_bf16(f32_from_bits(0xffff0001u)))));
    CHECK_EQ_INT(ember_float_to_bf16(f32_from_bits(0xffff0001u)) & 0x8000, 0x8000);
}

int main(void) {
    test_status_strings();
    test_dtypes();
    test_resize_static();
    test_resize_dynamic_bound();
    test_resize_capacity();
    test_strides();
    test_arena();
    test_kernel_registry();
    test_backend_registry();
    test_kernel_scratch();
    test_int_list();
    test_last_error();
    test_platform();
    test_half();
    test_bf16();
    return check_finish();
}
