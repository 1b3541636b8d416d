/*
 * aten::squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out)
 * aten::squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out)
 * aten::squeeze_copy.out(Tensor self, *, Tensor(a!) out)
 *
 * Drops the given dims (or all) that have size 1; other dims stay.
 */
#include "kernel_util.h"
#include "ops.h"

static ember_status squeeze(ember_kernel_ctx *ctx, ember_tensor *in, ember_tensor *out,
                            const bool *drop) {
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    int64_t shape[EMBER_MAX_DIM];
    size_t n = 0;
    for (size_t d = 0; d < in->dim; d++)
        if (!(drop[d] && in->sizes[d] == 1)) shape[n++] = in->sizes[d];
    EK_TRY(ek_resize_out(ctx, out, shape, n));
    return ek_copy_reshape(ctx, out, in);
}

ember_status ek_op_squeeze_copy_dim_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    int64_t dim;
    size_t d;
    bool drop[EMBER_MAX_DIM] = {false};
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_norm_dim(ctx, dim, in->dim, &d));
    if (in->dim > 0) drop[d] = true;
    return squeeze(ctx, in, out, drop);
}

ember_status ek_op_squeeze_copy_dims_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *dims;
    size_t ndims;
    bool drop[EMBER_MAX_DIM] = {false};
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &dims, &ndims));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    for (size_t i = 0; i < ndims; i++) {
        size_t d;
        EK_TRY(ek_norm_dim(ctx, dims[i], in->dim, &d));
        if (in->dim > 0) drop[d] = true;
    }
    return squeeze(ctx, in, out, drop);
}

ember_status ek_op_squeeze_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    bool drop[EMBER_MAX_DIM];
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    for (size_t d = 0; d < EMBER_MAX_DIM; d++) drop[d] = true;
    return squeeze(ctx, in, out, drop);
}
