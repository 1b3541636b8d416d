/*
 * aten::_adaptive_avg_pool2d_backward.out(Tensor grad_output, Tensor self, *,
 *     Tensor(a!) out) -> Tensor(a!)
 *
 * Gradient of _adaptive_avg_pool2d: out has self's shape, and each input
 * cell receives grad / area from every output cell whose window covers it.
 * Windows are the forward's: output row oy covers input rows
 * [floor(oy H / OH), ceil((oy+1) H / OH)). Input row y is therefore covered
 * by output rows [floor(y OH / H), ceil((y+1) OH / H)), so each input cell is
 * one sum in the compute type (no scatter, no scratch). Float dtypes,
 * contiguous.
 */
#include "kernel_util.h"
#include "ops.h"

#define DEF_ADAPTIVE_BWD(SFX, T, CT, LOAD, STORE)                                                  \
    static void adaptive_bwd_##SFX(T *gin, const T *gout, int64_t planes, int64_t h, int64_t w,    \
                                   int64_t oh, int64_t ow) {                                       \
        for (int64_t pl = 0; pl < planes; pl++) {                                                  \
            const T *gp = gout + pl * oh * ow; /* (OH, OW) */                                      \
            T *ip = gin + pl * h * w;          /* (H, W) */                                        \
            for (int64_t y = 0; y < h; y++) {                                                      \
                int64_t oy0 = (y * oh) / h, oy1 = ((y + 1) * oh + h - 1) / h;                      \
                for (int64_t x = 0; x < w; x++) {                                                  \
                    int64_t ox0 = (x * ow) / w, ox1 = ((x + 1) * ow + w - 1) / w;                  \
                    CT acc = 0;                                                                    \
                    for (int64_t oy = oy0; oy < oy1; oy++) {                                       \
                        int64_t hs = (oy * h) / oh, he = ((oy + 1) * h + oh - 1) / oh;             \
                        for (int64_t ox = ox0; ox < ox1; ox++) {                                   \
                            int64_t ws = (ox * w) / ow, we = ((ox + 1) * w + ow - 1) / ow;         \
                            acc += LOAD(gp[oy * ow + ox]) / (CT)((he - hs) * (we - ws));           \
                        }                                                                          \
                    }                                                                              \
                    ip[y * w + x] = STORE(acc);                                                    \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_ADAPTIVE_BWD)

ember_status ek_op_adaptive_avg_pool2d_backward_out(ember_kernel_ctx *ctx, ember_value **args,
                                                    size_t nargs) {
    ember_tensor *gout, *in, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &gout));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 1, &in));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    if (in->dim != 3 && in->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "adaptive_avg_pool2d_backward: expected a 3-d or 4-d self, got "
                                 "%u-d",
                                 (unsigned)in->dim);
    if (gout->dim != in->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "adaptive_avg_pool2d_backward: grad_output has rank %u, self %u",
                                 (unsigned)gout->dim, (unsigned)in->dim);
    size_t lead = in->dim - 2;
    int64_t planes = 1;
    for (size_t d = 0; d < lead; d++) {
        if (gout->sizes[d] != in->sizes[d])
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "adaptive_avg_pool2d_backward: grad_output dim %zu is %d, "
                                     "self has %d",
                                     d, (int)gout->sizes[d], (int)in->sizes[d]);
        planes *= in->sizes[d];
    }
    int64_t h = in->sizes[lead], w = in->sizes[lead + 1];
    int64_t oh = gout->sizes[lead], ow = gout->sizes[lead + 1];
    if ((oh == 0 || ow == 0) && h * w > 0 && planes > 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "adaptive_avg_pool2d_backward: empty grad_output plane");
    EK_TRY(ek_check_float(ctx, in->dtype, "adaptive_avg_pool2d_backward"));
    EK_TRY(ek_check_same_dtype(ctx, gout, in, "adaptive_avg_pool2d_backward grad_output and self"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "adaptive_avg_pool2d_backward self and out"));
    EK_TRY(ek_check_contiguous(ctx, gout, "adaptive_avg_pool2d_backward grad_output"));
    EK_TRY(ek_check_no_alias(ctx, out, gout));
    EK_TRY(ek_resize_like(ctx, out, in));
    EK_TRY(ek_check_contiguous(ctx, out, "adaptive_avg_pool2d_backward out"));
    if (out->numel == 0) return EMBER_OK;
    EK_FLOAT_SWITCH(ctx, in->dtype, adaptive_bwd, out->data, gout->data, planes, h, w, oh, ow);
    return EMBER_OK;
}
