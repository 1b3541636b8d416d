/*
 * aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out)
 * aten::hardtanh.out(Tensor self, Scalar min_val=-1, Scalar max_val=1, *, Tensor(a!) out)
 *
 * out = min(max(self, min), max); NaN stays NaN. clamp promotes with its
 * bounds (an int tensor clamped to 0.5 gives floats); hardtanh keeps self's
 * dtype. Integer bounds wrap to a narrow integer result dtype, as in PyTorch
 * (uint8 clamped to [-1, 1] is clamped to [255, 1], so every element is 1).
 */
#include "kernel_util.h"
#include "ops.h"

typedef struct clamp_arg {
    bool has_lo, has_hi;
    ek_scalar lo, hi;
} clamp_arg;

static void clamp_f32(float *o, const float *const *in, size_t n, void *arg) {
    const clamp_arg *c = (const clamp_arg *)arg;
    const float lo = (float)c->lo.d, hi = (float)c->hi.d;
    for (size_t i = 0; i < n; i++) {
        float x = in[0][i];
        if (x == x) {
            if (c->has_lo && x < lo) x = lo;
            if (c->has_hi && x > hi) x = hi;
        }
        o[i] = x;
    }
}

static void clamp_f64(double *o, const double *const *in, size_t n, void *arg) {
    const clamp_arg *c = (const clamp_arg *)arg;
    for (size_t i = 0; i < n; i++) {
        double x = in[0][i];
        if (x == x) {
            if (c->has_lo && x < c->lo.d) x = c->lo.d;
            if (c->has_hi && x > c->hi.d) x = c->hi.d;
        }
        o[i] = x;
    }
}

static void clamp_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    const clamp_arg *c = (const clamp_arg *)arg;
    for (size_t i = 0; i < n; i++) {
        int64_t x = in[0][i];
        if (c->has_lo && x < c->lo.i) x = c->lo.i;
        if (c->has_hi && x > c->hi.i) x = c->hi.i;
        o[i] = x;
    }
}

static const ek_map clamp_map = {clamp_f32, clamp_f64, clamp_i64};

static ember_status clamp_run(ember_kernel_ctx *ctx, ember_tensor *self, ember_tensor *out,
                              clamp_arg *c, int result) {
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    if (!ek_can_cast(result, out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "result type %s can't be cast to out dtype %s",
                                 ember_dtype_name(result), ember_dtype_name(out->dtype));
    c->lo = ek_scalar_wrap(&c->lo, result);
    c->hi = ek_scalar_wrap(&c->hi, result);
    const ember_tensor *ins[1] = {self};
    return ek_map_tensors(ctx, out, ins, 1, ek_ctype_of(result), &clamp_map, c);
}

ember_status ek_op_clamp_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    clamp_arg c;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_opt_scalar(ctx, args, 1, &c.lo, &c.has_lo));
    EK_TRY(ek_arg_opt_scalar(ctx, args, 2, &c.hi, &c.has_hi));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    if (!c.has_lo && !c.has_hi)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "at least one of min and max must be given");
    ek_result_type rt;
    ek_result_type_init(&rt);
    ek_result_type_tensor(&rt, self);
    if (c.has_lo) ek_result_type_scalar(&rt, &c.lo);
    if (c.has_hi) ek_result_type_scalar(&rt, &c.hi);
    return clamp_run(ctx, self, out, &c, ek_result_type_get(&rt));
}

ember_status ek_op_hardtanh_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    clamp_arg c;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_scalar(ctx, args, 1, &c.lo));
    EK_TRY(ek_arg_scalar(ctx, args, 2, &c.hi));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    c.has_lo = c.has_hi = true;
    return clamp_run(ctx, self, out, &c, self->dtype);
}
