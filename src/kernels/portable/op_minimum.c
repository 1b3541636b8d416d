/*
 * aten::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out)
 *
 * Elementwise min, broadcast, in the promoted type; NaN propagates.
 */
#include "kernel_util.h"
#include "ops.h"

static void min_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        float a = in[0][i], b = in[1][i];
        o[i] = (a != a || a < b) ? a : b;
    }
}

static void min_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) {
        double a = in[0][i], b = in[1][i];
        o[i] = (a != a || a < b) ? a : b;
    }
}

static void min_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] < in[1][i] ? in[0][i] : in[1][i];
}

static const ek_map min_map = {min_f32, min_f64, min_i64};

ember_status ek_op_minimum_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *other, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    int result = ek_binary_result_type(self, other, NULL);
    return ek_map_binary(ctx, out, self, other, NULL, result, ek_ctype_of(result), &min_map, NULL);
}
