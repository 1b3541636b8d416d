/*
 * aten::masked_fill.Scalar_out(Tensor self, Tensor mask, Scalar value, *, Tensor(a!) out)
 *
 * out = mask ? value : self, with mask broadcast to self.
 */
#include "kernel_util.h"
#include "ops.h"

static void fill_f32(float *o, const float *const *in, size_t n, void *arg) {
    const float v = (float)((const ek_scalar *)arg)->d;
    for (size_t i = 0; i < n; i++) o[i] = in[1][i] != 0 ? v : in[0][i];
}

static void fill_f64(double *o, const double *const *in, size_t n, void *arg) {
    const double v = ((const ek_scalar *)arg)->d;
    for (size_t i = 0; i < n; i++) o[i] = in[1][i] != 0 ? v : in[0][i];
}

static void fill_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    const int64_t v = ((const ek_scalar *)arg)->i;
    for (size_t i = 0; i < n; i++) o[i] = in[1][i] != 0 ? v : in[0][i];
}

static const ek_map fill_map = {fill_f32, fill_f64, fill_i64};

ember_status ek_op_masked_fill_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *mask, *out;
    ek_scalar value;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &mask));
    EK_TRY(ek_arg_scalar(ctx, args, 2, &value));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    if (mask->dtype != EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "mask must be bool, got %s",
                                 ember_dtype_name(mask->dtype));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    /* the result has self's shape: mask broadcasts to it, not the reverse */
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(self, shape);
    const ember_tensor *ins[2] = {self, mask};
    return ek_map_tensors_to(ctx, out, shape, self->dim, ins, 2, ek_ctype_of(self->dtype),
                             &fill_map, &value);
}
