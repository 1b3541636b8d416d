/*
 * aten::relu.out(Tensor self, *, Tensor(a!) out)
 *
 * out = max(self, 0); NaN stays NaN.
 */
#include "kernel_util.h"
#include "ops.h"

static void relu_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] < 0.0f ? 0.0f : in[0][i];
}

static void relu_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] < 0.0 ? 0.0 : in[0][i];
}

static void relu_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] < 0 ? 0 : in[0][i];
}

static const ek_map relu_map = {relu_f32, relu_f64, relu_i64};

ember_status ek_op_relu_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &relu_map, NULL, false);
}
