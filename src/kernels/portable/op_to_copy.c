/*
 * aten::_to_copy.out(Tensor self, *, bool non_blocking=False,
 *     MemoryFormat? memory_format=None, Tensor(a!) out)
 *
 * Copies self into out, converting to out's dtype (float to int truncates).
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_to_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    bool non_blocking;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_bool(ctx, args, 1, &non_blocking));
    if (args[2]->tag != EMBER_TAG_NONE && args[2]->tag != EMBER_TAG_INT)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "argument 2: expected MemoryFormat or None");
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    EK_TRY(ek_resize_like(ctx, out, in));
    ek_copy_tensor(out, in);
    return EMBER_OK;
}
