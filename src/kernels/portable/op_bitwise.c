/*
 * aten::bitwise_and.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::bitwise_or.Tensor_out / aten::bitwise_xor.Tensor_out (same)
 * aten::bitwise_and.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
 * aten::bitwise_or.Scalar_out / aten::bitwise_xor.Scalar_out (same)
 * aten::bitwise_not.out(Tensor self, *, Tensor(a!) out)
 *
 * Integer and bool tensors only (bool: logical and/or/xor/not).
 */
#include "kernel_util.h"
#include "ops.h"

#define BITWISE_MAP(NAME, OP)                                                                      \
    static void NAME##_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {            \
        (void)arg;                                                                                 \
        for (size_t i = 0; i < n; i++) o[i] = in[0][i] OP in[1][i];                                \
    }                                                                                              \
    static const ek_map NAME##_map = {NULL, NULL, NAME##_i64};

BITWISE_MAP(band, &)
BITWISE_MAP(bor, |)
BITWISE_MAP(bxor, ^)

static ember_status bitwise(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, bool scalar,
                            const ek_map *map) {
    ember_tensor *self, *other = NULL, *out;
    ek_scalar s = ek_scalar_from_int(0);
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (scalar)
        EK_TRY(ek_arg_scalar(ctx, args, 1, &s));
    else
        EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    int result = ek_binary_result_type(self, other, &s);
    if (ek_is_float(result))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "bitwise ops need integer or bool inputs");
    return ek_map_binary(ctx, out, self, other, &s, result, EK_CT_I64, map, NULL);
}

ember_status ek_op_bitwise_and_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return bitwise(ctx, args, nargs, false, &band_map);
}

ember_status ek_op_bitwise_or_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return bitwise(ctx, args, nargs, false, &bor_map);
}

ember_status ek_op_bitwise_xor_tensor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return bitwise(ctx, args, nargs, false, &bxor_map);
}

ember_status ek_op_bitwise_and_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return bitwise(ctx, args, nargs, true, &band_map);
}

ember_status ek_op_bitwise_or_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return bitwise(ctx, args, nargs, true, &bor_map);
}

ember_status ek_op_bitwise_xor_scalar_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return bitwise(ctx, args, nargs, true, &bxor_map);
}

/* not: ~x for integers; for bool the 0/1 value flips */
static void bnot_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    bool is_bool = *(const bool *)arg;
    for (size_t i = 0; i < n; i++) o[i] = is_bool ? !in[0][i] : ~in[0][i];
}

static const ek_map bnot_map = {NULL, NULL, bnot_i64};

ember_status ek_op_bitwise_not_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    if (ek_is_float(self->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "bitwise_not needs an integer or bool input");
    bool is_bool = self->dtype == EMBER_BOOL;
    return ek_unary_op(ctx, args, nargs, &bnot_map, &is_bool, false);
}
