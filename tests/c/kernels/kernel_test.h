/*
 * tests/c/kernels/kernel_test.h — what the kernel tests build their calls
 * from (header only): tensors and int lists over memory the test owns, and
 * the portable kernels looked up by key.
 *
 *     tt x;                        a tensor, its shape arrays and its boxed value
 *     tt_init(&x, dtype, sizes, dim, data, capacity, dynamic, order)
 *                                  -> &x.v (x.v.u.t == &x.t)
 *     il l;                        a boxed int list, as a loaded method boxes it
 *     il_init(&l, vals, n)         -> &l.v
 *     tl l;                        a boxed (optional) tensor list of up to 8
 *     tl_init(&l, xs, n, optional) -> &l.v (NULL entries: None, if optional)
 *     tt_new(&x, dtype, sizes, dim, order, dynamic)
 *                                  -> &x.v over fresh zeroed heap storage
 *     tt_free(&x)                  frees it
 *     tt_4d(&x, dtype, a, b, c, d, data, dynamic)
 *                                  -> &x.v, a contiguous (a, b, c, d) over data
 *     kt_get(dtype, data, off), kt_put(dtype, data, off, v)
 *                                  element off of a buffer as a double
 *     tt_at(t, i), tt_set(t, i, v) logical (row-major) element i of a tensor,
 *                                  through its strides (tt_offset(t, i))
 *     kt_is_int(dtype)             whether dtype is an integer type
 *     kt_kernel(key)               the portable kernel "aten::add.out", or NULL
 *     kt_call(ctx, key, args, n)   calls it with ctx (op_name set, last error
 *                                  cleared); EMBER_ERR_OPERATOR_MISSING if absent
 *
 * Sizes start at their bounds; `dynamic` makes the tensor DYNAMIC_BOUND (an
 * output a kernel resizes), else it is STATIC; `order` NULL is the contiguous
 * dim order. Strides come from the dim order, as at method load. The call
 * harness and short macros (IN, OUT, IL, CALL, ...) are in kernel_call.h.
 */
#ifndef EMBER_TESTS_KERNEL_TEST_H
#define EMBER_TESTS_KERNEL_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "ember/ember.h"
#include "ember/kernel.h"

/* A tensor and the arrays it points into. */
typedef struct tt {
    ember_tensor t;
    int32_t sizes[EMBER_MAX_DIM];
    int32_t bounds[EMBER_MAX_DIM];
    uint8_t order[EMBER_MAX_DIM];
    int64_t strides[EMBER_MAX_DIM];
    ember_value v;
} tt;

/* Sets up x over data (capacity bytes) with sizes = bounds = sizes[0..dim). */
static inline ember_value *tt_init(tt *x, int dtype, const int32_t *sizes, size_t dim,
                                   void *data, size_t capacity, bool dynamic,
                                   const uint8_t *order) {
    memset(x, 0, sizeof *x);
    int64_t n = 1;
    for (size_t i = 0; i < dim; i++) {
        x->sizes[i] = x->bounds[i] = sizes[i];
        n *= sizes[i];
    }
    /* the order as a whole array: a loop of byte stores up to dim makes
     * gcc -O3 warn about a store past EMBER_MAX_DIM it cannot rule out */
    for (size_t i = 0; i < EMBER_MAX_DIM; i++) x->order[i] = (uint8_t)i;
    if (order != NULL) memcpy(x->order, order, dim < EMBER_MAX_DIM ? dim : EMBER_MAX_DIM);
    x->t.data = data;
    x->t.sizes = x->sizes;
    x->t.bounds = x->bounds;
    x->t.dim_order = x->order;
    x->t.strides = x->strides;
    x->t.dim = (uint32_t)dim;
    x->t.dtype = (uint8_t)dtype;
    x->t.dynamism = dynamic ? EMBER_SHAPE_DYNAMIC_BOUND : EMBER_SHAPE_STATIC;
    x->t.storage = EMBER_STORAGE_PLANNED;
    x->t.capacity = capacity;
    x->t.numel = n;
    x->t.nbytes = (size_t)n * ember_dtype_size(dtype);
    ember_tensor_compute_strides(&x->t);
    x->v.tag = EMBER_TAG_TENSOR;
    x->v.u.t = &x->t;
    return &x->v;
}

