/*
 * aten::fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out)
 * aten::fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out)
 *
 * out takes self's shape, every element set to value. As in PyTorch, the
 * value is first converted to self's dtype (fill_ of a copy of self), then
 * to out's. A Scalar value that overflows self's dtype fails, as in PyTorch
 * (an integer may wrap into an unsigned dtype: -1 fills uint8 with 255); a
 * Tensor value converts without checks. The Tensor overload needs a 0-dim
 * value.
 */
#include <math.h>
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

/* PyTorch's overflow check of a Scalar converted to dtype (c10's checked_convert). */
static bool scalar_fits(int dtype, const ek_scalar *s) {
    double lo, hi;
    switch (dtype) {
    case EMBER_UINT8: lo = 0, hi = 255; break;
    case EMBER_INT8: lo = -128, hi = 127; break;
    case EMBER_INT16: lo = -32768, hi = 32767; break;
    case EMBER_INT32: lo = -2147483648.0, hi = 2147483647.0; break;
    case EMBER_INT64:
        /* every int64 fits; a double if it lies in [-2^63, 2^63] (NaN fails) */
        return s->kind != EK_SCALAR_FLOAT ||
               (s->d >= -9223372036854775808.0 && s->d <= 9223372036854775808.0);
    case EMBER_FLOAT16: return isinf(s->d) || isnan(s->d) || fabs(s->d) <= 65504.0;
    case EMBER_BFLOAT16:
        return isinf(s->d) || isnan(s->d) || fabs(s->d) <= 3.3895313892515355e38;
    case EMBER_FLOAT32:
        return isinf(s->d) || isnan(s->d) || fabs(s->d) <= 3.4028234663852886e38;
    default: return true; /* float64, bool */
    }
    if (s->kind != EK_SCALAR_FLOAT) {
        if (dtype == EMBER_UINT8) lo = -hi; /* integers wrap into unsigned */
        return (double)s->i >= lo && (double)s->i <= hi;
    }
    return s->d >= lo && s->d <= hi; /* NaN fails */
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
    if (!scalar_fits(self->dtype, &value))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "fill: value %g cannot be converted to %s without overflow",
                                 value.kind == EK_SCALAR_FLOAT ? value.d : (double)value.i,
                                 ember_dtype_name(self->dtype));
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
