/*
 * test_dim_order.c — the dim-order kernels over every permutation.
 *
 * dim_order_ops::_clone_dim_order.out and _to_dim_order_copy.out copy from
 * any layout into any layout: for ranks 1 to 5, every dim order of the input
 * against every dim order of out (rank 5: 120 x 120 pairs), on shapes whose
 * sizes all differ (a swapped stride shows) and on shapes with dims of size
 * 1 (where several orders share strides). Every element holds its own
 * row-major index; after the copy, out's element at each index, read through
 * out's strides, must hold that index. _to_dim_order_copy converts on the
 * way (int32, float64, float16, from a reversed input layout).
 * _empty_dim_order.out resizes outs of every order. Bad dim_order arguments
 * (wrong length, an entry out of range or repeated, an order other than
 * out's) end in a clean status with a message.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#define KC_SCRATCH_BYTES (1 << 10)
#include "kernel_call.h"

#define MAXN 720 /* elements of the largest shape, 2*3*4*5*6 */


static ember_value g_false = {.tag = EMBER_TAG_BOOL, .u.b = false};
static ember_value g_none = {.tag = EMBER_TAG_NONE};

/* The next permutation of p[0..n) in lexicographic order; false after the last. */
static bool next_perm(uint8_t *p, size_t n) {
    if (n < 2) return false;
    size_t i = n - 1;
    while (i > 0 && p[i - 1] >= p[i]) i--;
    if (i == 0) return false;
    size_t j = n - 1;
    while (p[j] <= p[i - 1]) j--;
    uint8_t t = p[i - 1];
    p[i - 1] = p[j];
    p[j] = t;
    for (size_t a = i, b = n - 1; a < b; a++, b--) {
        t = p[a];
        p[a] = p[b];
        p[b] = t;
    }
    return true;
}

static void identity(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)i;
}

/* x over data, laid out in order, each element holding its row-major index. */
static void fill_indices(tt *x, float *data, const int32_t *sizes, size_t dim,
                         const uint8_t *order) {
    tt_init(x, EMBER_FLOAT32, sizes, dim, data, MAXN * sizeof(float), false, order);
    for (int64_t i = 0; i < x->t.numel; i++) data[tt_offset(&x->t, i)] = (float)i;
}

/* Whether out holds every index of an n-element copy (element k == k). */
static bool holds_indices(const ember_tensor *out, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (tt_at(out, i) != (double)i) return false;
    return true;
}

static void print_order(const char *what, const uint8_t *p, size_t n) {
    printf("  %s [", what);
    for (size_t i = 0; i < n; i++) printf(i ? ", %u" : "%u", (unsigned)p[i]);
    printf("]\n");
}

/* Every input order against every out order for one shape. */
static void all_pairs(const int32_t *sizes, size_t dim) {
    static float in[MAXN], out[MAXN];
    uint8_t p_in[EMBER_MAX_DIM], p_out[EMBER_MAX_DIM];
    tt x, o;
    il order;
    int64_t pairs = 0, bad = 0;
    identity(p_in, dim);
    do {
        fill_indices(&x, in, sizes, dim, p_in);
        identity(p_out, dim);
        do {
            int64_t vals[EMBER_MAX_DIM];
            for (size_t d = 0; d < dim; d++) vals[d] = p_out[d];
            memset(out, 0xff, sizeof out);
            tt_init(&o, EMBER_FLOAT32, sizes, dim, out, sizeof out, true, p_out);
            ember_status st = CALL("dim_order_ops::_clone_dim_order.out", &x.v, &g_false,
                                   il_init(&order, vals, dim), &o.v, &o.v);
            pairs++;
            if (st != EMBER_OK || !holds_indices(&o.t, x.t.numel)) {
                if (bad++ == 0) {
                    printf("  first failure (status %d, %s):\n", (int)st, ember_last_error());
                    print_order("in order", p_in, dim);
                    print_order("out order", p_out, dim);
                }
            }
        } while (next_perm(p_out, dim));
    } while (next_perm(p_in, dim));
    CHECK_MSG(bad == 0, "rank %zu: %lld of %lld layout pairs copied wrong", dim, (long long)bad,
              (long long)pairs);
}

static void test_clone_every_pair(void) {
    check_section("_clone_dim_order.out: every input order x every out order, ranks 1-5");
    static const int32_t distinct[5][5] = {
        {5}, {3, 4}, {2, 3, 4}, {2, 3, 4, 5}, {2, 3, 4, 5, 6}};
    static const int32_t ones[5][5] = {
        {1}, {1, 4}, {3, 1, 2}, {2, 1, 3, 1}, {2, 1, 3, 1, 2}};
    for (size_t r = 1; r <= 5; r++) {
        all_pairs(distinct[r - 1], r);
        all_pairs(ones[r - 1], r);
    }
}

/* _to_dim_order_copy.out into every order of a rank-4 out, converting. */
static void test_to_copy_converts(void) {
    check_section("_to_dim_order_copy.out: conversions into every out order");
    static float in[MAXN];
    static uint8_t out[MAXN * 8];
    const int32_t sizes[4] = {2, 3, 4, 5};
    const uint8_t reversed[4] = {3, 2, 1, 0};
    const int dtypes[3] = {EMBER_INT32, EMBER_FLOAT64, EMBER_FLOAT16};
    tt x, o;
    il order;
    fill_indices(&x, in, sizes, 4, reversed);
    for (size_t k = 0; k < 3; k++) {
        uint8_t p[4];
        int64_t bad = 0;
        identity(p, 4);
        do {
            const int64_t vals[4] = {p[0], p[1], p[2], p[3]};
            memset(out, 0, sizeof out);
            tt_init(&o, dtypes[k], sizes, 4, out, sizeof out, true, p);
            ember_status st = CALL("dim_order_ops::_to_dim_order_copy.out", &x.v, &g_false,
                                   il_init(&order, vals, 4), &o.v, &o.v);
            if (st != EMBER_OK || !holds_indices(&o.t, x.t.numel)) bad++;
        } while (next_perm(p, 4));
        CHECK_MSG(bad == 0, "dtype %d: %lld of 24 out orders wrong", dtypes[k], (long long)bad);
    }
    /* no dim_order argument: out's own order is the layout */
    const uint8_t cl[4] = {0, 2, 3, 1};
    tt_init(&o, EMBER_FLOAT64, sizes, 4, out, sizeof out, true, cl);
    CHECK_OK(CALL("dim_order_ops::_to_dim_order_copy.out", &x.v, &g_false, &g_none, &o.v, &o.v));
    CHECK(holds_indices(&o.t, x.t.numel));
}

