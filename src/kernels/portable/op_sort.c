/*
 * aten::sort.values(Tensor self, int dim=-1, bool descending=False, *,
 *     Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
 * aten::sort.values_stable(Tensor self, *, bool? stable, int dim=-1,
 *     bool descending=False, Tensor(a!) values, Tensor(b!) indices)
 *     -> (Tensor(a!) values, Tensor(b!) indices)
 * aten::topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True,
 *     bool sorted=True, *, Tensor(a!) values, Tensor(b!) indices)
 *     -> (Tensor(a!) values, Tensor(b!) indices)
 *
 * sort orders every row along dim; topk keeps the k largest (smallest) of
 * each row, best first. Both order as PyTorch does: NaN above every number
 * (last when ascending, first when descending), -0.0 equal to 0.0, and equal
 * values by their original index, so every sort is stable (PyTorch's CPU
 * sort is too) and topk's ties come in index order. topk always returns
 * its values sorted, which sorted=False allows. indices are int64.
 * Arguments: inputs, 2 outs, TensorList (6, 7 and 8 of them).
 *
 * The rows are heap-sorted in place in the outputs, so no scratch memory is
 * needed: each element carries its original index, which breaks every tie
 * and makes the unstable heap sort give the stable order.
 */
#include "kernel_util.h"
#include "ops.h"

/* One row of the outputs: slot s is values[s * vs] and indices[s * is]. */
typedef struct sort_row {
    void *v;
    int64_t *ix;
    int64_t vs, is;
    bool desc; /* largest first */
} sort_row;

#define EK_NAN(x) ((x) != (x))
#define EK_NO_NAN(x) 0

/*
 * The row operations for values of storage type T, compared as K (KEY
 * converts; ISNAN tells NaN, which ranks above every number). The heap over
 * slots [0, end) keeps at its root the slot that comes last in the output
 * order (a max-heap under `before`).
 */
#define SORT_ROW_FUNCS(S, T, K, KEY, ISNAN)                                                        \
    /* -1, 0, 1 as a is below, equal to, above b */                                                \
    static int S##_cmp(K a, K b) {                                                                 \
        if (a < b) return -1;                                                                      \
        if (a > b) return 1;                                                                       \
        if (!ISNAN(a) && !ISNAN(b)) return 0;                                                      \
        return ISNAN(a) == ISNAN(b) ? 0 : ISNAN(a) ? 1 : -1;                                       \
    }                                                                                              \
    /* True if (a, ia) comes before (b, ib) in the output order. */                                \
    static bool S##_before(const sort_row *r, K a, int64_t ia, K b, int64_t ib) {                  \
        int c = S##_cmp(a, b);                                                                     \
        if (r->desc) c = -c;                                                                       \
        return c < 0 || (c == 0 && ia < ib);                                                       \
    }                                                                                              \
    static bool S##_slot_before(const sort_row *r, int64_t a, int64_t b) {                         \
        const T *v = (const T *)r->v;                                                              \
        return S##_before(r, KEY(v[a * r->vs]), r->ix[a * r->is], KEY(v[b * r->vs]),               \
                          r->ix[b * r->is]);                                                       \
    }                                                                                              \
    static void S##_swap(const sort_row *r, int64_t a, int64_t b) {                                \
        T *v = (T *)r->v;                                                                          \
        T t = v[a * r->vs];                                                                        \
        v[a * r->vs] = v[b * r->vs];                                                               \
        v[b * r->vs] = t;                                                                          \
        int64_t i = r->ix[a * r->is];                                                              \
        r->ix[a * r->is] = r->ix[b * r->is];                                                       \
        r->ix[b * r->is] = i;                                                                      \
    }                                                                                              \
    static void S##_sift_down(const sort_row *r, int64_t root, int64_t end) {                      \
        for (;;) {                                                                                 \
            int64_t child = 2 * root + 1;                                                          \
            if (child >= end) return;                                                              \
            if (child + 1 < end && S##_slot_before(r, child, child + 1)) child++;                  \
            if (!S##_slot_before(r, root, child)) return;                                          \
            S##_swap(r, root, child);                                                              \
            root = child;                                                                          \
        }                                                                                          \
    }                                                                                              \
    static void S##_sift_up(const sort_row *r, int64_t s) {                                        \
        while (s > 0) {                                                                            \
            int64_t parent = (s - 1) / 2;                                                          \
            if (!S##_slot_before(r, parent, s)) return;                                            \
            S##_swap(r, parent, s);                                                                \
            s = parent;                                                                            \
        }                                                                                          \
    }                                                                                              \
    /* Sorts slots [0, n) into output order. */                                                    \
    static void S##_heap_sort(const sort_row *r, int64_t n) {                                      \
        for (int64_t s = n / 2 - 1; s >= 0; s--) S##_sift_down(r, s, n);                           \
        for (int64_t end = n - 1; end > 0; end--) {                                                \
            S##_swap(r, 0, end);                                                                   \
            S##_sift_down(r, 0, end);                                                              \
        }                                                                                          \
    }                                                                                              \
    /* The best k of self's row (len elements, ss apart), best first. */                          \
    static void S##_topk_row(const sort_row *r, const void *self, int64_t ss, int64_t len,         \
                             int64_t k) {                                                          \
        const T *x = (const T *)self;                                                              \
        T *v = (T *)r->v;                                                                          \
        /* keep the best k seen so far in a heap whose root is the worst of them */                \
        for (int64_t j = 0; j < len; j++) {                                                        \
            if (j < k) {                                                                           \
                v[j * r->vs] = x[j * ss];                                                          \
                r->ix[j * r->is] = j;                                                              \
                S##_sift_up(r, j);                                                                 \
            } else if (S##_before(r, KEY(x[j * ss]), j, KEY(v[0]), r->ix[0])) {                    \
                v[0] = x[j * ss];                                                                  \
                r->ix[0] = j;                                                                      \
                S##_sift_down(r, 0, k);                                                            \
            }                                                                                      \
        }                                                                                          \
        S##_heap_sort(r, k);                                                                       \
    }

