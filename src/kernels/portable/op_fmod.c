/*
 * aten::fmod.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::fmod.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
 *
 * C's remainder of self / other, truncated toward zero: the result has the
 * dividend's sign (remainder.out is the Python-style one). Computed in the
 * promoted type; a bool result type is not supported, as in PyTorch.
 * Integer division by zero fails; floats give NaN.
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

typedef struct fmod_arg {
    bool div_by_zero; /* set by the integer loop */
} fmod_arg;

static void fmod_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = fmodf(in[0][i], in[1][i]);
}

static void fmod_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = fmod(in[0][i], in[1][i]);
}

static void fmod_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    fmod_arg *f = (fmod_arg *)arg;
    for (size_t i = 0; i < n; i++) {
        int64_t a = in[0][i], b = in[1][i];
        if (b == 0) {
            f->div_by_zero = true;
            o[i] = 0;
        } else {
            o[i] = b == -1 ? 0 : a % b; /* INT64_MIN % -1 is undefined in C */
        }
    }
}

static const ek_map fmod_map = {fmod_f32, fmod_f64, fmod_i64};

static ember_status fmod_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                bool scalar) {
    ember_tensor *self, *other = NULL, *out;
    ek_scalar s = ek_scalar_from_int(0);
    fmod_arg f = {false};
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (scalar)
        EK_TRY(ek_arg_scalar(ctx, args, 1, &s));
    else
        EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    if (other != NULL) EK_TRY(ek_check_supported(ctx, other->dtype, "other"));
    int result = ek_binary_result_type(self, other, &s);
    if (result == EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "fmod is not defined for a bool result type");
    s = ek_scalar_wrap(&s, result);
    EK_TRY(ek_map_binary(ctx, out, self, other, &s, result, ek_ctype_of(result), &fmod_map, &f));
    if (f.div_by_zero)
        return ember_kernel_fail(ctx, EMBER_ERR_KERNEL_FAILED, "integer division by zero");
    return EMBER_OK;
}

ember_status ek_op_fmod_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return fmod_common(ctx, args, nargs, false);
}

ember_status ek_op_fmod_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return fmod_common(ctx, args, nargs, true);
}
