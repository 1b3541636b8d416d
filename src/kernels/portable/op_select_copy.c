/*
 * aten::select_copy.int_out(Tensor self, int dim, SymInt index, *, Tensor(a!) out)
 *
 * The slice at index along dim, with that dim removed. The index (which may
 * be computed at run time) is checked: EMBER_ERR_DATA_OUT_OF_BOUNDS.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_select_copy_int_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    int64_t dim, index;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_int(ctx, args, 2, &index));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    if (in->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "select: cannot select on a 0-dim tensor");
    EK_TRY(ek_norm_dim(ctx, dim, in->dim, &d));
    int64_t size = in->sizes[d];
    if (index < -size || index >= size)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "select: index %lld out of range for dim %zu of size %lld",
                                 (long long)index, d, (long long)size);
    if (index < 0) index += size;

    int64_t shape[EMBER_MAX_DIM], src_strides[EMBER_MAX_DIM];
    size_t n = 0;
    for (size_t i = 0; i < in->dim; i++) {
        if (i == d) continue;
        shape[n] = in->sizes[i];
        src_strides[n] = in->strides[i];
        n++;
    }
    EK_TRY(ek_resize_out(ctx, out, shape, n));
    if (out->numel == 0) return EMBER_OK;
    ek_copy_block(out->data, 0, out->strides, in->data, index * in->strides[d], src_strides, shape,
                  n, ember_dtype_size(in->dtype));
    return EMBER_OK;
}
