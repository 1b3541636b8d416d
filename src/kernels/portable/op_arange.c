/*
 * aten::arange.out(Scalar end, *, Tensor(a!) out)
 * aten::arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out)
 *
 * out[i] = start + i * step for i < ceil((end - start) / step); out is 1-d.
 * Integer outputs with integer arguments are computed exactly in int64.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

static ember_status arange(ember_kernel_ctx *ctx, const ek_scalar *start, const ek_scalar *end,
                           const ek_scalar *step, ember_tensor *out) {
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    if (out->dim != 1)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "arange: out must be 1-d, got %u-d",
                                 (unsigned)out->dim);
    if (step->d == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "arange: step must be nonzero");
    if ((step->d > 0 && end->d < start->d) || (step->d < 0 && end->d > start->d))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "arange: bounds inconsistent with the sign of step");
    bool exact = !ek_is_float(out->dtype) && start->kind != EK_SCALAR_FLOAT &&
                 end->kind != EK_SCALAR_FLOAT && step->kind != EK_SCALAR_FLOAT;
    double size_d = ceil((end->d - start->d) / step->d);
    if (!(size_d >= 0 && size_d <= (double)INT32_MAX))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "arange: size %g out of range",
                                 size_d);
    const int64_t shape[1] = {(int64_t)size_d};
    EK_TRY(ek_resize_out(ctx, out, shape, 1));
    ek_store_fn store = ek_storer(out->dtype, exact ? EK_CT_I64 : EK_CT_F64);
    char *o = (char *)out->data;
    int64_t esize = (int64_t)ember_dtype_size(out->dtype);
    for (int64_t i = 0; i < shape[0]; i++) {
        if (exact) {
            int64_t v = (int64_t)((uint64_t)start->i + (uint64_t)i * (uint64_t)step->i);
            store(o + i * esize * out->strides[0], 1, &v, 1);
        } else {
            double v = start->d + (double)i * step->d;
            store(o + i * esize * out->strides[0], 1, &v, 1);
        }
    }
    return EMBER_OK;
}

ember_status ek_op_arange_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ek_scalar end;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_scalar(ctx, args, 0, &end));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    ek_scalar start = ek_scalar_from_int(0), step = ek_scalar_from_int(1);
    return arange(ctx, &start, &end, &step, out);
}

ember_status ek_op_arange_start_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ek_scalar start, end, step;
    ember_tensor *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_scalar(ctx, args, 0, &start));
    EK_TRY(ek_arg_scalar(ctx, args, 1, &end));
    EK_TRY(ek_arg_scalar(ctx, args, 2, &step));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    return arange(ctx, &start, &end, &step, out);
}