SORT_ROW_FUNCS(f32, float, float, EK_IDENT, EK_NAN)
SORT_ROW_FUNCS(f64, double, double, EK_IDENT, EK_NAN)
SORT_ROW_FUNCS(f16, uint16_t, float, ember_half_to_float, EK_NAN)
SORT_ROW_FUNCS(bf16, uint16_t, float, ember_bf16_to_float, EK_NAN)
SORT_ROW_FUNCS(u8, uint8_t, uint8_t, EK_IDENT, EK_NO_NAN)
SORT_ROW_FUNCS(i8, int8_t, int8_t, EK_IDENT, EK_NO_NAN)
SORT_ROW_FUNCS(i16, int16_t, int16_t, EK_IDENT, EK_NO_NAN)
SORT_ROW_FUNCS(i32, int32_t, int32_t, EK_IDENT, EK_NO_NAN)
SORT_ROW_FUNCS(i64, int64_t, int64_t, EK_IDENT, EK_NO_NAN)

/* The row operations of one dtype. */
typedef struct sort_ops {
    void (*heap_sort)(const sort_row *r, int64_t n);
    void (*topk_row)(const sort_row *r, const void *self, int64_t ss, int64_t len, int64_t k);
} sort_ops;

static sort_ops ops_of(int dtype) {
    switch (dtype) {
    case EMBER_FLOAT32: return (sort_ops){f32_heap_sort, f32_topk_row};
    case EMBER_FLOAT64: return (sort_ops){f64_heap_sort, f64_topk_row};
    case EMBER_FLOAT16: return (sort_ops){f16_heap_sort, f16_topk_row};
    case EMBER_BFLOAT16: return (sort_ops){bf16_heap_sort, bf16_topk_row};
    case EMBER_INT8: return (sort_ops){i8_heap_sort, i8_topk_row};
    case EMBER_INT16: return (sort_ops){i16_heap_sort, i16_topk_row};
    case EMBER_INT32: return (sort_ops){i32_heap_sort, i32_topk_row};
    case EMBER_INT64: return (sort_ops){i64_heap_sort, i64_topk_row};
    default: return (sort_ops){u8_heap_sort, u8_topk_row}; /* uint8 and bool */
    }
}

/* Shared checks and geometry of sort and topk. */
typedef struct sort_geom {
    size_t d;
    int64_t len; /* self's size along d */
    int64_t sizes[EMBER_MAX_DIM];
    int64_t st[3][EMBER_MAX_DIM]; /* other dims: values, indices, self */
    size_t n;
} sort_geom;

static ember_status sort_check(ember_kernel_ctx *ctx, ember_tensor *self, int64_t dim,
                               ember_tensor *values, ember_tensor *indices, sort_geom *g) {
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    EK_TRY(ek_check_same_dtype(ctx, self, values, "self and values"));
    if (indices->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "indices must be int64, got %s",
                                 ember_dtype_name(indices->dtype));
    EK_TRY(ek_check_no_alias(ctx, values, self));
    EK_TRY(ek_check_no_alias(ctx, indices, self));
    EK_TRY(ek_check_no_alias(ctx, indices, values));
    EK_TRY(ek_norm_dim(ctx, dim, self->dim, &g->d));
    g->len = self->dim == 0 ? 1 : self->sizes[g->d];
    return EMBER_OK;
}

/* Strides of the non-sorted dims, after the outputs have been resized. */
static void sort_bind(sort_geom *g, const ember_tensor *self, const ember_tensor *values,
                      const ember_tensor *indices) {
    g->n = 0;
    for (size_t k = 0; k < self->dim; k++) {
        if (k == g->d) continue;
        g->sizes[g->n] = self->sizes[k];
        g->st[0][g->n] = values->strides[k];
        g->st[1][g->n] = indices->strides[k];
        g->st[2][g->n] = self->strides[k];
        g->n++;
    }
}

