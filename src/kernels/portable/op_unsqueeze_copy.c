/*
 * aten::unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out)
 *
 * Inserts a dim of size 1 at dim (in [-rank-1, rank]).
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_unsqueeze_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    int64_t dim;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    if (in->dim >= EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "unsqueeze: rank too large");
    EK_TRY(ek_norm_dim(ctx, dim, in->dim + 1, &d));
    int64_t shape[EMBER_MAX_DIM];
    for (size_t i = 0, j = 0; i <= in->dim; i++) shape[i] = i == d ? 1 : in->sizes[j++];
    EK_TRY(ek_resize_out(ctx, out, shape, in->dim + 1));
    return ek_copy_reshape(ctx, out, in);
}
