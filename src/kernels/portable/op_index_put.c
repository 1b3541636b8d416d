/*
 * aten::index_put.out(Tensor self, Tensor?[] indices, Tensor values,
 *     bool accumulate=False, *, Tensor(a!) out)
 *
 * out = self.clone(); out[indices] = values (or += values when accumulate).
 * indices follow index.Tensor: entry j indexes dim j (None keeps the whole
 * dim; missing trailing entries are None); the int64 / int32 index tensors
 * broadcast together to a shape B, which replaces the indexed dims in place
 * when they are adjacent, else comes first (NumPy's rule). values (of self's
 * dtype) broadcast to that indexed shape. Negative indices wrap.
 *
 * A bool (or uint8) mask entry of rank r covers r dims of self, whose sizes
 * it must have, and stands for r index tensors: the positions of its true
 * elements, row-major (as mask.nonzero() would give them), built in scratch
 * memory. With repeated indices and accumulate false the last write wins.
 * Every index is checked at execute: EMBER_ERR_DATA_OUT_OF_BOUNDS.
 */
#include <string.h>

#include "kernel_util.h"
#include "ops.h"

/* The index tensors a mask stands for: one (count) int64 tensor per mask dim. */
typedef struct mask_index {
    ember_tensor t[EMBER_MAX_DIM];
    int32_t size[EMBER_MAX_DIM][1];
    int64_t stride[1];
    uint8_t order[1];
} mask_index;

