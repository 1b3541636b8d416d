/*
 * aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
 * aten::alias_copy.out(Tensor self, *, Tensor(a!) out)
 * aten::detach_copy.out(Tensor self, *, Tensor(a!) out)
 * aten::lift_fresh_copy.out(Tensor self, *, Tensor(a!) out)
 *
 * Copies self into out (same dtype). The layout is out's own dim order, so
 * memory_format needs no handling beyond its type.
 */
#include "kernel_util.h"
#include "ops.h"

static ember_status copy_same(ember_kernel_ctx *ctx, ember_tensor *in, ember_tensor *out) {
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_resize_like(ctx, out, in));
    ek_copy_tensor(out, in);
    return EMBER_OK;
}

ember_status ek_op_clone_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    if (args[1]->tag != EMBER_TAG_NONE && args[1]->tag != EMBER_TAG_INT)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "argument 1: expected MemoryFormat or None");
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    return copy_same(ctx, in, out);
}

ember_status ek_op_alias_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    return copy_same(ctx, in, out);
}

ember_status ek_op_detach_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_op_alias_copy_out(ctx, args, nargs);
}

ember_status ek_op_lift_fresh_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_op_alias_copy_out(ctx, args, nargs);
}
