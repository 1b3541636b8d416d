/*
 * aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[],
 *     int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *,
 *     Tensor(a!) out, Tensor(b!) indices)
 *
 * Max over each (dilated) window of every (H, W) plane; indices (int64)
 * give the position of the max within its plane, h * W + w. NaN wins, as in
 * PyTorch. Float dtypes, contiguous. Arguments: 6 inputs, 2 outs, TensorList (9).
 */
#include <math.h>

#include "pool_util.h"
#include "ops.h"

/* First tap of a window at or after 0: start + j * step for the least such j. */
static int64_t first_inside(int64_t start, int64_t step) {
    return start >= 0 ? start : start + ((-start + step - 1) / step) * step;
}

#define DEF_MAX_POOL(SFX, T, CT, LOAD, STORE)                                                      \
    static void max_pool_##SFX(T *out, int64_t *indices, const T *x, const ek_pool2d *p) {         \
        for (int64_t pl = 0; pl < p->planes; pl++) {                                               \
            const T *xp = x + pl * p->h * p->w; /* (H, W) */                                       \
            T *op = out + pl * p->oh * p->ow;   /* (OH, OW) */                                     \
            int64_t *ip = indices + pl * p->oh * p->ow;                                            \
            for (int64_t oy = 0; oy < p->oh; oy++) {                                               \
                int64_t hs = oy * p->sh - p->ph;                                                   \
                int64_t he = hs + (p->kh - 1) * p->dh + 1;                                         \
                if (he > p->h) he = p->h;                                                          \
                hs = first_inside(hs, p->dh);                                                      \
                for (int64_t ox = 0; ox < p->ow; ox++) {                                           \
                    int64_t ws = ox * p->sw - p->pw;                                               \
                    int64_t we = ws + (p->kw - 1) * p->dw + 1;                                     \
                    if (we > p->w) we = p->w;                                                      \
                    ws = first_inside(ws, p->dw);                                                  \
                    CT best = -INFINITY;                                                           \
                    int64_t best_i = hs * p->w + ws;                                               \
                    for (int64_t y = hs; y < he; y += p->dh) {                                     \
                        for (int64_t xx = ws; xx < we; xx += p->dw) {                              \
                            CT v = LOAD(xp[y * p->w + xx]);                                        \
                            if (v > best || v != v) {                                              \
                                best = v;                                                          \
                                best_i = y * p->w + xx;                                            \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
                    op[oy * p->ow + ox] = STORE(best);                                             \
                    ip[oy * p->ow + ox] = best_i;                                                  \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_MAX_POOL)

ember_status ek_op_max_pool2d_with_indices_out(ember_kernel_ctx *ctx, ember_value **args,
                                               size_t nargs) {
    ember_tensor *in, *out, *indices;
    const int64_t *ks, *st, *pd, *dl;
    size_t nks, nst, npd, ndl;
    bool ceil_mode;
    EK_TRY(ek_check_nargs(ctx, nargs, 9));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &ks, &nks));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &st, &nst));
    EK_TRY(ek_arg_int_list(ctx, args, 3, &pd, &npd));
    EK_TRY(ek_arg_int_list(ctx, args, 4, &dl, &ndl));
    EK_TRY(ek_arg_bool(ctx, args, 5, &ceil_mode));
    EK_TRY(ek_arg_out(ctx, args, 6, &out));
    EK_TRY(ek_arg_out(ctx, args, 7, &indices));
    ek_pool2d p;
    EK_TRY(ek_pool2d_init(ctx, &p, in, ks, nks, st, nst, pd, npd, dl, ndl, ceil_mode));
    EK_TRY(ek_check_float(ctx, in->dtype, "max_pool2d"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "max_pool2d self and out"));
    if (indices->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "max_pool2d: indices must be int64");
    EK_TRY(ek_check_contiguous(ctx, in, "max_pool2d self"));
    EK_TRY(ek_resize_out(ctx, out, p.out_shape, p.out_dim));
    EK_TRY(ek_resize_out(ctx, indices, p.out_shape, p.out_dim));
    EK_TRY(ek_check_contiguous(ctx, out, "max_pool2d out"));
    EK_TRY(ek_check_contiguous(ctx, indices, "max_pool2d indices"));
    if (out->numel == 0) return EMBER_OK;
    EK_FLOAT_SWITCH(ctx, in->dtype, max_pool, out->data, indices->data, in->data, &p);
    return EMBER_OK;
}
