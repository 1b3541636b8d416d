/*
 * aten::logical_not.out(Tensor self, *, Tensor(a!) out)
 *
 * out = (self == 0), written as 1/0 in out's dtype (any dtype).
 */
#include "kernel_util.h"
#include "ops.h"

static void not_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] == 0.0f ? 1.0f : 0.0f;
}

static void not_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] == 0.0 ? 1.0 : 0.0;
}

static void not_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] == 0 ? 1 : 0;
}

static const ek_map not_map = {not_f32, not_f64, not_i64};

ember_status ek_op_logical_not_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    const ember_tensor *ins[1] = {self};
    return ek_map_tensors(ctx, out, ins, 1, ek_ctype_of(self->dtype), &not_map, NULL);
}
