/*
 * aten::pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out)
 * aten::pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out)
 * aten::pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out)
 *
 * self ** exponent in the promoted type. Integer powers use repeated
 * squaring (wrapping); a negative integer exponent gives 1 for base 1, +-1
 * for base -1 and 0 otherwise, as in PyTorch, except that an integer tensor
 * to a negative integer Scalar power fails, as PyTorch refuses it. pow of a
 * Scalar base needs a non-bool result type.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

static void pow_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = powf(in[0][i], in[1][i]);
}

static void pow_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = pow(in[0][i], in[1][i]);
}

static void pow_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        uint64_t base = (uint64_t)in[0][i], result = 1;
        int64_t e = in[1][i];
        if (e < 0) { /* 1/base truncated: only bases 1 and -1 stay non-zero */
            int64_t b = in[0][i];
            o[i] = b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
            continue;
        }
        while (e > 0) { /* wraps around like PyTorch's integer pow */
            if (e & 1) result *= base;
            base *= base;
            e >>= 1;
        }
        o[i] = (int64_t)result;
    }
}

static const ek_map pow_map = {pow_f32, pow_f64, pow_i64};

static ember_status pow_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                               bool scalar) {
    ember_tensor *self, *other = NULL, *out;
    ek_scalar s = ek_scalar_from_int(0);
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (scalar)
        EK_TRY(ek_arg_scalar(ctx, args, 1, &s));
    else
        EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    int result = ek_binary_result_type(self, other, &s);
    if (result == EMBER_BOOL) result = EMBER_INT64;
    if (scalar && !ek_is_float(result) && s.kind == EK_SCALAR_INT && s.i < 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "integers to negative integer powers are not allowed");
    return ek_map_binary(ctx, out, self, other, &s, result, ek_ctype_of(result), &pow_map, NULL);
}

ember_status ek_op_pow_tensor_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return pow_common(ctx, args, nargs, true);
}

ember_status ek_op_pow_tensor_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return pow_common(ctx, args, nargs, false);
}

ember_status ek_op_pow_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *exponent, *out;
    ek_scalar base;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_scalar(ctx, args, 0, &base));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &exponent));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_supported(ctx, exponent->dtype, "exponent"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    ek_result_type rt;
    ek_result_type_init(&rt);
    ek_result_type_scalar(&rt, &base);
    ek_result_type_tensor(&rt, exponent);
    int result = ek_result_type_get(&rt);
    if (result == EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "pow is not defined for a bool result type");
    if (!ek_can_cast(result, out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "result type %s can't be cast to out dtype %s",
                                 ember_dtype_name(result), ember_dtype_name(out->dtype));
    ek_ctype ct = ek_ctype_of(result);
    ek_scalar_tensor st;
    ek_scalar_tensor_init(&st, &base, ct);
    const ember_tensor *ins[2] = {&st.t, exponent};
    return ek_map_tensors(ctx, out, ins, 2, ct, &pow_map, NULL);
}
