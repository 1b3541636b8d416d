/*
 * aten::elu.out(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1, *,
 *     Tensor(a!) out)
 *
 * out = self > 0 ? scale * self : scale * alpha * (exp(self * input_scale) - 1).
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

typedef struct elu_arg {
    double alpha, scale, input_scale;
} elu_arg;

static void elu_f32(float *o, const float *const *in, size_t n, void *arg) {
    const elu_arg *e = (const elu_arg *)arg;
    const float alpha = (float)e->alpha, scale = (float)e->scale, is = (float)e->input_scale;
    for (size_t i = 0; i < n; i++) {
        float x = in[0][i];
        o[i] = x > 0 ? scale * x : scale * alpha * expm1f(x * is);
    }
}

static void elu_f64(double *o, const double *const *in, size_t n, void *arg) {
    const elu_arg *e = (const elu_arg *)arg;
    for (size_t i = 0; i < n; i++) {
        double x = in[0][i];
        o[i] = x > 0 ? e->scale * x : e->scale * e->alpha * expm1(x * e->input_scale);
    }
}

static const ek_map elu_map = {elu_f32, elu_f64, NULL};

ember_status ek_op_elu_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    ek_scalar a, s, is;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_scalar(ctx, args, 1, &a));
    EK_TRY(ek_arg_scalar(ctx, args, 2, &s));
    EK_TRY(ek_arg_scalar(ctx, args, 3, &is));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    EK_TRY(ek_check_float(ctx, self->dtype, "elu"));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    elu_arg e = {a.d, s.d, is.d};
    const ember_tensor *ins[1] = {self};
    return ek_map_tensors(ctx, out, ins, 1, ek_ctype_of(self->dtype), &elu_map, &e);
}
