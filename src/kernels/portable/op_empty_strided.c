/*
 * aten::empty_strided.out(SymInt[] size, SymInt[] stride, *, Tensor(a!) out)
 *
 * Resizes out to size; its contents are left as they are. The memory layout
 * of an out tensor is fixed by its dim order in the program, so stride is
 * only checked (one non-negative entry per dim), not applied.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_empty_strided_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    const int64_t *size, *stride;
    size_t n, nstride;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_int_list(ctx, args, 0, &size, &n));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &stride, &nstride));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    if (nstride != n)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "empty_strided: %zu sizes but %zu strides", n, nstride);
    for (size_t i = 0; i < n; i++)
        if (stride[i] < 0)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "empty_strided: stride %lld at dim %zu is negative",
                                     (long long)stride[i], i);
    return ek_resize_out(ctx, out, size, n);
}
