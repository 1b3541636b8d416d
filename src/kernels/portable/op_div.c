/*
 * aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out)
 * aten::div.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
 * aten::div.Scalar_mode_out(Tensor self, Scalar other, *, str? rounding_mode, Tensor(a!) out)
 *
 * True division computes in float even for integer inputs. With rounding
 * mode "trunc" or "floor" the result keeps the promoted type; integer
 * division by zero fails (PyTorch raises ZeroDivisionError).
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

enum { DIV_TRUE, DIV_TRUNC, DIV_FLOOR };

typedef struct div_arg {
    int mode;
    bool div_by_zero; /* set by the integer loop */
} div_arg;

/* c10's div_floor_floating: floor(a / b) computed from fmod so that
 * a == b * floor_div + remainder holds despite rounding. */
#define DIV_FLOOR_FLOAT(T, FMOD, FLOOR, COPYSIGN)                                                  \
    static T div_floor_##T(T a, T b) {                                                             \
        if (b == 0) return a / b;                                                                  \
        T mod = FMOD(a, b);                                                                        \
        T div = (a - mod) / b;                                                                     \
        if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;                                            \
        if (div == 0) return COPYSIGN((T)0, a / b);                                                \
        T floordiv = FLOOR(div);                                                                   \
        if (div - floordiv > (T)0.5) floordiv += 1;                                                \
        return floordiv;                                                                           \
    }
DIV_FLOOR_FLOAT(float, fmodf, floorf, copysignf)
DIV_FLOOR_FLOAT(double, fmod, floor, copysign)

static void div_f32(float *o, const float *const *in, size_t n, void *arg) {
    const float *a = in[0], *b = in[1];
    switch (((div_arg *)arg)->mode) {
    case DIV_TRUE:
        for (size_t i = 0; i < n; i++) o[i] = a[i] / b[i];
        break;
    case DIV_TRUNC:
        for (size_t i = 0; i < n; i++) o[i] = truncf(a[i] / b[i]);
        break;
    default:
        for (size_t i = 0; i < n; i++) o[i] = div_floor_float(a[i], b[i]);
        break;
    }
}

static void div_f64(double *o, const double *const *in, size_t n, void *arg) {
    const double *a = in[0], *b = in[1];
    switch (((div_arg *)arg)->mode) {
    case DIV_TRUE:
        for (size_t i = 0; i < n; i++) o[i] = a[i] / b[i];
        break;
    case DIV_TRUNC:
        for (size_t i = 0; i < n; i++) o[i] = trunc(a[i] / b[i]);
        break;
    default:
        for (size_t i = 0; i < n; i++) o[i] = div_floor_double(a[i], b[i]);
        break;
    }
}

/* Integer trunc / floor division (true division never computes in int64). */
static void div_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    div_arg *d = (div_arg *)arg;
    const int64_t *a = in[0], *b = in[1];
    for (size_t i = 0; i < n; i++) {
        if (b[i] == 0) {
            d->div_by_zero = true;
            o[i] = 0;
        } else if (b[i] == -1) {
            o[i] = (int64_t)(0 - (uint64_t)a[i]); /* INT64_MIN / -1 wraps */
        } else {
            int64_t q = a[i] / b[i];
            if (d->mode == DIV_FLOOR && (a[i] % b[i] != 0) && ((a[i] < 0) != (b[i] < 0))) q -= 1;
            o[i] = q;
        }
    }
}

static const ek_map div_map = {div_f32, div_f64, div_i64};

static ember_status div_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, bool scalar,
                               bool has_mode) {
    ember_tensor *self, *other = NULL, *out;
    ek_scalar s = ek_scalar_from_int(0);
    div_arg d = {DIV_TRUE, false};
    size_t out_i = has_mode ? 3 : 2;
    EK_TRY(ek_check_nargs(ctx, nargs, out_i + 2));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (scalar)
        EK_TRY(ek_arg_scalar(ctx, args, 1, &s));
    else
        EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    if (has_mode) {
        const char *mode;
        size_t len;
        EK_TRY(ek_arg_string(ctx, args, 2, &mode, &len, true));
        if (mode == NULL)
            d.mode = DIV_TRUE;
        else if (ek_str_eq(mode, len, "trunc"))
            d.mode = DIV_TRUNC;
        else if (ek_str_eq(mode, len, "floor"))
            d.mode = DIV_FLOOR;
        else
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "rounding_mode must be None, \"trunc\" or \"floor\"");
    }
    EK_TRY(ek_arg_out(ctx, args, out_i, &out));

    int result = ek_binary_result_type(self, other, &s);
    if (d.mode == DIV_TRUE && !ek_is_float(result)) result = EMBER_FLOAT32;
    if (d.mode != DIV_TRUE && result == EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "rounding division of bool tensors");
    s = ek_scalar_wrap(&s, result);
    EK_TRY(ek_map_binary(ctx, out, self, other, &s, result, ek_ctype_of(result), &div_map, &d));
    if (d.div_by_zero)
        return ember_kernel_fail(ctx, EMBER_ERR_KERNEL_FAILED, "integer division by zero");
    return EMBER_OK;
}

ember_status ek_op_div_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return div_common(ctx, args, nargs, false, false);
}

ember_status ek_op_div_out_mode(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return div_common(ctx, args, nargs, false, true);
}

ember_status ek_op_div_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return div_common(ctx, args, nargs, true, false);
}

ember_status ek_op_div_scalar_mode_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return div_common(ctx, args, nargs, true, true);
}
