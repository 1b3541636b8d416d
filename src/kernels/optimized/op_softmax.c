/*
 * aten::_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
 * aten::_log_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)
 *
 * Fast path: float32, contiguous, over the last dim (the rows of rows.h on
 * the thread pool). Other dims, dtypes and layouts are the portable kernel's.
 */
#include "kernels/portable/ops.h"
#include "op_util.h"
#include "ops.h"
#include "rows.h"

static bool softmax_fast(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, bool log_out) {
    if (nargs != 5 || args[1]->tag != EMBER_TAG_INT || args[2]->tag != EMBER_TAG_BOOL ||
        args[2]->u.b)
        return false;
    const ember_tensor *x = eko_f32_in(args, 0);
    ember_tensor *out = eko_f32_out(args, 3);
    if (x == NULL || out == NULL || x->dim == 0) return false;
    const int64_t dim = args[1]->u.i;
    if (dim != -1 && dim != (int64_t)x->dim - 1) return false; /* not the last dim */
    /* in place (the same memory and shape) or apart */
    if (eko_overlap(out, x) && (out->data != x->data || out->numel != x->numel)) return false;
    int64_t shape[EMBER_MAX_DIM];
    for (uint32_t d = 0; d < x->dim; d++) shape[d] = x->sizes[d];
    if (!eko_f32_resize(out, shape, x->dim)) return false;
    const size_t len = (size_t)x->sizes[x->dim - 1];
    if (x->numel == 0) return true;
    eko_f32_softmax_rows(ember_kernel_threadpool(ctx), eko_f32_rows_active(),
                         (size_t)x->numel / len, len, (const float *)x->data, (float *)out->data,
                         log_out);
    return true;
}

ember_status eko_op_softmax_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return softmax_fast(ctx, args, nargs, false) ? EMBER_OK : ek_op_softmax_out(ctx, args, nargs);
}

ember_status eko_op_log_softmax_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return softmax_fast(ctx, args, nargs, true) ? EMBER_OK
                                                : ek_op_log_softmax_out(ctx, args, nargs);
}