static sort_row row_init(const ember_tensor *values, const ember_tensor *indices, size_t d,
                         bool desc) {
    sort_row r;
    r.v = values->data;
    r.ix = (int64_t *)indices->data;
    r.vs = values->dim == 0 ? 0 : values->strides[d];
    r.is = indices->dim == 0 ? 0 : indices->strides[d];
    r.desc = desc;
    return r;
}

static ember_status sort_run(ember_kernel_ctx *ctx, ember_tensor *self, int64_t dim, bool desc,
                             ember_tensor *values, ember_tensor *indices) {
    sort_geom g;
    EK_TRY(sort_check(ctx, self, dim, values, indices, &g));
    EK_TRY(ek_resize_like(ctx, values, self));
    EK_TRY(ek_resize_like(ctx, indices, self));
    if (self->numel == 0) return EMBER_OK;
    sort_bind(&g, self, values, indices);
    int64_t sizes[EMBER_MAX_DIM];
    ek_sizes64(self, sizes);
    ek_copy_block(values->data, 0, values->strides, self->data, 0, self->strides, sizes, self->dim,
                  ember_dtype_size(self->dtype));
    sort_row r = row_init(values, indices, g.d, desc);
    sort_ops ops = ops_of(self->dtype);
    char *vbase = (char *)values->data;
    int64_t *ibase = r.ix;
    int64_t es = (int64_t)ember_dtype_size(self->dtype);
    int64_t idx[EMBER_MAX_DIM] = {0}, off[3] = {0, 0, 0};
    do {
        r.v = vbase + off[0] * es;
        r.ix = ibase + off[1];
        for (int64_t j = 0; j < g.len; j++) r.ix[j * r.is] = j;
        ops.heap_sort(&r, g.len);
    } while (ek_advance(idx, g.sizes, g.n, 3, (const int64_t(*)[EMBER_MAX_DIM])g.st, off));
    return EMBER_OK;
}

ember_status ek_op_sort_values(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *values, *indices;
    int64_t dim;
    bool desc;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_bool(ctx, args, 2, &desc));
    EK_TRY(ek_arg_out(ctx, args, 3, &values));
    EK_TRY(ek_arg_out(ctx, args, 4, &indices));
    return sort_run(ctx, self, dim, desc, values, indices);
}

ember_status ek_op_sort_values_stable(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *values, *indices;
    int64_t dim;
    bool desc;
    EK_TRY(ek_check_nargs(ctx, nargs, 7));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (args[1]->tag != EMBER_TAG_NONE && args[1]->tag != EMBER_TAG_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "argument 1: expected Bool or None");
    EK_TRY(ek_arg_int(ctx, args, 2, &dim));
    EK_TRY(ek_arg_bool(ctx, args, 3, &desc));
    EK_TRY(ek_arg_out(ctx, args, 4, &values));
    EK_TRY(ek_arg_out(ctx, args, 5, &indices));
    return sort_run(ctx, self, dim, desc, values, indices); /* always stable */
}

ember_status ek_op_topk_values(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *values, *indices;
    int64_t k, dim;
    bool largest, sorted;
    sort_geom g;
    EK_TRY(ek_check_nargs(ctx, nargs, 8));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_int(ctx, args, 1, &k));
    EK_TRY(ek_arg_int(ctx, args, 2, &dim));
    EK_TRY(ek_arg_bool(ctx, args, 3, &largest));
    EK_TRY(ek_arg_bool(ctx, args, 4, &sorted));
    EK_TRY(ek_arg_out(ctx, args, 5, &values));
    EK_TRY(ek_arg_out(ctx, args, 6, &indices));
    if (self->dtype == EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "topk is not defined for bool");
    EK_TRY(sort_check(ctx, self, dim, values, indices, &g));
    if (k < 0 || k > g.len)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "topk: k = %lld is out of range for a dim of size %lld",
                                 (long long)k, (long long)g.len);
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(self, shape);
    if (self->dim > 0) shape[g.d] = k;
    EK_TRY(ek_resize_out(ctx, values, shape, self->dim));
    EK_TRY(ek_resize_out(ctx, indices, shape, self->dim));
    if (values->numel == 0) return EMBER_OK;
    sort_bind(&g, self, values, indices);
    sort_row r = row_init(values, indices, g.d, largest);
    sort_ops ops = ops_of(self->dtype);
    char *vbase = (char *)values->data;
    int64_t *ibase = r.ix;
    const char *sbase = (const char *)self->data;
    int64_t es = (int64_t)ember_dtype_size(self->dtype);
    int64_t ss = self->dim == 0 ? 0 : self->strides[g.d];
    int64_t krow = self->dim == 0 ? 1 : k; /* a 0-dim self gives itself for k 0 too, as PyTorch */
    int64_t idx[EMBER_MAX_DIM] = {0}, off[3] = {0, 0, 0};
    do {
        r.v = vbase + off[0] * es;
        r.ix = ibase + off[1];
        ops.topk_row(&r, sbase + off[2] * es, ss, g.len, krow);
    } while (ek_advance(idx, g.sizes, g.n, 3, (const int64_t(*)[EMBER_MAX_DIM])g.st, off));
    return EMBER_OK;
}
