/*
 * aten::neg.out(Tensor self, *, Tensor(a!) out)
 *
 * out = -self (not defined for bool).
 */
#include "kernel_util.h"
#include "ops.h"

static void neg_f32(float *o, const float *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = -in[0][i];
}

static void neg_f64(double *o, const double *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = -in[0][i];
}

static void neg_i64(int64_t *o, const int64_t *const *in, size_t n, void *arg) {
    (void)arg;
    for (size_t i = 0; i < n; i++) o[i] = (int64_t)(0 - (uint64_t)in[0][i]);
}

static const ek_map neg_map = {neg_f32, neg_f64, neg_i64};

ember_status ek_op_neg_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    if (args[0]->tag == EMBER_TAG_TENSOR && args[0]->u.t != NULL &&
        args[0]->u.t->dtype == EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "negation of a bool tensor");
    return ek_unary_op(ctx, args, nargs, &neg_map, NULL, false);
}
