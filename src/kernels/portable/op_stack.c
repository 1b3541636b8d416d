/*
 * aten::stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out)
 *
 * Joins equal-shaped tensors along a new dim (in [-rank-1, rank]).
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_stack_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_value **items;
    size_t count;
    int64_t dim;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor_list(ctx, args, 0, &items, &count));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    if (count == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "stack: expects a non-empty list");
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    const ember_tensor *ref = items[0]->u.t;
    if (ref->dim >= EMBER_MAX_DIM || count > INT32_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "stack: result too large");
    size_t d;
    EK_TRY(ek_norm_dim(ctx, dim, ref->dim + 1, &d));
    for (size_t i = 0; i < count; i++) {
        const ember_tensor *t = items[i]->u.t;
        EK_TRY(ek_check_no_alias(ctx, out, t));
        if (t->numel > 0 && t->data == NULL)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_STATE,
                                     "stack: tensor %zu has no storage", i);
        EK_TRY(ek_check_supported(ctx, t->dtype, "stack input"));
        if (ek_is_float(t->dtype) && !ek_is_float(out->dtype))
            return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "stack: cannot cast %s into %s",
                                     ember_dtype_name(t->dtype), ember_dtype_name(out->dtype));
        bool same = t->dim == ref->dim;
        for (size_t k = 0; same && k < t->dim; k++) same = t->sizes[k] == ref->sizes[k];
        if (!same)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "stack: tensor %zu differs in shape from tensor 0", i);
    }
    int64_t shape[EMBER_MAX_DIM];
    for (size_t k = 0, j = 0; k <= ref->dim; k++)
        shape[k] = k == d ? (int64_t)count : ref->sizes[j++];
    EK_TRY(ek_resize_out(ctx, out, shape, ref->dim + 1));
    if (out->numel == 0) return EMBER_OK;

    /* out strides without the new dim address one stacked tensor */
    int64_t dst_strides[EMBER_MAX_DIM];
    for (size_t k = 0, j = 0; k <= ref->dim; k++)
        if (k != d) dst_strides[j++] = out->strides[k];
    for (size_t i = 0; i < count; i++) {
        const ember_tensor *t = items[i]->u.t;
        int64_t sizes[EMBER_MAX_DIM];
        ek_sizes64(t, sizes);
        ek_copy_block_cast(out->data, out->dtype, (int64_t)i * out->strides[d], dst_strides,
                           t->data, t->dtype, 0, t->strides, sizes, t->dim);
    }
    return EMBER_OK;
}
