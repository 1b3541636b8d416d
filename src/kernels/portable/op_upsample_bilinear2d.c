/*
 * aten::upsample_bilinear2d.vec_out(Tensor input, SymInt[]? output_size,
 *     bool align_corners, float[]? scale_factors, *, Tensor(a!) out)
 *
 * Bilinear resize of (N, C, H, W) contiguous float tensors, with PyTorch's
 * source index (area_pixel_compute_source_index): per output row y,
 *   align_corners: src = y * (H - 1) / (OH - 1)   (0 when OH == 1)
 *   otherwise:     src = max(0, (y + 0.5) * r - 0.5), r = 1 / scale_h when
 *                  scale_factors are given, else H / OH
 * i0 = min(floor(src), H - 1), i1 = i0 + (i0 < H - 1), l1 = clamp(src - i0,
 * 0, 1), l0 = 1 - l1 (and the same for columns). Computed in float (double
 * for float64). The output size is output_size, or floor(H * scale_h),
 * floor(W * scale_w).
 */
#include <math.h>

#include "kernel_util.h"
#include "ops.h"

/* PyTorch's compute_source_index_and_lambda, in double (rounded per op to
 * float for the float types, as the CPU kernel's opmath float). */
typedef struct lin_idx {
    int64_t i0, i1;
    double l0, l1;
} lin_idx;

static lin_idx source_index(int64_t o, int64_t in, int64_t out, bool align_corners, bool has_scale,
                            double scale, bool f32) {
    lin_idx r = {o, o, 1.0, 0.0};
    if (in == out) return r;
    double ratio, src;
    if (f32) {
        float rf;
        if (align_corners)
            rf = out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
        else
            rf = has_scale && scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
        float sf = align_corners ? rf * (float)o : rf * ((float)o + 0.5f) - 0.5f;
        if (!align_corners && sf < 0) sf = 0;
        ratio = rf;
        src = sf;
    } else {
        if (align_corners)
            ratio = out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0;
        else
            ratio = has_scale && scale > 0 ? 1.0 / scale : (double)in / (double)out;
        src = align_corners ? ratio * (double)o : ratio * ((double)o + 0.5) - 0.5;
        if (!align_corners && src < 0) src = 0;
    }
    (void)ratio;
    int64_t i0 = (int64_t)floor(src);
    if (i0 > in - 1) i0 = in - 1;
    double l1 = src - (double)i0;
    if (f32) l1 = (float)l1;
    l1 = l1 < 0 ? 0 : l1 > 1 ? 1 : l1;
    r.i0 = i0;
    r.i1 = i0 + (i0 < in - 1 ? 1 : 0);
    r.l1 = l1;
    r.l0 = 1.0 - l1;
    return r;
}

#define EK_BILINEAR_LOOP(SUFFIX, T, C, LOAD, STORE)                                                \
    static void bilinear_##SUFFIX(const void *xv, void *yv, int64_t planes, int64_t h, int64_t w,  \
                                  int64_t oh, int64_t ow, bool ac, bool has_s, double sh,          \
                                  double sw) {                                                     \
        const T *x = (const T *)xv;                                                                \
        T *y = (T *)yv;                                                                            \
        bool f32 = sizeof(C) == sizeof(float);                                                     \
        for (int64_t oy = 0; oy < oh; oy++) {                                                      \
            lin_idx iy = source_index(oy, h, oh, ac, has_s, sh, f32);                              \
            C h0 = (C)iy.l0, h1 = (C)iy.l1;                                                        \
            for (int64_t ox = 0; ox < ow; ox++) {                                                  \
                lin_idx ix = source_index(ox, w, ow, ac, has_s, sw, f32);                          \
                C w0 = (C)ix.l0, w1 = (C)ix.l1;                                                    \
                for (int64_t p = 0; p < planes; p++) {                                             \
                    const T *xp = x + p * h * w;                                                   \
                    C x00 = LOAD(xp[iy.i0 * w + ix.i0]), x01 = LOAD(xp[iy.i0 * w + ix.i1]);        \
                    C x10 = LOAD(xp[iy.i1 * w + ix.i0]), x11 = LOAD(xp[iy.i1 * w + ix.i1]);        \
                    C v = h0 * (w0 * x00 + w1 * x01) + h1 * (w0 * x10 + w1 * x11);                 \
                    y[(p * oh + oy) * ow + ox] = STORE(v);                                         \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
EK_FOR_EACH_FLOAT(EK_BILINEAR_LOOP)

ember_status ek_op_upsample_bilinear2d_vec_out(ember_kernel_ctx *ctx, ember_value **args,
                                               size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *os;
    size_t nos;
    bool has_os, ac;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_opt_int_list(ctx, args, 1, &os, &nos, &has_os));
    EK_TRY(ek_arg_bool(ctx, args, 2, &ac));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    if (in->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "upsample_bilinear2d: expected a 4-d input");
    EK_TRY(ek_check_float(ctx, in->dtype, "upsample_bilinear2d input"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "input and out"));
    EK_TRY(ek_check_contiguous(ctx, in, "upsample_bilinear2d input"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    int64_t h = in->sizes[2], w = in->sizes[3], oh, ow;
    bool has_s = false;
    double sh = 0, sw = 0;
    if (has_os) {
        if (nos != 2)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "upsample_bilinear2d: output_size needs 2 values");
        if (args[3]->tag != EMBER_TAG_NONE)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "upsample_bilinear2d: give output_size or scale_factors, "
                                     "not both");
        oh = os[0];
        ow = os[1];
    } else {
        if (args[3]->tag != EMBER_TAG_DOUBLE_LIST || args[3]->u.double_list.len != 2 ||
            args[3]->u.double_list.items == NULL)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "upsample_bilinear2d: needs output_size or 2 scale_factors");
        sh = args[3]->u.double_list.items[0];
        sw = args[3]->u.double_list.items[1];
        double dh = floor((double)h * sh), dw = floor((double)w * sw);
        if (!(dh >= 0 && dh <= INT32_MAX && dw >= 0 && dw <= INT32_MAX))
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "upsample_bilinear2d: bad scale factors");
        oh = (int64_t)dh;
        ow = (int64_t)dw;
        has_s = true;
    }
    if (oh <= 0 || ow <= 0 || oh > INT32_MAX || ow > INT32_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "upsample_bilinear2d: output size must be positive, got (%lld, "
                                 "%lld)",
                                 (long long)oh, (long long)ow);
    int64_t planes = (int64_t)in->sizes[0] * in->sizes[1];
    if ((h == 0 || w == 0) && planes > 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "upsample_bilinear2d: empty input plane");
    const int64_t shape[4] = {in->sizes[0], in->sizes[1], oh, ow};
    EK_TRY(ek_resize_out(ctx, out, shape, 4));
    EK_TRY(ek_check_contiguous(ctx, out, "upsample_bilinear2d out"));
    if (out->numel == 0) return EMBER_OK;
    EK_FLOAT_SWITCH(ctx, in->dtype, bilinear, in->data, out->data, planes, h, w, oh, ow, ac, has_s,
                    sh, sw);
    return EMBER_OK;
}
