/*
 * aten::view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out)
 *
 * Copies self into the shape size (one entry may be -1: inferred).
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_view_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *size;
    size_t n;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &size, &n));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    int64_t shape[EMBER_MAX_DIM];
    EK_TRY(ek_view_shape(ctx, in->numel, size, n, shape));
    EK_TRY(ek_resize_out(ctx, out, shape, n));
    return ek_copy_reshape(ctx, out, in);
}
