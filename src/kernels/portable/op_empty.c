/*
 * aten::empty.out(SymInt[] size, *, MemoryFormat? memory_format=None, Tensor(a!) out)
 *
 * Resizes out to size; its contents are left as they are.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_empty_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    const int64_t *size;
    size_t n;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_int_list(ctx, args, 0, &size, &n));
    if (args[1]->tag != EMBER_TAG_NONE && args[1]->tag != EMBER_TAG_INT)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "argument 1: expected MemoryFormat or None");
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    return ek_resize_out(ctx, out, size, n);
}
