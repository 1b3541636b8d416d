/*
 * aten::sign.out(Tensor self, *, Tensor(a!) out)
 *
 * -1, 0 or 1 by the sign of each element (NaN stays NaN).
 */
#include "kernel_util.h"
#include "ops.h"

static void sign_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        float x = in[0][i];
        o[i] = x > 0 ? 1.0f : x < 0 ? -1.0f : x; /* 0, -0 and NaN pass through */
    }
}
static void sign_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        double x = in[0][i];
        o[i] = x > 0 ? 1.0 : x < 0 ? -1.0 : x;
    }
}
static void sign_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = (in[0][i] > 0) - (in[0][i] < 0);
}

static const ek_map sign_map = {sign_f32, sign_f64, sign_i64};

ember_status ek_op_sign_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &sign_map, NULL, false);
}
