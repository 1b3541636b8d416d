/*
 * aten::clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *,
 *     Tensor(a!) out)
 *
 * out = min(max(self, min), max) elementwise, self and the given bounds
 * broadcast together and computed in their promoted type. A NaN in self or
 * in a bound gives NaN; min > max gives max. At least one bound is needed;
 * with both, a bool result type is not supported (as in PyTorch).
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

/* Which bounds are present; they follow self in the input list, min first. */
typedef struct clamp_tensor_arg {
    bool has_lo, has_hi;
} clamp_tensor_arg;

static void clamp_t_f32(float *o, const float *const *in, size_t n, void *arg) {
    const clamp_tensor_arg *c = (const clamp_tensor_arg *)arg;
    const float *lo = c->has_lo ? in[1] : NULL;
    const float *hi = c->has_hi ? in[c->has_lo ? 2 : 1] : NULL;
    for (size_t i = 0; i < n; i++) {
        float x = in[0][i];
        if (lo != NULL) x = (x != x || lo[i] != lo[i]) ? NAN : (x < lo[i] ? lo[i] : x);
        if (hi != NULL) x = (x != x || hi[i] != hi[i]) ? NAN : (x > hi[i] ? hi[i] : x);
        o[i] = x;
    }
}

static void clamp_t_f64(double *o, const double *const *in, size_t n, void *arg) {
    const clamp_tensor_arg *c = (const clamp_tensor_arg *)arg;
    const double *lo = c->has_lo ? in[1] : NULL;
    const double *hi = c->has_hi ? in[c->has_lo ? 2 : 1] : NULL;
    for (size_t i = 0; i < n; i++) {
        double x = in[0][i];
        if (lo != NULL) x = (x != x || lo[i] != lo[i]) ? (double)NAN : (x < lo[i] ? lo[i] : x);
        if (hi != NULL) x = (x != x || hi[i] != hi[i]) ? (double)NAN : (x > hi[i] ? hi[i] : x);
        o[i] = x;
    }
}

static void clamp_t_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    const clamp_tensor_arg *c = (const clamp_tensor_arg *)arg;
    const int64_t *lo = c->has_lo ? in[1] : NULL;
    const int64_t *hi = c->has_hi ? in[c->has_lo ? 2 : 1] : NULL;
    for (size_t i = 0; i < n; i++) {
        int64_t x = in[0][i];
        if (lo != NULL && x < lo[i]) x = lo[i];
        if (hi != NULL && x > hi[i]) x = hi[i];
        o[i] = x;
    }
}

static const ek_map clamp_t_map = {clamp_t_f32, clamp_t_f64, clamp_t_i64};

ember_status ek_op_clamp_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *lo, *hi, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 1, &lo));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 2, &hi));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    if (lo == NULL && hi == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "at least one of min and max must be given");
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    if (lo != NULL) EK_TRY(ek_check_supported(ctx, lo->dtype, "min"));
    if (hi != NULL) EK_TRY(ek_check_supported(ctx, hi->dtype, "max"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    ek_result_type rt;
    ek_result_type_init(&rt);
    ek_result_type_tensor(&rt, self);
    if (lo != NULL) ek_result_type_tensor(&rt, lo);
    if (hi != NULL) ek_result_type_tensor(&rt, hi);
    int result = ek_result_type_get(&rt);
    if (result == EMBER_BOOL && lo != NULL && hi != NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "clamp with both bounds is not defined for bool");
    if (!ek_can_cast(result, out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "result type %s can't be cast to out dtype %s",
                                 ember_dtype_name(result), ember_dtype_name(out->dtype));
    clamp_tensor_arg c = {lo != NULL, hi != NULL};
    const ember_tensor *ins[3] = {self, NULL, NULL};
    size_t nin = 1;
    if (lo != NULL) ins[nin++] = lo;
    if (hi != NULL) ins[nin++] = hi;
    return ek_map_tensors(ctx, out, ins, nin, ek_ctype_of(result), &clamp_t_map, &c);
}
