/*
 * aten::cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out)
 *
 * Concatenates along dim; all other sizes must match. Inputs may differ in
 * dtype (each is cast to out's). As in PyTorch, 1-d empty tensors are skipped.
 */
#include "kernel_util.h"
#include "ops.h"

static bool skipped(const ember_tensor *t) {
    return t->dim == 1 && t->sizes[0] == 0;
}

ember_status ek_op_cat_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_value **items;
    size_t count;
    int64_t dim;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor_list(ctx, args, 0, &items, &count));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));

    /* the first tensor that is not skipped gives the rank and other sizes */
    const ember_tensor *ref = NULL;
    for (size_t i = 0; i < count && ref == NULL; i++)
        if (!skipped(items[i]->u.t)) ref = items[i]->u.t;
    if (ref == NULL) {
        const int64_t empty[1] = {0};
        return ek_resize_out(ctx, out, empty, 1);
    }
    size_t d;
    EK_TRY(ek_norm_dim(ctx, dim, ref->dim, &d));
    if (ref->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "cat: zero-dim tensors cannot be concatenated");
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(ref, shape);
    shape[d] = 0;
    for (size_t i = 0; i < count; i++) {
        const ember_tensor *t = items[i]->u.t;
        if (skipped(t)) continue;
        EK_TRY(ek_check_no_alias(ctx, out, t));
        if (t->numel > 0 && t->data == NULL)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_STATE, "cat: tensor %zu has no storage",
                                     i);
        EK_TRY(ek_check_supported(ctx, t->dtype, "cat input"));
        if (ek_is_float(t->dtype) && !ek_is_float(out->dtype))
            return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "cat: cannot cast %s into %s",
                                     ember_dtype_name(t->dtype), ember_dtype_name(out->dtype));
        if (t->dim != ref->dim)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "cat: tensor %zu has rank %u, expected %u", i,
                                     (unsigned)t->dim, (unsigned)ref->dim);
        for (size_t k = 0; k < t->dim; k++)
            if (k != d && t->sizes[k] != ref->sizes[k])
                return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                         "cat: tensor %zu has size %d at dim %zu, expected %d", i,
                                         (int)t->sizes[k], k, (int)ref->sizes[k]);
        shape[d] += t->sizes[d]; /* each <= INT32_MAX, at most SIZE_MAX items: fits */
        if (shape[d] > INT32_MAX)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "cat: result too large");
    }
    EK_TRY(ek_resize_out(ctx, out, shape, ref->dim));
    if (out->numel == 0) return EMBER_OK;

    int64_t at = 0; /* offset along dim */
    for (size_t i = 0; i < count; i++) {
        const ember_tensor *t = items[i]->u.t;
        if (skipped(t)) continue;
        int64_t sizes[EMBER_MAX_DIM];
        ek_sizes64(t, sizes);
        if (t->numel > 0)
            ek_copy_block_cast(out->data, out->dtype, at * out->strides[d], out->strides, t->data,
                               t->dtype, 0, t->strides, sizes, t->dim);
        at += t->sizes[d];
    }
    return EMBER_OK;
}
