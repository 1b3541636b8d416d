/*
 * aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
 * aten::sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
 * aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out)
 * aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out)
 *
 * Fast path: self, other and out float32 and contiguous, alpha 1, any
 * numpy broadcast; the rows go to eltwise.h on the thread pool. Everything
 * else is the portable kernel's.
 */
#include "eltwise.h"
#include "kernels/portable/kernel_util.h"
#include "kernels/portable/ops.h"
#include "op_util.h"
#include "ops.h"

/* The fast path; false (nothing written) when the arguments are not its. */
static bool binary_fast(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, size_t want,
                        eko_binop op) {
    if (nargs != want) return false;
    const ember_tensor *a = eko_f32_in(args, 0), *b = eko_f32_in(args, 1);
    ember_tensor *out = eko_f32_out(args, want - 2);
    if (a == NULL || b == NULL || out == NULL) return false;
    if (want == 5 && !eko_arg_is_one(args, 2)) return false; /* alpha */

    int64_t shape[EMBER_MAX_DIM];
    size_t rank;
    const ember_tensor *ins[2] = {a, b};
    if (ek_broadcast_shape(ctx, ins, 2, shape, &rank) != EMBER_OK) return false;
    /* out may share memory with an input only element for element: the
     * same start and the input already of the result's shape (in place) */
    for (size_t i = 0; i < 2; i++) {
        if (!eko_overlap(out, ins[i])) continue;
        bool same = out->data == ins[i]->data && ins[i]->dim == rank;
        for (size_t d = 0; same && d < rank; d++) same = ins[i]->sizes[d] == shape[d];
        if (!same) return false;
    }
    if (!eko_f32_resize(out, shape, rank)) return false;

    size_t sizes[EKO_ND_MAX_DIM], st[EKO_ND_MAX_OPS][EKO_ND_MAX_DIM], as[EMBER_MAX_DIM],
        bs[EMBER_MAX_DIM];
    for (size_t d = 0; d < rank; d++) sizes[d] = (size_t)shape[d];
    eko_sizes(a, as);
    eko_sizes(b, bs);
    if (!eko_nd_broadcast(rank, sizes, rank, sizes, st[0]) ||
        !eko_nd_broadcast(rank, sizes, a->dim, as, st[1]) ||
        !eko_nd_broadcast(rank, sizes, b->dim, bs, st[2]))
        return false;
    eko_nd nd;
    eko_nd_init(&nd, rank, sizes, 3, (const size_t(*)[EKO_ND_MAX_DIM])st);
    if (eko_nd_numel(&nd) == 0) return true;
    eko_f32_binary_nd(ember_kernel_threadpool(ctx), eko_f32_rows_active(), op, &nd,
                      (float *)out->data, (const float *)a->data, (const float *)b->data);
    return true;
}

ember_status eko_op_add_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return binary_fast(ctx, args, nargs, 5, EKO_BIN_ADD) ? EMBER_OK
                                                         : ek_op_add_out(ctx, args, nargs);
}

ember_status eko_op_sub_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return binary_fast(ctx, args, nargs, 5, EKO_BIN_SUB) ? EMBER_OK
                                                         : ek_op_sub_out(ctx, args, nargs);
}

ember_status eko_op_mul_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return binary_fast(ctx, args, nargs, 4, EKO_BIN_MUL) ? EMBER_OK
                                                         : ek_op_mul_out(ctx, args, nargs);
}

ember_status eko_op_div_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return binary_fast(ctx, args, nargs, 4, EKO_BIN_DIV) ? EMBER_OK
                                                         : ek_op_div_out(ctx, args, nargs);
}
