/*
 * aten::abs.out(Tensor self, *, Tensor(a!) out)
 *
 * out = |self|, for every dtype (integers wrap at the minimum, as in PyTorch).
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

static void abs_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = fabsf(in[0][i]);
}

static void abs_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = fabs(in[0][i]);
}

static void abs_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++)
        o[i] = in[0][i] < 0 ? (int64_t)(0 - (uint64_t)in[0][i]) : in[0][i];
}

static const ek_map abs_map = {abs_f32, abs_f64, abs_i64};

ember_status ek_op_abs_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return ek_unary_op(ctx, args, nargs, &abs_map, NULL, false);
}
