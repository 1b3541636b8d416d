/*
 * aten::_embedding_bag.out(Tensor weight, Tensor indices, Tensor offsets,
 *     bool scale_grad_by_freq=False, int mode=0, bool sparse=False,
 *     Tensor? per_sample_weights=None, bool include_last_offset=False,
 *     int padding_idx=-1, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2,
 *     Tensor(d!) out3)
 *
 * Bags of rows of weight (V, D): bag b holds indices[offsets[b] :
 * offsets[b + 1]], and the last bag runs to the end of indices. With
 * include_last_offset, offsets has B + 1 entries and, as in PyTorch's CPU
 * kernel, the last one is not read (it should equal len(indices)). out0 (B, D)
 * reduces each bag: mode 0 sum (rows scaled by per_sample_weights if
 * given), 1 mean, 2 max; rows equal to padding_idx (>= 0) are skipped, and
 * empty bags give zeros. The other outputs are what PyTorch's CPU kernel
 * returns for the backward pass: out1 the bag of each index (empty for a
 * float32/float16/bfloat16 sum without padding_idx), out2 the number of
 * rows in each bag (zeros for sum), out3 for max the row of each maximum
 * (B, D), else a copy of out2. Indices and offsets (int64 or int32) are
 * checked at execute: EMBER_ERR_DATA_OUT_OF_BOUNDS. Float dtypes, any dim
 * order. Arguments: 9 inputs, 4 outs, TensorList (14).
 */
#include "kernel_util.h"
#include "ops.h"

enum { BAG_SUM = 0, BAG_MEAN = 1, BAG_MAX = 2 };

static int64_t read_int(const ember_tensor *t, int64_t i) {
    return t->dtype == EMBER_INT64 ? ((const int64_t *)t->data)[i * t->strides[0]]
                                   : ((const int32_t *)t->data)[i * t->strides[0]];
}

/* Writes v at element offset off of an int64 or int32 tensor. */
static void write_int(ember_tensor *t, int64_t off, int64_t v) {
    if (t->dtype == EMBER_INT64)
        ((int64_t *)t->data)[off] = v;
    else
        ((int32_t *)t->data)[off] = (int32_t)v;
}

/* Bag geometry: bag b covers indices [start(b), end(b)). */
typedef struct bags {
    const ember_tensor *offsets;
    int64_t count, n;
} bags;

static int64_t bag_start(const bags *g, int64_t b) {
    return read_int(g->offsets, b);
}
static int64_t bag_end(const bags *g, int64_t b) {
    return b + 1 < g->count ? read_int(g->offsets, b + 1) : g->n;
}

/* Element strides: weight (V, D), out0 (B, D), out3 (B, D) in max mode. */
typedef struct bag_strides {
    int64_t w[2], y[2], a[2];
} bag_strides;

/* rows: weight; y: out0; amax: out3 for max, else NULL */
/* Columns of a bag summed at once, in the compute type (so that float16 and
 * bfloat16 round once, at the end, as PyTorch's kernel does). */
#define BAG_COLS 64

