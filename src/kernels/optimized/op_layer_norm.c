/*
 * aten::native_layer_norm.out(Tensor input, SymInt[] normalized_shape, Tensor? weight,
 *     Tensor? bias, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
 *
 * Fast path: float32, contiguous, rows of at least one element; each row
 * normalized by rows.h on the thread pool, its mean and 1 / std written to
 * out1 and out2. Everything else is the portable kernel's.
 */
#include "kernels/portable/kernel_util.h"
#include "kernels/portable/ops.h"
#include "op_util.h"
#include "ops.h"
#include "rows.h"

/* weight or bias: None, or float32 contiguous with cols elements. */
static bool affine_ok(ember_value **args, size_t i, size_t cols, const ember_tensor **out) {
    *out = NULL;
    if (args[i]->tag == EMBER_TAG_NONE) return true;
    *out = eko_f32_in(args, i);
    return *out != NULL && (size_t)(*out)->numel == cols;
}

static bool layer_norm_fast(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    const int64_t *norm;
    size_t nnorm;
    double eps;
    if (nargs != 9 || ek_arg_int_list(ctx, args, 1, &norm, &nnorm) != EMBER_OK ||
        ek_arg_double(ctx, args, 4, &eps) != EMBER_OK)
        return false;
    const ember_tensor *x = eko_f32_in(args, 0), *w, *b;
    ember_tensor *outs[3] = {eko_f32_out(args, 5), eko_f32_out(args, 6), eko_f32_out(args, 7)};
    if (x == NULL || outs[0] == NULL || outs[1] == NULL || outs[2] == NULL) return false;
    if (nnorm == 0 || nnorm > x->dim) return false;
    const size_t axis = x->dim - nnorm;
    size_t rows = 1, cols = 1;
    int64_t shape[EMBER_MAX_DIM], stat[EMBER_MAX_DIM];
    for (size_t d = 0; d < x->dim; d++) {
        shape[d] = x->sizes[d];
        if (d < axis) {
            rows *= (size_t)x->sizes[d];
            stat[d] = x->sizes[d];
        } else {
            if (norm[d - axis] != x->sizes[d]) return false;
            cols *= (size_t)x->sizes[d];
            stat[d] = 1;
        }
    }
    if (cols == 0 || !affine_ok(args, 2, cols, &w) || !affine_ok(args, 3, cols, &b)) return false;
    /* out0 may be the input itself (in place); nothing else may share memory */
    const ember_tensor *ins[3] = {x, w, b};
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < 3; k++)
            if (ins[k] != NULL && eko_overlap(outs[i], ins[k]) &&
                !(i == 0 && k == 0 && outs[0]->data == x->data && outs[0]->numel == x->numel))
                return false;
    if (eko_overlap(outs[0], outs[1]) || eko_overlap(outs[0], outs[2]) ||
        eko_overlap(outs[1], outs[2]))
        return false;
    if (!eko_f32_resize(outs[0], shape, x->dim) || !eko_f32_resize(outs[1], stat, x->dim) ||
        !eko_f32_resize(outs[2], stat, x->dim))
        return false;
    eko_f32_layer_norm_rows(ember_kernel_threadpool(ctx), eko_f32_rows_active(), rows, cols,
                            (const float *)x->data, w != NULL ? (const float *)w->data : NULL,
                            b != NULL ? (const float *)b->data : NULL, (float)eps,
                            (float *)outs[0]->data, (float *)outs[1]->data,
                            (float *)outs[2]->data);
    return true;
}

ember_status eko_op_native_layer_norm_out(ember_kernel_ctx *ctx, ember_value **args,
                                          size_t nargs) {
    return layer_norm_fast(ctx, args, nargs) ? EMBER_OK
                                             : ek_op_native_layer_norm_out(ctx, args, nargs);
}
