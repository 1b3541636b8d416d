/*
 * aten::fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out)
 * aten::fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out)
 *
 * out takes self's shape, every element set to value. As in PyTorch, the
 * value is first converted to self's dtype (fill_ of a copy of self), then
 * to out's. The Tensor overload needs a 0-dim value.
 */
#include <string.h>

#include "kernel_util.h"
#include "ops.h"

/* Fills out (resized like self) with the element elem of self's dtype. */
static ember_status fill_with(ember_kernel_ctx *ctx, ember_tensor *self, ember_tensor *out,
                              const void *elem) {
    EK_TRY(ek_resize_like(ctx, out, self));
    if (out->numel == 0) return EMBER_OK;
    uint8_t cast[8];
    const int64_t one = 1, stride = 1;
    ek_copy_block_cast(cast, out->dtype, 0, &stride, elem, self->dtype, 0, &stride, &one, 1);
    ek_fill_bytes(out->data, out->numel, cast, ember_dtype_size(out->dtype));
    return EMBER_OK;
}

ember_status ek_op_fill_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    ek_scalar value;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 0, &self)); /* only its shape and dtype are read */
    EK_TRY(ek_arg_scalar(ctx, args, 1, &value));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    uint8_t elem[8];
    ek_scalar_store(self->dtype, &value, elem);
    return fill_with(ctx, self, out, elem);
}

ember_status ek_op_fill_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *value, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 0, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &value));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, value->dtype, "value"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    if (value->dim != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "fill: value must be a 0-dim tensor, got %u dims",
                                 (unsigned)value->dim);
    /* read value before out is written: out may share its storage */
    uint8_t elem[8];
    const int64_t one = 1, stride = 1;
    ek_copy_block_cast(elem, self->dtype, 0, &stride, value->data, value->dtype, 0, &stride, &one,
                       1);
    return fill_with(ctx, self, out, elem);
}