#define DEF_EMBEDDING_BAG(SFX, T, CT, LOAD, STORE)                                                 \
    static void bag_##SFX(T *y, int64_t *amax, const T *rows, const ember_tensor *indices,         \
                          const bags *g, const T *psw, int64_t psw_stride, int mode, int64_t pad,  \
                          int64_t d, const bag_strides *st) {                                      \
        const int64_t *ws = st->w, *ys = st->y, *as = st->a;                                       \
        for (int64_t b = 0; b < g->count; b++) {                                                   \
            T *yb = y + b * ys[0];                                                                 \
            int64_t *ab = amax != NULL ? amax + b * as[0] : NULL;                                  \
            int64_t s0 = bag_start(g, b), e = bag_end(g, b), used = 0;                             \
            if (mode == BAG_MAX) {                                                                 \
                for (int64_t i = s0; i < e; i++) {                                                 \
                    int64_t r = read_int(indices, i);                                              \
                    if (r == pad) continue;                                                        \
                    const T *row = rows + r * ws[0];                                               \
                    for (int64_t k = 0; k < d; k++) {                                              \
                        CT v = LOAD(row[k * ws[1]]);                                               \
                        if (used == 0 || v > LOAD(yb[k * ys[1]])) {                                \
                            yb[k * ys[1]] = STORE(v);                                              \
                            ab[k * as[1]] = r;                                                     \
                        }                                                                          \
                    }                                                                              \
                    used++;                                                                        \
                }                                                                                  \
                for (int64_t k = 0; used == 0 && k < d; k++) {                                     \
                    yb[k * ys[1]] = STORE((CT)0);                                                  \
                    ab[k * as[1]] = 0;                                                             \
                }                                                                                  \
                continue;                                                                          \
            }                                                                                      \
            for (int64_t k0 = 0; k0 < d; k0 += BAG_COLS) {                                         \
                int64_t w = d - k0 < BAG_COLS ? d - k0 : BAG_COLS;                                 \
                CT acc[BAG_COLS];                                                                  \
                for (int64_t k = 0; k < w; k++) acc[k] = 0;                                        \
                used = 0;                                                                          \
                for (int64_t i = s0; i < e; i++) {                                                 \
                    int64_t r = read_int(indices, i);                                              \
                    if (r == pad) continue;                                                        \
                    const T *row = rows + r * ws[0] + k0 * ws[1];                                  \
                    CT sc = psw != NULL ? LOAD(psw[i * psw_stride]) : (CT)1;                       \
                    for (int64_t k = 0; k < w; k++) acc[k] += LOAD(row[k * ws[1]]) * sc;           \
                    used++;                                                                        \
                }                                                                                  \
                if (mode == BAG_MEAN && used > 0)                                                  \
                    for (int64_t k = 0; k < w; k++) acc[k] /= (CT)used;                            \
                for (int64_t k = 0; k < w; k++) yb[(k0 + k) * ys[1]] = STORE(acc[k]);              \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_EMBEDDING_BAG)

static ember_status check_index_tensor(ember_kernel_ctx *ctx, const ember_tensor *t,
                                       const char *what) {
    if (t->dtype != EMBER_INT64 && t->dtype != EMBER_INT32)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "embedding_bag: %s must be int64 or int32, got %s", what,
                                 ember_dtype_name(t->dtype));
    if (t->dim != 1)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "embedding_bag: %s must be 1-d, got %u-d", what, (unsigned)t->dim);
    return EMBER_OK;
}

