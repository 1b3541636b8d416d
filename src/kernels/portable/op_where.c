/*
 * aten::where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out)
 *
 * out = condition ? self : other, all three broadcast together; self and
 * other are promoted to a common type.
 */
#include "kernel_util.h"
#include "ops.h"

static void where_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] != 0 ? in[1][i] : in[2][i];
}

static void where_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] != 0 ? in[1][i] : in[2][i];
}

static void where_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] != 0 ? in[1][i] : in[2][i];
}

static const ek_map where_map = {where_f32, where_f64, where_i64};

ember_status ek_op_where_self_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *cond, *self, *other, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &cond));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &other));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    if (cond->dtype != EMBER_BOOL && cond->dtype != EMBER_UINT8)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "condition must be bool, got %s",
                                 ember_dtype_name(cond->dtype));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, other->dtype, "other"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    int result = ek_binary_result_type(self, other, NULL);
    if (!ek_can_cast(result, out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "result type %s can't be cast to out dtype %s",
                                 ember_dtype_name(result), ember_dtype_name(out->dtype));
    const ember_tensor *ins[3] = {cond, self, other};
    return ek_map_tensors(ctx, out, ins, 3, ek_ctype_of(result), &where_map, NULL);
}
