/*
 * aten::gelu.out(Tensor self, *, str approximate="none", Tensor(a!) out)
 *
 * "none": x/2 * (1 + erf(x / sqrt(2)));
 * "tanh": x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

#define GELU_SQRT1_2 0.70710678118654752440
#define GELU_SQRT_2_PI 0.79788456080286535588

static void gelu_f32(float *o, const float *const *in, size_t n, void *arg) {
    bool tanh_approx = *(const bool *)arg;
    const float *x = in[0];
    if (tanh_approx) {
        for (size_t i = 0; i < n; i++) {
            float inner = (float)GELU_SQRT_2_PI * (x[i] + 0.044715f * x[i] * x[i] * x[i]);
            o[i] = 0.5f * x[i] * (1.0f + tanhf(inner));
        }
    } else {
        for (size_t i = 0; i < n; i++)
            o[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)GELU_SQRT1_2));
    }
}

static void gelu_f64(double *o, const double *const *in, size_t n, void *arg) {
    bool tanh_approx = *(const bool *)arg;
    const double *x = in[0];
    if (tanh_approx) {
        for (size_t i = 0; i < n; i++) {
            double inner = GELU_SQRT_2_PI * (x[i] + 0.044715 * x[i] * x[i] * x[i]);
            o[i] = 0.5 * x[i] * (1.0 + tanh(inner));
        }
    } else {
        for (size_t i = 0; i < n; i++) o[i] = 0.5 * x[i] * (1.0 + erf(x[i] * GELU_SQRT1_2));
    }
}

static const ek_map gelu_map = {gelu_f32, gelu_f64, NULL};

ember_status ek_op_gelu_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    const char *approx;
    size_t len;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_string(ctx, args, 1, &approx, &len, false));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    bool tanh_approx;
    if (ek_str_eq(approx, len, "none"))
        tanh_approx = false;
    else if (ek_str_eq(approx, len, "tanh"))
        tanh_approx = true;
    else
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "approximate must be \"none\" or \"tanh\"");
    EK_TRY(ek_check_float(ctx, self->dtype, "self"));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    const ember_tensor *ins[1] = {self};
    return ek_map_tensors(ctx, out, ins, 1, ek_ctype_of(self->dtype), &gelu_map, &tanh_approx);
}
