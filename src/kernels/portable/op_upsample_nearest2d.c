/*
 * aten::upsample_nearest2d.out(Tensor self, SymInt[2] output_size, float? scales_h=None,
 *     float? scales_w=None, *, Tensor(a!) out)
 * aten::upsample_nearest2d.vec_out(Tensor input, SymInt[]? output_size,
 *     float[]? scale_factors, *, Tensor(a!) out)
 *
 * out[.., y, x] = in[.., floor(y * sh), floor(x * sw)] (clamped), with
 * sh = 1 / scales_h when given, else H / OH (PyTorch's nearest, in float).
 * Any dtype; (N, C, H, W) contiguous.
 */
#include <math.h>
#include <string.h>

#include "kernel_util.h"
#include "ops.h"

/* PyTorch's nearest_idx */
static int64_t nearest(int64_t o, int64_t in, int64_t out, bool has_scale, double scale) {
    if (out == in) return o;
    if (out == 2 * in) return o >> 1;
    float s = has_scale && scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
    int64_t i = (int64_t)floorf((float)o * s);
    return i < in - 1 ? i : in - 1;
}

static ember_status upsample(ember_kernel_ctx *ctx, ember_tensor *in, int64_t oh, int64_t ow,
                             bool has_sh, double sh, bool has_sw, double sw, ember_tensor *out) {
    if (in->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "upsample_nearest2d: expected a 4-d input");
    if (oh < 0 || ow < 0 || oh > INT32_MAX || ow > INT32_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "upsample_nearest2d: bad output size");
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_contiguous(ctx, in, "upsample_nearest2d self"));
    int64_t planes = (int64_t)in->sizes[0] * in->sizes[1], h = in->sizes[2], w = in->sizes[3];
    if ((h == 0 || w == 0) && oh * ow > 0 && planes > 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "upsample_nearest2d: empty input plane");
    const int64_t shape[4] = {in->sizes[0], in->sizes[1], oh, ow};
    EK_TRY(ek_resize_out(ctx, out, shape, 4));
    EK_TRY(ek_check_contiguous(ctx, out, "upsample_nearest2d out"));
    if (out->numel == 0) return EMBER_OK;
    size_t es = ember_dtype_size(in->dtype);
    const char *x = (const char *)in->data;
    char *y = (char *)out->data;
    for (int64_t p = 0; p < planes; p++) {
        for (int64_t oy = 0; oy < oh; oy++) {
            int64_t iy = nearest(oy, h, oh, has_sh, sh);
            for (int64_t ox = 0; ox < ow; ox++) {
                int64_t ix = nearest(ox, w, ow, has_sw, sw);
                memcpy(y + ((p * oh + oy) * ow + ox) * (int64_t)es,
                       x + ((p * h + iy) * w + ix) * (int64_t)es, es);
            }
        }
    }
    return EMBER_OK;
}

static ember_status opt_double(ember_kernel_ctx *ctx, ember_value **args, size_t i, double *v,
                               bool *has) {
    *has = args[i]->tag != EMBER_TAG_NONE;
    *v = 0;
    return *has ? ek_arg_double(ctx, args, i, v) : EMBER_OK;
}

ember_status ek_op_upsample_nearest2d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *os;
    size_t nos;
    double sh, sw;
    bool has_sh, has_sw;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &os, &nos));
    EK_TRY(opt_double(ctx, args, 2, &sh, &has_sh));
    EK_TRY(opt_double(ctx, args, 3, &sw, &has_sw));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    if (nos != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "upsample_nearest2d: output_size needs 2 values");
    return upsample(ctx, in, os[0], os[1], has_sh, sh, has_sw, sw, out);
}

ember_status ek_op_upsample_nearest2d_vec_out(ember_kernel_ctx *ctx, ember_value **args,
                                              size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *os;
    size_t nos;
    bool has_os;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_opt_int_list(ctx, args, 1, &os, &nos, &has_os));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    if (in->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "upsample_nearest2d: expected a 4-d input");
    if (has_os) {
        if (nos != 2)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "upsample_nearest2d: output_size needs 2 values");
        return upsample(ctx, in, os[0], os[1], false, 0, false, 0, out);
    }
    if (args[2]->tag != EMBER_TAG_DOUBLE_LIST || args[2]->u.double_list.len != 2 ||
        args[2]->u.double_list.items == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "upsample_nearest2d: needs output_size or 2 scale_factors");
    double sh = args[2]->u.double_list.items[0], sw = args[2]->u.double_list.items[1];
    double oh = floor((double)in->sizes[2] * sh), ow = floor((double)in->sizes[3] * sw);
    if (!(oh >= 0 && oh <= INT32_MAX && ow >= 0 && ow <= INT32_MAX))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "upsample_nearest2d: bad scale factors");
    return upsample(ctx, in, (int64_t)oh, (int64_t)ow, true, sh, true, sw, out);
}
