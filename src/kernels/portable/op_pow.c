/*
 * aten::pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out)
 * aten::pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out)
 *
 * self ** exponent in the promoted type. Integer powers use repeated
 * squaring; a negative integer exponent fails, as in PyTorch.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

typedef struct pow_arg {
    bool negative_exponent; /* set by the integer loop */
} pow_arg;

static void pow_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = powf(in[0][i], in[1][i]);
}

static void pow_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = pow(in[0][i], in[1][i]);
}

static void pow_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    pow_arg *p = (pow_arg *)arg;
    for (size_t i = 0; i < n; i++) {
        uint64_t base = (uint64_t)in[0][i], result = 1;
        int64_t e = in[1][i];
        if (e < 0) {
            p->negative_exponent = true;
            e = 0;
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
    pow_arg p = {false};
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (scalar)
        EK_TRY(ek_arg_scalar(ctx, args, 1, &s));
    else
        EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    int result = ek_binary_result_type(self, other, &s);
    if (result == EMBER_BOOL) result = EMBER_INT64;
    EK_TRY(ek_map_binary(ctx, out, self, other, &s, result, ek_ctype_of(result), &pow_map, &p));
    if (p.negative_exponent)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "integers to negative integer powers are not allowed");
    return EMBER_OK;
}

ember_status ek_op_pow_tensor_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return pow_common(ctx, args, nargs, true);
}

ember_status ek_op_pow_tensor_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return pow_common(ctx, args, nargs, false);
}