/* x over fresh zeroed heap storage of its size (free it with tt_free). */
static inline ember_value *tt_new(tt *x, int dtype, const int32_t *sizes, size_t dim,
                                  const uint8_t *order, bool dynamic) {
    size_t bytes = ember_dtype_size(dtype);
    for (size_t i = 0; i < dim; i++) bytes *= (size_t)sizes[i];
    return tt_init(x, dtype, sizes, dim, calloc(bytes > 0 ? bytes : 1, 1), bytes, dynamic, order);
}

static inline void tt_free(tt *x) {
    free(x->t.data);
    x->t.data = NULL;
}

/* A contiguous (a, b, c, d) tensor over data of exactly its size. */
static inline ember_value *tt_4d(tt *x, int dtype, int32_t a, int32_t b, int32_t c, int32_t d,
                                 void *data, bool dynamic) {
    const int32_t s[4] = {a, b, c, d};
    size_t bytes = (size_t)a * (size_t)b * (size_t)c * (size_t)d * ember_dtype_size(dtype);
    return tt_init(x, dtype, s, 4, data, bytes, dynamic, NULL);
}

static inline bool kt_is_int(int dtype) {
    return dtype == EMBER_UINT8 || dtype == EMBER_INT8 || dtype == EMBER_INT16 ||
           dtype == EMBER_INT32 || dtype == EMBER_INT64;
}

/* Element off (in elements) of data as a double; NaN for a dtype it does not read. */
static inline double kt_get(int dtype, const void *data, int64_t off) {
    switch (dtype) {
    case EMBER_FLOAT32: return ((const float *)data)[off];
    case EMBER_FLOAT64: return ((const double *)data)[off];
    case EMBER_FLOAT16: return ember_half_to_float(((const uint16_t *)data)[off]);
    case EMBER_BFLOAT16: return ember_bf16_to_float(((const uint16_t *)data)[off]);
    case EMBER_UINT8: return ((const uint8_t *)data)[off];
    case EMBER_INT8: return ((const int8_t *)data)[off];
    case EMBER_INT16: return ((const int16_t *)data)[off];
    case EMBER_INT32: return ((const int32_t *)data)[off];
    case EMBER_INT64: return (double)((const int64_t *)data)[off];
    default: return NAN;
    }
}

/* Stores v at element off; integers wrap to the dtype's width as kernel sums do. */
static inline void kt_put(int dtype, void *data, int64_t off, double v) {
    switch (dtype) {
    case EMBER_FLOAT32: ((float *)data)[off] = (float)v; break;
    case EMBER_FLOAT64: ((double *)data)[off] = v; break;
    case EMBER_FLOAT16: ((uint16_t *)data)[off] = ember_float_to_half((float)v); break;
    case EMBER_BFLOAT16: ((uint16_t *)data)[off] = ember_float_to_bf16((float)v); break;
    case EMBER_UINT8: ((uint8_t *)data)[off] = (uint8_t)(int64_t)v; break;
    case EMBER_INT8: ((int8_t *)data)[off] = (int8_t)(uint8_t)(int64_t)v; break;
    case EMBER_INT16: ((int16_t *)data)[off] = (int16_t)(uint16_t)(int64_t)v; break;
    case EMBER_INT32: ((int32_t *)data)[off] = (int32_t)(uint32_t)(int64_t)v; break;
    case EMBER_INT64: ((int64_t *)data)[off] = (int64_t)v; break;
    default: break;
    }
}