/* Strides of a dense tensor of these sizes in this order (sizes <= 1 count as 1). */
static void dense_strides(const int32_t *sizes, const uint8_t *order, size_t dim,
                          int64_t *strides) {
    int64_t step = 1;
    for (size_t k = dim; k-- > 0;) {
        strides[order[k]] = step;
        step *= sizes[order[k]] > 1 ? sizes[order[k]] : 1;
    }
}

static void test_empty_every_order(void) {
    check_section("_empty_dim_order.out: resizes outs of every order");
    static float out[MAXN];
    const int32_t bounds[4] = {3, 4, 5, 6};
    const int64_t size[4] = {2, 1, 5, 3};
    const int32_t size32[4] = {2, 1, 5, 3};
    uint8_t p[4];
    int64_t bad = 0;
    tt o;
    il sz, order;
    identity(p, 4);
    do {
        const int64_t vals[4] = {p[0], p[1], p[2], p[3]};
        int64_t want[4];
        tt_init(&o, EMBER_FLOAT32, bounds, 4, out, sizeof out, true, p);
        ember_status st = CALL("dim_order_ops::_empty_dim_order.out", il_init(&sz, size, 4),
                               il_init(&order, vals, 4), &o.v, &o.v);
        dense_strides(size32, p, 4, want);
        bool ok = st == EMBER_OK && o.t.numel == 30;
        for (size_t d = 0; ok && d < 4; d++)
            ok = o.t.sizes[d] == size32[d] && o.t.strides[d] == want[d];
        if (!ok) bad++;
    } while (next_perm(p, 4));
    CHECK_MSG(bad == 0, "%lld of 24 orders resized wrong", (long long)bad);
}

static void test_bad_dim_order_arguments(void) {
    check_section("bad dim_order arguments: a clean status and a message");
    static float in[MAXN], out[MAXN];
    const int32_t sizes[3] = {2, 3, 4};
    const uint8_t p021[3] = {0, 2, 1};
    tt x, o;
    il order;
    fill_indices(&x, in, sizes, 3, NULL);
    tt_init(&o, EMBER_FLOAT32, sizes, 3, out, sizeof out, true, p021);
    const char *keys[2] = {"dim_order_ops::_clone_dim_order.out",
                           "dim_order_ops::_to_dim_order_copy.out"};
    for (size_t k = 0; k < 2; k++) {
        CHECK_ERR(CALL(keys[k], &x.v, &g_false, il_init(&order, (const int64_t[]){0, 2}, 2),
                       &o.v, &o.v),
                  EMBER_ERR_INVALID_ARGUMENT, "2 entries, out has rank 3");
        CHECK_ERR(CALL(keys[k], &x.v, &g_false,
                       il_init(&order, (const int64_t[]){0, 2, 2}, 3), &o.v, &o.v),
                  EMBER_ERR_INVALID_ARGUMENT, "not a permutation: entry 2 is 2");
        CHECK_ERR(CALL(keys[k], &x.v, &g_false,
                       il_init(&order, (const int64_t[]){0, 3, 1}, 3), &o.v, &o.v),
                  EMBER_ERR_INVALID_ARGUMENT, "not a permutation: entry 1 is 3");
        CHECK_ERR(CALL(keys[k], &x.v, &g_false,
                       il_init(&order, (const int64_t[]){-1, 2, 1}, 3), &o.v, &o.v),
                  EMBER_ERR_INVALID_ARGUMENT, "not a permutation: entry 0 is -1");
        /* a valid order, but not out's */
        CHECK_ERR(CALL(keys[k], &x.v, &g_false,
                       il_init(&order, (const int64_t[]){0, 1, 2}, 3), &o.v, &o.v),
                  EMBER_ERR_INVALID_ARGUMENT, "differs from out's dim order at entry 1");
    }
    il sz;
    CHECK_ERR(CALL("dim_order_ops::_empty_dim_order.out",
                   il_init(&sz, (const int64_t[]){2, 3, 4}, 3),
                   il_init(&order, (const int64_t[]){1, 1, 0}, 3), &o.v, &o.v),
              EMBER_ERR_INVALID_ARGUMENT, "not a permutation");
    /* a clone into a float64 out is a dtype mismatch, not a conversion */
    static double dout[MAXN];
    tt od;
    tt_init(&od, EMBER_FLOAT64, sizes, 3, dout, sizeof dout, true, p021);
    CHECK_STATUS(CALL(keys[0], &x.v, &g_false, il_init(&order, (const int64_t[]){0, 2, 1}, 3),
                      &od.v, &od.v),
                 EMBER_ERR_TYPE_MISMATCH);
}

int main(void) {
    kc_init();
    test_clone_every_pair();
    test_to_copy_converts();
    test_empty_every_order();
    test_bad_dim_order_arguments();
    return check_finish();
}