/* Turns mask (covering self dims first..first+rank) into index tensors in mi. */
static ember_status mask_to_indices(ember_kernel_ctx *ctx, const ember_tensor *mask,
                                    const ember_tensor *self, size_t first, mask_index *mi) {
    size_t r = mask->dim;
    for (size_t q = 0; q < r; q++)
        if (mask->sizes[q] != self->sizes[first + q])
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "index_put: mask size %d does not match self size %d at "
                                     "dim %zu",
                                     (int)mask->sizes[q], (int)self->sizes[first + q], first + q);
    int64_t count = 0, idx[EMBER_MAX_DIM] = {0}, off[1] = {0}, sizes[EMBER_MAX_DIM];
    int64_t st[1][EMBER_MAX_DIM];
    ek_sizes64(mask, sizes);
    for (size_t q = 0; q < r; q++) st[0][q] = mask->strides[q];
    const uint8_t *m = (const uint8_t *)mask->data;
    if (mask->numel > 0) do {
        count += m[off[0]] != 0;
    } while (ek_advance(idx, sizes, r, 1, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    size_t bytes;
    if (ember_mul_overflow((size_t)count, r * sizeof(int64_t), &bytes))
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "index_put: mask too large");
    int64_t *pos = count > 0 ? ember_kernel_scratch(ctx, bytes, sizeof(int64_t)) : NULL;
    if (count > 0 && pos == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY,
                                 "index_put: no scratch memory for %lld mask positions",
                                 (long long)count);
    /* pos (r, count): row q holds the dim-q coordinate of each true element */
    int64_t k = 0;
    memset(idx, 0, sizeof idx);
    off[0] = 0;
    if (count > 0) do {
        if (m[off[0]] != 0) {
            for (size_t q = 0; q < r; q++) pos[(int64_t)q * count + k] = idx[q];
            k++;
        }
    } while (ek_advance(idx, sizes, r, 1, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    mi->stride[0] = 1;
    mi->order[0] = 0;
    for (size_t q = 0; q < r; q++) {
        ember_tensor *t = &mi->t[q];
        memset(t, 0, sizeof *t);
        mi->size[q][0] = (int32_t)count; /* count <= mask numel, which fits */
        t->data = count > 0 ? pos + (int64_t)q * count : NULL;
        t->sizes = mi->size[q];
        t->bounds = mi->size[q];
        t->dim_order = mi->order;
        t->strides = mi->stride;
        t->numel = count;
        t->nbytes = (size_t)count * sizeof(int64_t);
        t->capacity = t->nbytes;
        t->dim = 1;
        t->dtype = EMBER_INT64;
    }
    return EMBER_OK;
}

ember_status ek_op_index_put_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *vals, *out;
    bool acc;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &vals));
    EK_TRY(ek_arg_bool(ctx, args, 3, &acc));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    if (args[1]->tag != EMBER_TAG_OPTIONAL_TENSOR_LIST && args[1]->tag != EMBER_TAG_TENSOR_LIST)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "argument 1: expected a list of Tensor?");
    ember_value **items = args[1]->u.tensor_list.items;
    size_t k = args[1]->u.tensor_list.len;
    if (k > 0 && items == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "argument 1: malformed list");

    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_same_dtype(ctx, in, vals, "self and values"));
    EK_TRY(ek_check_no_alias(ctx, out, vals));

    /* the index tensors, by self dim (entry j covers self dim `dim`, or a
     * mask's rank of dims from there) */
    const ember_tensor *ix[EMBER_MAX_DIM] = {NULL};
    mask_index masks[EMBER_MAX_DIM];
    size_t dim = 0;
    for (size_t j = 0; j < k; j++) {
        ember_value *v = items[j];
        if (v == NULL || v->tag == EMBER_TAG_NONE) {
            dim++;
            continue;
        }
        if (v->tag != EMBER_TAG_TENSOR || v->u.t == NULL || v->u.t->dim > EMBER_MAX_DIM)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                     "index_put: entry %zu is not a tensor", j);
        const ember_tensor *t = v->u.t;
        EK_TRY(ek_check_no_alias(ctx, out, t));
        if (t->numel > 0 && t->data == NULL)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_STATE,
                                     "index_put: entry %zu has no storage", j);
        bool mask = t->dtype == EMBER_BOOL || t->dtype == EMBER_UINT8;
        if (mask && t->dim == 0)
            return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                     "index_put: entry %zu is a 0-d mask", j);
        size_t covers = mask ? t->dim : 1;
        if (dim + covers > in->dim)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "index_put: the indices cover more dims than self has (%u)",
                                     (unsigned)in->dim);
        if (mask) {
            EK_TRY(mask_to_indices(ctx, t, in, dim, &masks[dim]));
            for (size_t q = 0; q < covers; q++) ix[dim + q] = &masks[dim].t[q];
            dim += covers;
            continue;
        }
        if (t->dtype != EMBER_INT64 && t->dtype != EMBER_INT32)
            return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                     "index_put: entry %zu must be int64 or int32, got %s", j,
                                     ember_dtype_name(t->dtype));
        ix[dim++] = t;
    }

    /* Fails (NOT_SUPPORTED) when there is no index tensor at all. */
    ek_index_geom g;
    EK_TRY(ek_index_geometry(ctx, "index_put", in, ix, &g));

    /* out = self */
    EK_TRY(ek_resize_like(ctx, out, in));
    if (out != in) ek_copy_tensor(out, in);
    if (out->numel == 0) return EMBER_OK;

    /* Per indexed dim the stride of each operand:
     * [0] out (0 on B dims), [1] values (broadcast), [2 + a] index tensor a. */
    const int64_t *shape = g.shape;
    size_t rank = g.rank;
    int64_t st[2 + EMBER_MAX_DIM][EMBER_MAX_DIM];
    memset(st, 0, sizeof st);
    for (size_t a = 0; a < g.nadv; a++) memcpy(st[2 + a], g.idx_st[a], sizeof st[2 + a]);
    for (size_t j = 0; j < in->dim; j++)
        if (ix[j] == NULL) st[0][g.dim_of[j]] = out->strides[j];
    int64_t count;
    if (!ek_numel(shape, rank, &count))
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "index_put: shape overflows");
    if (!ek_broadcastable_to(vals, shape, rank)) {
        char a[64], b[64];
        int32_t s32[EMBER_MAX_DIM];
        for (size_t d = 0; d < rank; d++) s32[d] = (int32_t)shape[d];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "index_put: values of shape %s cannot be broadcast to the "
                                 "indexed shape %s",
                                 ek_shape_str(a, sizeof a, vals->sizes, vals->dim),
                                 ek_shape_str(b, sizeof b, s32, rank));
    }
    if (count == 0) return EMBER_OK;
    if (vals->data == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_STATE, "index_put: values has no storage");
    size_t vlead = rank - vals->dim;
    for (size_t d = 0; d < vals->dim; d++)
        st[1][vlead + d] = vals->sizes[d] == 1 ? 0 : vals->strides[d];

    size_t es = ember_dtype_size(in->dtype);
    ek_ctype ct = ek_ctype_of(in->dtype);
    ek_load_fn load = ek_loader(in->dtype, ct);
    ek_store_fn store = ek_storer(in->dtype, ct);
    char *ob = (char *)out->data;
    const char *vb = (const char *)vals->data;
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2 + EMBER_MAX_DIM] = {0};
    do {
        int64_t dst;
        EK_TRY(ek_index_offset(ctx, &g, in, out->strides, off + 2, &dst));
        dst += off[0];
        char *d = ob + dst * (int64_t)es;
        const char *s = vb + off[1] * (int64_t)es;
        if (!acc) {
            memcpy(d, s, es);
        } else if (in->dtype == EMBER_BOOL) {
            *(uint8_t *)d = (uint8_t)(*(uint8_t *)d | *(const uint8_t *)s);
        } else {
            union {
                float f;
                double d;
                int64_t i;
            } x, y;
            load(&x, d, 1, 1);
            load(&y, s, 1, 1);
            if (ct == EK_CT_F32)
                x.f += y.f;
            else if (ct == EK_CT_F64)
                x.d += y.d;
            else
                x.i = (int64_t)((uint64_t)x.i + (uint64_t)y.i);
            store(d, 1, &x, 1);
        }
    } while (ek_advance(idx, shape, rank, 2 + g.nadv, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    return EMBER_OK;
}
