/*
 * aten::_adaptive_avg_pool2d.out(Tensor self, SymInt[2] output_size, *, Tensor(a!) out)
 *
 * Output cell (oy, ox) averages input rows [floor(oy H / OH), ceil((oy+1) H / OH))
 * and the same for columns. Float dtypes, contiguous.
 */
#include "kernel_util.h"
#include "ops.h"

#define DEF_ADAPTIVE(SFX, T, CT, LOAD, STORE)                                                      \
    static void adaptive_##SFX(T *out, const T *x, int64_t planes, int64_t h, int64_t w,           \
                               int64_t oh, int64_t ow) {                                           \
        for (int64_t pl = 0; pl < planes; pl++) {                                                  \
            const T *xp = x + pl * h * w; /* (H, W) */                                             \
            T *op = out + pl * oh * ow;   /* (OH, OW) */                                           \
            for (int64_t oy = 0; oy < oh; oy++) {                                                  \
                int64_t hs = (oy * h) / oh, he = ((oy + 1) * h + oh - 1) / oh;                     \
                for (int64_t ox = 0; ox < ow; ox++) {                                              \
                    int64_t ws = (ox * w) / ow, we = ((ox + 1) * w + ow - 1) / ow;                 \
                    CT sum = 0;                                                                    \
                    for (int64_t y = hs; y < he; y++)                                              \
                        for (int64_t xx = ws; xx < we; xx++) sum += LOAD(xp[y * w + xx]);          \
                    op[oy * ow + ox] = STORE(sum / (CT)((he - hs) * (we - ws)));                   \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_ADAPTIVE)

ember_status ek_op_adaptive_avg_pool2d_out(ember_kernel_ctx *ctx, ember_value **args,
                                           size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *os;
    size_t nos;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &os, &nos));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    if (in->dim != 3 && in->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "adaptive_avg_pool2d: expected a 3-d or 4-d input, got %u-d",
                                 (unsigned)in->dim);
    if (nos != 2 || os[0] < 0 || os[1] < 0 || os[0] > INT32_MAX || os[1] > INT32_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "adaptive_avg_pool2d: output_size must be 2 non-negative sizes");
    size_t lead = in->dim - 2;
    int64_t shape[4], planes = 1;
    for (size_t d = 0; d < lead; d++) {
        shape[d] = in->sizes[d];
        planes *= in->sizes[d];
    }
    int64_t h = in->sizes[lead], w = in->sizes[lead + 1], oh = os[0], ow = os[1];
    if ((h == 0 || w == 0) && oh * ow > 0 && planes > 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "adaptive_avg_pool2d: empty input plane");
    shape[lead] = oh;
    shape[lead + 1] = ow;
    EK_TRY(ek_check_float(ctx, in->dtype, "adaptive_avg_pool2d"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "adaptive_avg_pool2d self and out"));
    EK_TRY(ek_check_contiguous(ctx, in, "adaptive_avg_pool2d self"));
    EK_TRY(ek_resize_out(ctx, out, shape, in->dim));
    EK_TRY(ek_check_contiguous(ctx, out, "adaptive_avg_pool2d out"));
    if (out->numel == 0) return EMBER_OK;
    EK_FLOAT_SWITCH(ctx, in->dtype, adaptive, out->data, in->data, planes, h, w, oh, ow);
    return EMBER_OK;
}
