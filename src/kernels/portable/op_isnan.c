/*
 * aten::isnan.out(Tensor self, *, Tensor(a!) out)
 * aten::isinf.out(Tensor self, *, Tensor(a!) out)
 *
 * 1/0 per element in out's dtype (bool); integers are never NaN or inf.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

static void isnan_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] != in[0][i] ? 1.0f : 0.0f;
}
static void isnan_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = in[0][i] != in[0][i] ? 1.0 : 0.0;
}
static void isinf_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = isinf(in[0][i]) ? 1.0f : 0.0f;
}
static void isinf_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = isinf(in[0][i]) ? 1.0 : 0.0;
}
static void never_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    (void)in;
    for (size_t i = 0; i < n; i++) o[i] = 0;
}

static const ek_map isnan_map = {isnan_f32, isnan_f64, never_i64};
static const ek_map isinf_map = {isinf_f32, isinf_f64, never_i64};

static ember_status classify(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                             const ek_map *map) {
    ember_tensor *self, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    const ember_tensor *ins[1] = {self};
    return ek_map_tensors(ctx, out, ins, 1, ek_ctype_of(self->dtype), map, NULL);
}

ember_status ek_op_isnan_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return classify(ctx, args, nargs, &isnan_map);
}

ember_status ek_op_isinf_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return classify(ctx, args, nargs, &isinf_map);
}
