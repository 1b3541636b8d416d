/*
 * aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)
 * aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)
 * aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1,
 *                 Scalar alpha=1, Tensor(a!) out)
 * aten::linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out)
 *
 * Fast path: float32, contiguous, through matmul.h (mat2 read as rows of
 * n, a Linear weight as rows of k); addmm with alpha 1, beta 1 and a bias
 * row ((N) or (1, N)), or beta 0. Everything else is the portable kernel's.
 */
#include "kernels/portable/ops.h"
#include "matmul.h"
#include "op_util.h"
#include "ops.h"

/* out must not share memory with any operand (it is written while they are read). */
static bool apart(const ember_tensor *out, const ember_tensor *a, const ember_tensor *b,
                  const ember_tensor *c) {
    return !eko_overlap(out, a) && !eko_overlap(out, b) && (c == NULL || !eko_overlap(out, c));
}

/* mm (batched false) and bmm: out (B, n, m) = a (B, n, k) @ b (B, k, m). */
static bool mm_fast(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, bool batched) {
    const uint32_t rank = batched ? 3 : 2;
    if (nargs != 4) return false;
    const ember_tensor *a = eko_f32_in(args, 0), *b = eko_f32_in(args, 1);
    ember_tensor *out = eko_f32_out(args, 2);
    if (a == NULL || b == NULL || out == NULL || a->dim != rank || b->dim != rank) return false;
    const size_t bt = batched ? (size_t)a->sizes[0] : 1;
    const size_t n = (size_t)a->sizes[rank - 2], k = (size_t)a->sizes[rank - 1];
    const size_t m = (size_t)b->sizes[rank - 1];
    if ((size_t)b->sizes[rank - 2] != k || (batched && (size_t)b->sizes[0] != bt)) return false;
    if (!apart(out, a, b, NULL)) return false;
    const int64_t shape[3] = {(int64_t)bt, (int64_t)n, (int64_t)m};
    if (!eko_f32_resize(out, batched ? shape : shape + 1, rank)) return false;
    const eko_f32_mm p = {bt, n, m, k, (const float *)a->data, k, n * k, (const float *)b->data,
                          1, m, k * m, NULL, (float *)out->data, m, n * m};
    eko_f32_matmul(ctx, &p);
    return true;
}

static bool addmm_fast(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    if (nargs != 7 || !eko_arg_is_one(args, 4)) return false; /* alpha */
    const bool beta0 = (args[3]->tag == EMBER_TAG_INT && args[3]->u.i == 0) ||
                       (args[3]->tag == EMBER_TAG_DOUBLE && args[3]->u.d == 0.0);
    if (!beta0 && !eko_arg_is_one(args, 3)) return false;
    const ember_tensor *bias = eko_f32_in(args, 0), *a = eko_f32_in(args, 1),
                       *b = eko_f32_in(args, 2);
    ember_tensor *out = eko_f32_out(args, 5);
    if (bias == NULL || a == NULL || b == NULL || out == NULL || a->dim != 2 || b->dim != 2)
        return false;
    const size_t n = (size_t)a->sizes[0], k = (size_t)a->sizes[1], m = (size_t)b->sizes[1];
    if ((size_t)b->sizes[0] != k) return false;
    /* a bias row: (m) or (1, m) (other broadcasts are the portable kernel's) */
    const bool row = (bias->dim == 1 && (size_t)bias->sizes[0] == m) ||
                     (bias->dim == 2 && bias->sizes[0] == 1 && (size_t)bias->sizes[1] == m);
    if (!row || !apart(out, a, b, bias)) return false;
    const int64_t shape[2] = {(int64_t)n, (int64_t)m};
    if (!eko_f32_resize(out, shape, 2)) return false;
    /* beta 0 ignores self, NaN included, as PyTorch does */
    const eko_f32_mm p = {1, n, m, k, (const float *)a->data, k, 0, (const float *)b->data, 1, m,
                          0, beta0 ? NULL : (const float *)bias->data, (float *)out->data, m, 0};
    eko_f32_matmul(ctx, &p);
    return true;
}

static bool linear_fast(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    if (nargs != 5) return false;
    const ember_tensor *x = eko_f32_in(args, 0), *w = eko_f32_in(args, 1), *bias = NULL;
    ember_tensor *out = eko_f32_out(args, 3);
    if (x == NULL || w == NULL || out == NULL || x->dim < 1 || w->dim != 2) return false;
    if (args[2]->tag != EMBER_TAG_NONE) {
        bias = eko_f32_in(args, 2);
        if (bias == NULL || bias->dim != 1 || bias->sizes[0] != w->sizes[0]) return false;
    }
    const size_t k = (size_t)x->sizes[x->dim - 1], n = (size_t)w->sizes[0];
    if ((size_t)w->sizes[1] != k || !apart(out, x, w, bias)) return false;
    int64_t shape[EMBER_MAX_DIM];
    size_t rows = 1;
    for (uint32_t d = 0; d + 1 < x->dim; d++) {
        shape[d] = x->sizes[d];
        rows *= (size_t)x->sizes[d];
    }
    shape[x->dim - 1] = (int64_t)n;
    if (!eko_f32_resize(out, shape, x->dim)) return false;
    const eko_f32_mm p = {1, rows, n, k, (const float *)x->data, k, 0, (const float *)w->data,
                          k, 1, 0, bias != NULL ? (const float *)bias->data : NULL,
                          (float *)out->data, n, 0};
    eko_f32_matmul(ctx, &p);
    return true;
}

ember_status eko_op_mm_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return mm_fast(ctx, args, nargs, false) ? EMBER_OK : ek_op_mm_out(ctx, args, nargs);
}

ember_status eko_op_bmm_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return mm_fast(ctx, args, nargs, true) ? EMBER_OK : ek_op_bmm_out(ctx, args, nargs);
}

ember_status eko_op_addmm_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return addmm_fast(ctx, args, nargs) ? EMBER_OK : ek_op_addmm_out(ctx, args, nargs);
}

ember_status eko_op_linear_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return linear_fast(ctx, args, nargs) ? EMBER_OK : ek_op_linear_out(ctx, args, nargs);
}
