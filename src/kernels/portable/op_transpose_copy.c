/*
 * aten::transpose_copy.int_out(Tensor self, int dim0, int dim1, *, Tensor(a!) out)
 * aten::t_copy.out(Tensor self, *, Tensor(a!) out)
 *
 * Swaps two dims (t: the two dims of a matrix; 0-d and 1-d are copied).
 */
#include "kernel_util.h"
#include "ops.h"

static ember_status transpose(ember_kernel_ctx *ctx, ember_tensor *in, ember_tensor *out, size_t d0,
                              size_t d1) {
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    int64_t shape[EMBER_MAX_DIM], src_strides[EMBER_MAX_DIM];
    for (size_t i = 0; i < in->dim; i++) {
        size_t s = i == d0 ? d1 : i == d1 ? d0 : i;
        shape[i] = in->sizes[s];
        src_strides[i] = in->strides[s];
    }
    EK_TRY(ek_resize_out(ctx, out, shape, in->dim));
    if (out->numel == 0) return EMBER_OK;
    ek_copy_block(out->data, 0, out->strides, in->data, 0, src_strides, shape, in->dim,
                  ember_dtype_size(in->dtype));
    return EMBER_OK;
}

ember_status ek_op_transpose_copy_int_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    int64_t dim0, dim1;
    size_t d0, d1;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim0));
    EK_TRY(ek_arg_int(ctx, args, 2, &dim1));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(ek_norm_dim(ctx, dim0, in->dim, &d0));
    EK_TRY(ek_norm_dim(ctx, dim1, in->dim, &d1));
    return transpose(ctx, in, out, d0, d1);
}

ember_status ek_op_t_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    if (in->dim > 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "t: expects a tensor of at most 2 dims");
    return transpose(ctx, in, out, 0, in->dim == 2 ? 1 : 0);
}
