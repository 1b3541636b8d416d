/*
 * aten::gelu.out(Tensor self, *, str approximate="none", Tensor(a!) out)
 *
 * Fast path: float32, contiguous: vmath.h's GELU (erf or tanh form) over
 * the thread pool. Everything else is the portable kernel's.
 */
#include "eltwise.h"
#include "kernels/portable/kernel_util.h"
#include "kernels/portable/ops.h"
#include "op_util.h"
#include "ops.h"

static bool gelu_fast(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    if (nargs != 4 || args[1]->tag != EMBER_TAG_STRING) return false;
    const char *approx = args[1]->u.str.data;
    const size_t len = args[1]->u.str.len;
    bool tanh_form;
    if (ek_str_eq(approx, len, "none"))
        tanh_form = false;
    else if (ek_str_eq(approx, len, "tanh"))
        tanh_form = true;
    else
        return false;
    const ember_tensor *x = eko_f32_in(args, 0);
    ember_tensor *out = eko_f32_out(args, 2);
    if (x == NULL || out == NULL) return false;
    if (eko_overlap(out, x) && (out->data != x->data || out->numel != x->numel)) return false;
    int64_t shape[EMBER_MAX_DIM];
    for (uint32_t d = 0; d < x->dim; d++) shape[d] = x->sizes[d];
    if (!eko_f32_resize(out, shape, x->dim)) return false;
    const eko_vmath *vm = eko_vmath_active();
    eko_f32_unary(ember_kernel_threadpool(ctx), tanh_form ? vm->gelu_tanh : vm->gelu,
                  (size_t)x->numel, (const float *)x->data, (float *)out->data);
    return true;
}

ember_status eko_op_gelu_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return gelu_fast(ctx, args, nargs) ? EMBER_OK : ek_op_gelu_out(ctx, args, nargs);
}