ember_status ek_op_embedding_bag_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *weight, *indices, *offsets, *psw, *out0, *out1, *out2, *out3;
    bool scale, sparse, include_last;
    int64_t mode, pad;
    EK_TRY(ek_check_nargs(ctx, nargs, 14));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &weight));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &indices));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &offsets));
    EK_TRY(ek_arg_bool(ctx, args, 3, &scale));
    EK_TRY(ek_arg_int(ctx, args, 4, &mode));
    EK_TRY(ek_arg_bool(ctx, args, 5, &sparse));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 6, &psw));
    EK_TRY(ek_arg_bool(ctx, args, 7, &include_last));
    EK_TRY(ek_arg_int(ctx, args, 8, &pad));
    EK_TRY(ek_arg_out(ctx, args, 9, &out0));
    EK_TRY(ek_arg_out(ctx, args, 10, &out1));
    EK_TRY(ek_arg_out(ctx, args, 11, &out2));
    EK_TRY(ek_arg_out(ctx, args, 12, &out3));
    if (mode < BAG_SUM || mode > BAG_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got "
                                 "%lld",
                                 (long long)mode);
    if (weight->dim != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "embedding_bag: weight must be 2-d, got %u-d",
                                 (unsigned)weight->dim);
    EK_TRY(ek_check_float(ctx, weight->dtype, "embedding_bag weight"));
    EK_TRY(check_index_tensor(ctx, indices, "indices"));
    EK_TRY(check_index_tensor(ctx, offsets, "offsets"));
    EK_TRY(ek_check_same_dtype(ctx, weight, out0, "embedding_bag weight and out0"));
    if (psw != NULL) {
        if (mode != BAG_SUM)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "embedding_bag: per_sample_weights need mode 0 (sum)");
        EK_TRY(ek_check_same_dtype(ctx, weight, psw, "embedding_bag weight and "
                                                     "per_sample_weights"));
        if (psw->dim != 1 || psw->sizes[0] != indices->sizes[0])
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "embedding_bag: per_sample_weights must have shape (%d)",
                                     (int)indices->sizes[0]);
    }
    ember_tensor *outs[4] = {out0, out1, out2, out3};
    for (size_t k = 1; k < 4; k++)
        if (outs[k]->dtype != EMBER_INT64 && outs[k]->dtype != EMBER_INT32)
            return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                     "embedding_bag: out%zu must be int64 or int32", k);
    const ember_tensor *reads[4] = {weight, indices, offsets, psw};
    for (size_t k = 0; k < 4; k++)
        for (size_t j = 0; j < 4; j++)
            if (reads[j] != NULL) EK_TRY(ek_check_no_alias(ctx, outs[k], reads[j]));
    if (mode == BAG_MAX) {
        if (out3->dtype != EMBER_INT64)
            return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                     "embedding_bag: out3 must be int64 in max mode");
    }

    int64_t vocab = weight->sizes[0], d = weight->sizes[1], n = indices->sizes[0];
    int64_t noff = offsets->sizes[0];
    bags g = {offsets, include_last ? (noff > 0 ? noff - 1 : 0) : noff, n};
    /* every index and offset is checked before anything is written */
    for (int64_t i = 0; i < n; i++) {
        int64_t r = read_int(indices, i);
        if (r < 0 || r >= vocab)
            return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                     "embedding_bag: index %lld (position %lld) out of range "
                                     "[0, %lld)",
                                     (long long)r, (long long)i, (long long)vocab);
    }
    if (noff > 0 && read_int(offsets, 0) != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "embedding_bag: offsets[0] must be 0, got %lld",
                                 (long long)read_int(offsets, 0));
    for (int64_t b = 0; b < noff; b++) {
        int64_t s = read_int(offsets, b), e = b + 1 < noff ? read_int(offsets, b + 1) : n;
        if (s > e || e > n)
            return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                     "embedding_bag: offsets[%lld] = %lld is out of order or "
                                     "beyond %lld indices",
                                     (long long)b, (long long)s, (long long)n);
    }

    const int64_t shape0[2] = {g.count, d};
    EK_TRY(ek_resize_out(ctx, out0, shape0, 2));
    bool fast_sum = mode == BAG_SUM && pad < 0 && weight->dtype != EMBER_FLOAT64;
    /* torch's shape function plans the full out1 for bfloat16, though its CPU kernel
     * leaves it empty: a program with a static out1 of n entries gets them filled */
    if (fast_sum && out1->dynamism == EMBER_SHAPE_STATIC && out1->dim == 1 && out1->sizes[0] == n)
        fast_sum = false;
    const int64_t shape1[1] = {fast_sum ? 0 : n};
    EK_TRY(ek_resize_out(ctx, out1, shape1, 1));
    const int64_t shape2[1] = {g.count};
    EK_TRY(ek_resize_out(ctx, out2, shape2, 1));
    if (mode == BAG_MAX)
        EK_TRY(ek_resize_out(ctx, out3, shape0, 2));
    else
        EK_TRY(ek_resize_out(ctx, out3, shape2, 1));

    /* out1: the bag of each index; indices past the last offset go to the last bag */
    if (!fast_sum) {
        for (int64_t i = 0; i < n; i++) write_int(out1, i * out1->strides[0], 0);
        for (int64_t b = 0; b < g.count; b++) {
            int64_t e = b + 1 < g.count ? bag_start(&g, b + 1) : n;
            for (int64_t i = bag_start(&g, b); i < e; i++) write_int(out1, i * out1->strides[0], b);
        }
    }
    /* out2: rows per bag without padding (0 for sum); out3 a copy unless max */
    for (int64_t b = 0; b < g.count; b++) {
        int64_t used = 0;
        if (mode != BAG_SUM)
            for (int64_t i = bag_start(&g, b), e = bag_end(&g, b); i < e; i++)
                used += read_int(indices, i) != pad;
        write_int(out2, b * out2->strides[0], used);
        if (mode != BAG_MAX) write_int(out3, b * out3->strides[0], used);
    }
    if (out0->numel == 0) return EMBER_OK;
    int64_t *amax = mode == BAG_MAX ? (int64_t *)out3->data : NULL;
    const void *pw = psw != NULL ? psw->data : NULL;
    int64_t pws = psw != NULL ? psw->strides[0] : 0;
    bool max = mode == BAG_MAX;
    bag_strides st = {{weight->strides[0], weight->strides[1]},
                      {out0->strides[0], out0->strides[1]},
                      {max ? out3->strides[0] : 0, max ? out3->strides[1] : 0}};
    EK_FLOAT_SWITCH(ctx, weight->dtype, bag, out0->data, amax, weight->data, indices, &g, pw, pws,
                    (int)mode, pad < 0 ? -1 : pad, d, &st);
    return EMBER_OK;
}
