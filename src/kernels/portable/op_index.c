/*
 * aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out)
 *
 * Advanced indexing, self[indices]: entry j of indices indexes dim j (None
 * keeps the whole dim; missing trailing entries are None).
 *
 * Integer index tensors (int64 or int32) broadcast together to a shape B.
 * When the indexed dims are adjacent, B replaces them in place; otherwise B
 * comes first, followed by the remaining dims (NumPy's rule).
 *
 * A bool (or uint8) mask is supported as the only index: it covers as many
 * dims as it has, and those dims collapse into one of length count(true).
 *
 * Every index is checked at execute: EMBER_ERR_DATA_OUT_OF_BOUNDS.
 */
#include <string.h>

#include "kernel_util.h"
#include "ops.h"

static bool is_mask(const ember_tensor *t) {
    return t->dtype == EMBER_BOOL || t->dtype == EMBER_UINT8;
}

/* self[mask] with the mask at dims [j, j + mask->dim). */
static ember_status index_mask(ember_kernel_ctx *ctx, const ember_tensor *in,
                               const ember_tensor *mask, size_t j, ember_tensor *out) {
    size_t m = mask->dim;
    if (j + m > in->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "index: mask has too many dims");
    for (size_t k = 0; k < m; k++)
        if (mask->sizes[k] != in->sizes[j + k])
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "index: mask size %d does not match self size %d at dim %zu",
                                     (int)mask->sizes[k], (int)in->sizes[j + k], j + k);
    /* pass 1: count the true elements (the mask's order is row-major) */
    int64_t msizes[EMBER_MAX_DIM], mst[1][EMBER_MAX_DIM], idx[EMBER_MAX_DIM] = {0}, off[1] = {0};
    ek_sizes64(mask, msizes);
    for (size_t k = 0; k < m; k++) mst[0][k] = mask->strides[k];
    const uint8_t *mb = (const uint8_t *)mask->data;
    int64_t count = 0;
    if (mask->numel > 0) {
        do {
            count += mb[off[0]] != 0;
        } while (ek_advance(idx, msizes, m, 1, (const int64_t(*)[EMBER_MAX_DIM])mst, off));
    }
    /* out = self.shape[:j] + (count,) + self.shape[j+m:] */
    int64_t shape[EMBER_MAX_DIM];
    size_t n = 0;
    for (size_t k = 0; k < j; k++) shape[n++] = in->sizes[k];
    shape[n++] = count;
    for (size_t k = j + m; k < in->dim; k++) shape[n++] = in->sizes[k];
    EK_TRY(ek_resize_out(ctx, out, shape, n));
    if (out->numel == 0) return EMBER_OK;

    /* pass 2: for every true position t, copy the block of the other dims:
     * (prefix dims, suffix dims) of self into out's slot t */
    int64_t bsizes[EMBER_MAX_DIM], bsrc[EMBER_MAX_DIM], bdst[EMBER_MAX_DIM];
    size_t nb = 0;
    for (size_t k = 0; k < in->dim; k++) {
        if (k >= j && k < j + m) continue;
        size_t ok = k < j ? k : k - m + 1; /* out dim of self dim k */
        bsizes[nb] = in->sizes[k];
        bsrc[nb] = in->strides[k];
        bdst[nb] = out->strides[ok];
        nb++;
    }
    /* self offset of a mask position: the mask dims' self strides */
    int64_t st[2][EMBER_MAX_DIM], off2[2] = {0, 0};
    for (size_t k = 0; k < m; k++) {
        st[0][k] = mask->strides[k];
        st[1][k] = in->strides[j + k];
    }
    memset(idx, 0, sizeof idx);
    int64_t t = 0;
    do {
        if (mb[off2[0]] != 0) {
            ek_copy_block(out->data, t * out->strides[j], bdst, in->data, off2[1], bsrc, bsizes, nb,
                          ember_dtype_size(in->dtype));
            t++;
        }
    } while (ek_advance(idx, msizes, m, 2, (const int64_t(*)[EMBER_MAX_DIM])st, off2));
    return EMBER_OK;
}

ember_status ek_op_index_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    if (args[1]->tag != EMBER_TAG_OPTIONAL_TENSOR_LIST && args[1]->tag != EMBER_TAG_TENSOR_LIST)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "argument 1: expected a list of Tensor?");
    ember_value **items = args[1]->u.tensor_list.items;
    size_t k = args[1]->u.tensor_list.len;
    if (k > 0 && items == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "argument 1: malformed list");
    if (k > in->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "index: %zu indices for a tensor of rank %u", k,
                                 (unsigned)in->dim);
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));

    /* the index tensors, by self dim */
    const ember_tensor *ix[EMBER_MAX_DIM] = {NULL};
    size_t adv[EMBER_MAX_DIM], nadv = 0, nmask = 0;
    for (size_t j = 0; j < k; j++) {
        ember_value *v = items[j];
        if (v == NULL || v->tag == EMBER_TAG_NONE) continue;
        if (v->tag != EMBER_TAG_TENSOR || v->u.t == NULL || v->u.t->dim > EMBER_MAX_DIM)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                     "index: entry %zu is not a tensor", j);
        const ember_tensor *t = v->u.t;
        EK_TRY(ek_check_no_alias(ctx, out, t));
        if (t->numel > 0 && t->data == NULL)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_STATE,
                                     "index: entry %zu has no storage", j);
        if (is_mask(t))
            nmask++;
        else if (t->dtype != EMBER_INT64 && t->dtype != EMBER_INT32)
            return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                     "index: entry %zu must be int64, int32 or bool, got %s", j,
                                     ember_dtype_name(t->dtype));
        ix[j] = t;
        adv[nadv++] = j;
    }
    if (nmask > 0) {
        if (nadv != 1)
            return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                     "index: a bool mask is supported only as the only index");
        return index_mask(ctx, in, ix[adv[0]], adv[0], out);
    }
    if (nadv == 0) {
        EK_TRY(ek_resize_like(ctx, out, in));
        ek_copy_tensor(out, in);
        return EMBER_OK;
    }

    /* Out dims, and per out dim the stride of each operand:
     * [0] out, [1] self (0 on B dims), [2 + a] index tensor a (B dims only). */
    ek_index_geom g;
    EK_TRY(ek_index_geometry(ctx, "index", in, ix, &g));
    int64_t st[2 + EMBER_MAX_DIM][EMBER_MAX_DIM];
    memset(st, 0, sizeof st);
    for (size_t a = 0; a < g.nadv; a++) memcpy(st[2 + a], g.idx_st[a], sizeof st[2 + a]);
    for (size_t j = 0; j < in->dim; j++)
        if (ix[j] == NULL) st[1][g.dim_of[j]] = in->strides[j];
    EK_TRY(ek_resize_out(ctx, out, g.shape, g.rank));
    if (out->numel == 0) return EMBER_OK;
    for (size_t dd = 0; dd < g.rank; dd++) st[0][dd] = out->strides[dd];

    size_t es = ember_dtype_size(in->dtype);
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2 + EMBER_MAX_DIM] = {0};
    do {
        int64_t src;
        EK_TRY(ek_index_offset(ctx, &g, in, in->strides, off + 2, &src));
        src += off[1];
        memcpy((char *)out->data + off[0] * (int64_t)es, (const char *)in->data + src * (int64_t)es,
               es);
    } while (ek_advance(idx, g.shape, g.rank, 2 + g.nadv, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    return EMBER_OK;
}
