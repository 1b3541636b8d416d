/*
 * aten::where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out)
 *
 * Fast path: a bool (or uint8) condition, float32 self, other and out, all
 * contiguous, any numpy broadcast of the three: eltwise.h's rows on the
 * thread pool. Everything else is the portable kernel's.
 */
#include "eltwise.h"
#include "kernels/portable/kernel_util.h"
#include "kernels/portable/ops.h"
#include "op_util.h"
#include "ops.h"

static bool where_fast(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    if (nargs != 5 || args[0]->tag != EMBER_TAG_TENSOR) return false;
    const ember_tensor *c = args[0]->u.t;
    if (c == NULL || c->dim > EMBER_MAX_DIM ||
        (c->dtype != EMBER_BOOL && c->dtype != EMBER_UINT8) || (c->numel > 0 && c->data == NULL) ||
        !ember_tensor_is_contiguous(c))
        return false;
    const ember_tensor *a = eko_f32_in(args, 1), *b = eko_f32_in(args, 2);
    ember_tensor *out = eko_f32_out(args, 3);
    if (a == NULL || b == NULL || out == NULL) return false;
    const ember_tensor *ins[3] = {c, a, b};
    int64_t shape[EMBER_MAX_DIM];
    size_t rank;
    if (ek_broadcast_shape(ctx, ins, 3, shape, &rank) != EMBER_OK) return false;
    /* out may share memory with self or other only element for element */
    if (eko_overlap(out, c)) return false;
    for (size_t i = 1; i < 3; i++) {
        if (!eko_overlap(out, ins[i])) continue;
        bool same = out->data == ins[i]->data && ins[i]->dim == rank;
        for (size_t d = 0; same && d < rank; d++) same = ins[i]->sizes[d] == shape[d];
        if (!same) return false;
    }
    if (!eko_f32_resize(out, shape, rank)) return false;

    size_t sizes[EKO_ND_MAX_DIM], st[EKO_ND_MAX_OPS][EKO_ND_MAX_DIM], s[EMBER_MAX_DIM];
    for (size_t d = 0; d < rank; d++) sizes[d] = (size_t)shape[d];
    if (!eko_nd_broadcast(rank, sizes, rank, sizes, st[0])) return false;
    for (size_t i = 0; i < 3; i++) {
        eko_sizes(ins[i], s);
        if (!eko_nd_broadcast(rank, sizes, ins[i]->dim, s, st[i + 1])) return false;
    }
    eko_nd nd;
    eko_nd_init(&nd, rank, sizes, 4, (const size_t(*)[EKO_ND_MAX_DIM])st);
    if (eko_nd_numel(&nd) == 0) return true;
    eko_f32_where_nd(ember_kernel_threadpool(ctx), &nd, (float *)out->data,
                     (const uint8_t *)c->data, (const float *)a->data, (const float *)b->data);
    return true;
}

ember_status eko_op_where_self_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return where_fast(ctx, args, nargs) ? EMBER_OK : ek_op_where_self_out(ctx, args, nargs);
}
