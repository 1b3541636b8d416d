/*
 * aten::full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out)
 * aten::zeros.out(SymInt[] size, *, Tensor(a!) out)
 * aten::ones.out(SymInt[] size, *, Tensor(a!) out)
 * aten::full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None,
 *     Tensor(a!) out)
 * aten::scalar_tensor.out(Scalar s, *, Tensor(a!) out)
 *
 * Fill out (resized to size, self's shape, or 0-dim) with one value cast to
 * out's dtype.
 */
#include "kernel_util.h"
#include "ops.h"

static ember_status fill(ember_kernel_ctx *ctx, ember_tensor *out, const int64_t *size, size_t n,
                         const ek_scalar *value) {
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    EK_TRY(ek_resize_out(ctx, out, size, n));
    if (out->numel == 0) return EMBER_OK;
    uint8_t elem[8];
    ek_scalar_store(out->dtype, value, elem);
    ek_fill_bytes(out->data, out->numel, elem, ember_dtype_size(out->dtype));
    return EMBER_OK;
}

ember_status ek_op_full_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    const int64_t *size;
    size_t n;
    ek_scalar value;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_int_list(ctx, args, 0, &size, &n));
    EK_TRY(ek_arg_scalar(ctx, args, 1, &value));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    return fill(ctx, out, size, n, &value);
}

static ember_status fill_constant(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                  int64_t v) {
    const int64_t *size;
    size_t n;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_int_list(ctx, args, 0, &size, &n));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    ek_scalar value = ek_scalar_from_int(v);
    return fill(ctx, out, size, n, &value);
}

ember_status ek_op_zeros_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return fill_constant(ctx, args, nargs, 0);
}

ember_status ek_op_ones_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return fill_constant(ctx, args, nargs, 1);
}

ember_status ek_op_full_like_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    ek_scalar value;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self)); /* only its shape is read */
    EK_TRY(ek_arg_scalar(ctx, args, 1, &value));
    if (args[2]->tag != EMBER_TAG_NONE && args[2]->tag != EMBER_TAG_INT)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "argument 2: expected MemoryFormat or None");
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(self, shape);
    return fill(ctx, out, shape, self->dim, &value);
}

ember_status ek_op_scalar_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ek_scalar value;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_scalar(ctx, args, 0, &value));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    return fill(ctx, out, NULL, 0, &value);
}
