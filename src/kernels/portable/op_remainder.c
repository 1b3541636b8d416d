/*
 * aten::remainder.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::remainder.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
 * aten::floor_divide.out(Tensor self, Tensor other, *, Tensor(a!) out)
 *
 * Python's modulo (the result has the divisor's sign) and floor division
 * (div with rounding_mode "floor"). Integer division by zero fails.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

typedef struct rem_arg {
    bool div_by_zero;
} rem_arg;

static void rem_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        float a = in[0][i], b = in[1][i], m = fmodf(a, b);
        o[i] = (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
    }
}

static void rem_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        double a = in[0][i], b = in[1][i], m = fmod(a, b);
        o[i] = (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
    }
}

static void rem_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    rem_arg *r = (rem_arg *)arg;
    for (size_t i = 0; i < n; i++) {
        int64_t a = in[0][i], b = in[1][i];
        if (b == 0) {
            r->div_by_zero = true;
            o[i] = 0;
        } else if (b == -1) {
            o[i] = 0; /* also INT64_MIN % -1, which C leaves undefined */
        } else {
            int64_t m = a % b;
            o[i] = (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
        }
    }
}

static const ek_map rem_map = {rem_f32, rem_f64, rem_i64};

static ember_status remainder_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                     bool scalar) {
    ember_tensor *self, *other = NULL, *out;
    ek_scalar s = ek_scalar_from_int(0);
    rem_arg r = {false};
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (scalar)
        EK_TRY(ek_arg_scalar(ctx, args, 1, &s));
    else
        EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    int result = ek_binary_result_type(self, other, &s);
    s = ek_scalar_wrap(&s, result);
    EK_TRY(ek_map_binary(ctx, out, self, other, &s, result, ek_ctype_of(result), &rem_map, &r));
    if (r.div_by_zero)
        return ember_kernel_fail(ctx, EMBER_ERR_KERNEL_FAILED, "integer division by zero");
    return EMBER_OK;
}

ember_status ek_op_remainder_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return remainder_common(ctx, args, nargs, false);
}

ember_status ek_op_remainder_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return remainder_common(ctx, args, nargs, true);
}

ember_status ek_op_floor_divide_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    /* div.out_mode(self, other, rounding_mode="floor", out) */
    ember_value mode;
    mode.tag = EMBER_TAG_STRING;
    mode.u.str.data = "floor";
    mode.u.str.len = 5;
    ember_value *div_args[5] = {args[0], args[1], &mode, args[2], args[3]};
    return ek_op_div_out_mode(ctx, div_args, 5);
}
