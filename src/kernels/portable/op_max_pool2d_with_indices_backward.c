/*
 * aten::max_pool2d_with_indices_backward.grad_input(Tensor grad_output, Tensor self,
 *     int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode,
 *     Tensor indices, *, Tensor(a!) grad_input) -> Tensor(a!)
 *
 * Gradient of max_pool2d_with_indices: grad_input (self's shape) is zero
 * except where a window's max came from; there it accumulates the window's
 * grad. indices (int64, grad_output's shape) hold the position h * W + w of
 * each max within its plane, as the forward writes them; they are data, so
 * each is checked against the plane at execute (DATA_OUT_OF_BOUNDS). Sums
 * are in the storage dtype, in output order, as PyTorch's CPU kernel does.
 * Float dtypes, contiguous. Arguments: 8 inputs, grad_input twice (10).
 */
#include "pool_util.h"
#include "ops.h"

#define DEF_MAX_POOL_BWD(SFX, T, CT, LOAD, STORE)                                                  \
    static int64_t max_bwd_##SFX(T *gin, const T *gout, const int64_t *indices,                    \
                                 const ek_pool2d *p) {                                             \
        const int64_t plane = p->h * p->w, oplane = p->oh * p->ow;                                 \
        for (int64_t i = 0; i < p->planes * plane; i++) gin[i] = STORE((CT)0);                     \
        for (int64_t pl = 0; pl < p->planes; pl++) {                                               \
            T *ip = gin + pl * plane;                  /* (H, W) */                                \
            const T *gp = gout + pl * oplane;          /* (OH, OW) */                              \
            const int64_t *xp = indices + pl * oplane; /* (OH, OW) */                              \
            for (int64_t k = 0; k < oplane; k++) {                                                 \
                int64_t at = xp[k];                                                                \
                if (at < 0 || at >= plane) return pl * oplane + k;                                 \
                ip[at] = STORE(LOAD(ip[at]) + LOAD(gp[k]));                                        \
            }                                                                                      \
        }                                                                                          \
        return -1;                                                                                 \
    }

EK_FOR_EACH_FLOAT(DEF_MAX_POOL_BWD)

ember_status ek_op_max_pool2d_with_indices_backward_grad_input(ember_kernel_ctx *ctx,
                                                               ember_value **args, size_t nargs) {
    ember_tensor *gout, *in, *indices, *gin;
    const int64_t *ks, *st, *pd, *dl;
    size_t nks, nst, npd, ndl;
    bool ceil_mode;
    EK_TRY(ek_check_nargs(ctx, nargs, 10));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &gout));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 1, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &ks, &nks));
    EK_TRY(ek_arg_int_list(ctx, args, 3, &st, &nst));
    EK_TRY(ek_arg_int_list(ctx, args, 4, &pd, &npd));
    EK_TRY(ek_arg_int_list(ctx, args, 5, &dl, &ndl));
    EK_TRY(ek_arg_bool(ctx, args, 6, &ceil_mode));
    EK_TRY(ek_arg_tensor(ctx, args, 7, &indices));
    EK_TRY(ek_arg_out(ctx, args, 8, &gin));
    ek_pool2d p;
    EK_TRY(ek_pool2d_init(ctx, &p, in, ks, nks, st, nst, pd, npd, dl, ndl, ceil_mode));
    bool same = gout->dim == p.out_dim && indices->dim == p.out_dim;
    for (size_t d = 0; same && d < p.out_dim; d++)
        same = gout->sizes[d] == p.out_shape[d] && indices->sizes[d] == p.out_shape[d];
    if (!same) {
        char got[96], gidx[96];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "max_pool2d_backward: grad_output %s and indices %s must both "
                                 "have the pooled shape (%lldx%lld planes)",
                                 ek_shape_str(got, sizeof got, gout->sizes, gout->dim),
                                 ek_shape_str(gidx, sizeof gidx, indices->sizes, indices->dim),
                                 (long long)p.oh, (long long)p.ow);
    }
    EK_TRY(ek_check_float(ctx, in->dtype, "max_pool2d_backward"));
    EK_TRY(ek_check_same_dtype(ctx, gout, in, "max_pool2d_backward grad_output and self"));
    EK_TRY(ek_check_same_dtype(ctx, in, gin, "max_pool2d_backward self and grad_input"));
    if (indices->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "max_pool2d_backward: indices must be int64, got %s",
                                 ember_dtype_name(indices->dtype));
    EK_TRY(ek_check_contiguous(ctx, gout, "max_pool2d_backward grad_output"));
    EK_TRY(ek_check_contiguous(ctx, indices, "max_pool2d_backward indices"));
    EK_TRY(ek_check_no_alias(ctx, gin, gout));
    EK_TRY(ek_resize_like(ctx, gin, in));
    EK_TRY(ek_check_contiguous(ctx, gin, "max_pool2d_backward grad_input"));
    if (gin->numel == 0) return EMBER_OK;
    int64_t bad = -1;
    switch (in->dtype) {
    case EMBER_FLOAT32: bad = max_bwd_f32(gin->data, gout->data, indices->data, &p); break;
    case EMBER_FLOAT64: bad = max_bwd_f64(gin->data, gout->data, indices->data, &p); break;
    case EMBER_FLOAT16: bad = max_bwd_f16(gin->data, gout->data, indices->data, &p); break;
    case EMBER_BFLOAT16: bad = max_bwd_bf16(gin->data, gout->data, indices->data, &p); break;
    default: break; /* checked above */
    }
    if (bad >= 0)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "max_pool2d_backward: indices[%lld] = %lld is outside the "
                                 "%lldx%lld plane",
                                 (long long)bad, (long long)((const int64_t *)indices->data)[bad],
                                 (long long)p.h, (long long)p.w);
    return EMBER_OK;
}
