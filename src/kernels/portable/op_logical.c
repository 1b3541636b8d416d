/*
 * aten::logical_and.out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::logical_or.out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::logical_xor.out(Tensor self, Tensor other, *, Tensor(a!) out)
 *
 * Truth of each element is (x != 0); the result is 1/0 in out's dtype.
 */
#include "kernel_util.h"
#include "ops.h"

#define LOGICAL_MAP(NAME, OP)                                                                      \
    static void NAME##_f32(float *o, const float *const *in, size_t n, void *arg) {                \
        (void)arg;                                                                                 \
        for (size_t i = 0; i < n; i++) o[i] = ((in[0][i] != 0) OP(in[1][i] != 0)) ? 1.0f : 0.0f;   \
    }                                                                                              \
    static void NAME##_f64(double *o, const double *const *in, size_t n, void *arg) {              \
        (void)arg;                                                                                 \
        for (size_t i = 0; i < n; i++) o[i] = ((in[0][i] != 0) OP(in[1][i] != 0)) ? 1.0 : 0.0;     \
    }                                                                                              \
    static void NAME##_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {            \
        (void)arg;                                                                                 \
        for (size_t i = 0; i < n; i++) o[i] = ((in[0][i] != 0) OP(in[1][i] != 0)) ? 1 : 0;         \
    }                                                                                              \
    static const ek_map NAME##_map = {NAME##_f32, NAME##_f64, NAME##_i64};

LOGICAL_MAP(land, &&)
LOGICAL_MAP(lor, ||)
LOGICAL_MAP(lxor, !=)

static ember_status logical_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                   const ek_map *map) {
    ember_tensor *self, *other, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &other));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    int common = ek_binary_result_type(self, other, NULL);
    return ek_map_binary(ctx, out, self, other, NULL, EMBER_BOOL, ek_ctype_of(common), map, NULL);
}

ember_status ek_op_logical_and_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return logical_common(ctx, args, nargs, &land_map);
}

ember_status ek_op_logical_or_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return logical_common(ctx, args, nargs, &lor_map);
}

ember_status ek_op_logical_xor_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return logical_common(ctx, args, nargs, &lxor_map);
}