/* Element offset of the logical row-major index i of t (through its strides). */
static inline int64_t tt_offset(const ember_tensor *t, int64_t i) {
    int64_t off = 0;
    for (size_t d = t->dim; d-- > 0;) {
        off += (i % t->sizes[d]) * t->strides[d];
        i /= t->sizes[d];
    }
    return off;
}

static inline double tt_at(const ember_tensor *t, int64_t i) {
    return kt_get(t->dtype, t->data, tt_offset(t, i));
}

static inline void tt_set(ember_tensor *t, int64_t i, double v) {
    kt_put(t->dtype, t->data, tt_offset(t, i), v);
}

/* A boxed int list: items point at Int values, as in a loaded method. */
typedef struct il {
    ember_value v;
    ember_value items[EMBER_MAX_DIM];
    ember_value *ptrs[EMBER_MAX_DIM];
    int64_t unboxed[EMBER_MAX_DIM];
} il;

static inline ember_value *il_init(il *l, const int64_t *vals, size_t n) {
    for (size_t i = 0; i < n; i++) {
        l->items[i].tag = EMBER_TAG_INT;
        l->items[i].u.i = vals[i];
        l->ptrs[i] = &l->items[i];
    }
    l->v.tag = EMBER_TAG_INT_LIST;
    l->v.u.int_list.items = l->ptrs;
    l->v.u.int_list.unboxed = l->unboxed;
    l->v.u.int_list.len = n;
    return &l->v;
}

/* A boxed tensor list over tensors the test owns. */
typedef struct tl {
    ember_value v;
    ember_value *ptrs[8];
} tl;

static inline ember_value *tl_init(tl *l, tt **xs, size_t n, bool optional) {
    for (size_t i = 0; i < n; i++) l->ptrs[i] = xs[i] != NULL ? &xs[i]->v : NULL;
    l->v.tag = optional ? EMBER_TAG_OPTIONAL_TENSOR_LIST : EMBER_TAG_TENSOR_LIST;
    l->v.u.tensor_list.items = l->ptrs;
    l->v.u.tensor_list.len = n;
    return &l->v;
}

/* Scalar values, by value: an Int, Double, Bool, None or String argument. */
static inline ember_value kt_int(int64_t i) {
    ember_value v;
    memset(&v, 0, sizeof v);
    v.tag = EMBER_TAG_INT;
    v.u.i = i;
    return v;
}
static inline ember_value kt_double(double d) {
    ember_value v;
    memset(&v, 0, sizeof v);
    v.tag = EMBER_TAG_DOUBLE;
    v.u.d = d;
    return v;
}
static inline ember_value kt_bool(bool b) {
    ember_value v;
    memset(&v, 0, sizeof v);
    v.tag = EMBER_TAG_BOOL;
    v.u.b = b;
    return v;
}
static inline ember_value kt_none(void) {
    ember_value v;
    memset(&v, 0, sizeof v);
    v.tag = EMBER_TAG_NONE;
    return v;
}
static inline ember_value kt_str(const char *s) {
    ember_value v;
    memset(&v, 0, sizeof v);
    v.tag = EMBER_TAG_STRING;
    v.u.str.data = s;
    v.u.str.len = strlen(s);
    return v;
}

static inline ember_kernel_fn kt_kernel(const char *key) {
    for (size_t i = 0; i < ember_portable_kernel_count(); i++)
        if (strcmp(ember_portable_kernel_at(i)->name, key) == 0)
            return ember_portable_kernel_at(i)->fn;
    printf("no kernel %s\n", key);
    return NULL;
}

static inline ember_status kt_call(struct ember_kernel_ctx *ctx, const char *key,
                                   ember_value **args, size_t n) {
    ember_kernel_fn fn = kt_kernel(key);
    if (fn == NULL) return EMBER_ERR_OPERATOR_MISSING;
    ctx->op_name = key;
    ember_clear_error();
    return fn(ctx, args, n);
}

#endif /* EMBER_TESTS_KERNEL_TEST_H */
