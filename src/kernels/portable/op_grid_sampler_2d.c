/*
 * aten::grid_sampler_2d.out(Tensor input, Tensor grid, int interpolation_mode,
 *     int padding_mode, bool align_corners, *, Tensor(a!) out)
 *
 * out[n, c, h, w] samples input[n, c] (H, W) at grid[n, h, w] = (x, y), in
 * [-1, 1] across the width and height: -1 and 1 are the centres of the edge
 * pixels (align_corners) or their outer edges. interpolation_mode: 0
 * bilinear, 1 nearest (ties to even), 2 bicubic (A = -0.75); padding_mode:
 * 0 zeros, 1 border (clamp), 2 reflection (mirror at the edges, then
 * clamp). Non-finite or huge coordinates read as outside, as in PyTorch.
 * Float dtypes (input, grid and out alike), any strides.
 */
#include <limits.h>
#include <tgmath.h> /* floor, fabs, fmod, nearbyint in the compute type */

#include "kernel_util.h"
#include "ops.h"

enum { GS_BILINEAR = 0, GS_NEAREST = 1, GS_BICUBIC = 2 };
enum { GS_ZEROS = 0, GS_BORDER = 1, GS_REFLECTION = 2 };

/* Input plane (H, W) of one (n, c), read through its strides. */
typedef struct gs_plane {
    const void *data;
    int64_t h, w, sh, sw;
} gs_plane;

#define DEF_GRID_SAMPLER(SFX, T, CT, LOAD, STORE)                                                  \
    static CT unnormalize_##SFX(CT coord, int64_t size, bool align) {                              \
        /* scaled by (size - 1) / 2 or size / 2, rounding as PyTorch's CPU kernel */               \
        CT half = align ? (CT)(size - 1) / 2 : (CT)size / 2;                                       \
        return align ? (coord + 1) * half : (coord + 1) * half - (CT)0.5;                          \
    }                                                                                              \
    static CT clip_##SFX(CT x, int64_t size) {                                                     \
        x = x > 0 ? x : (x != x ? x : (CT)0); /* NaN passes, as std::max(NaN, 0) */                \
        return (CT)(size - 1) < x || x != x ? (CT)(size - 1) : x;                                  \
    }                                                                                              \
    /* mirrors x into [lo2 / 2, hi2 / 2] (bounds given doubled) */                                 \
    static CT reflect_##SFX(CT x, int64_t lo2, int64_t hi2) {                                      \
        if (lo2 == hi2) return 0;                                                                  \
        CT lo = (CT)lo2 / 2, span = (CT)(hi2 - lo2) / 2;                                           \
        x = fabs(x - lo);                                                                          \
        CT extra = fmod(x, span); /* NaN for inf and NaN: clipped afterwards */                    \
        bool even = fmod(floor(x / span), (CT)2) == 0;                                             \
        return even ? extra + lo : span - extra + lo;                                              \
    }                                                                                              \
    static CT padded_##SFX(CT x, int64_t size, int pad, bool align) {                              \
        if (pad == GS_BORDER) {                                                                    \
            x = clip_##SFX(x, size);                                                               \
        } else if (pad == GS_REFLECTION) {                                                         \
            x = align ? reflect_##SFX(x, 0, 2 * (size - 1)) : reflect_##SFX(x, -1, 2 * size - 1);  \
            x = clip_##SFX(x, size);                                                               \
        }                                                                                          \
        /* out of int range or not finite: far outside */                                          \
        if (!(x <= (CT)(INT_MAX - 1) && x >= (CT)INT_MIN)) x = (CT)-100;                           \
        return x;                                                                                  \
    }                                                                                              \
    static CT at_##SFX(const gs_plane *pl, int64_t y, int64_t x) {                                 \
        if (y < 0 || y >= pl->h || x < 0 || x >= pl->w) return 0;                                  \
        return LOAD(((const T *)pl->data)[y * pl->sh + x * pl->sw]);                               \
    }                                                                                              \
    static CT cubic_##SFX(CT x0, CT x1, CT x2, CT x3, CT t) {                                      \
        const CT A = (CT)-0.75;                                                                    \
        CT u = t + 1, v = 1 - t, w = 2 - t;                                                        \
        CT c0 = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;                                         \
        CT c1 = ((A + 2) * t - (A + 3)) * t * t + 1;                                               \
        CT c2 = ((A + 2) * v - (A + 3)) * v * v + 1;                                               \
        CT c3 = ((A * w - 5 * A) * w + 8 * A) * w - 4 * A;                                         \
        return x0 * c0 + x1 * c1 + x2 * c2 + x3 * c3;                                              \
    }                                                                                              \
    /* bicubic taps go through the padding one by one */                                           \
    static CT bounded_##SFX(const gs_plane *pl, CT x, CT y, int pad, bool align) {                 \
        CT px = padded_##SFX(x, pl->w, pad, align), py = padded_##SFX(y, pl->h, pad, align);       \
        return at_##SFX(pl, (int64_t)py, (int64_t)px);                                             \
    }                                                                                              \
    static CT sample_##SFX(const gs_plane *pl, CT gx, CT gy, int mode, int pad, bool align) {      \
        if (mode == GS_BICUBIC) {                                                                  \
            CT ix = unnormalize_##SFX(gx, pl->w, align), iy = unnormalize_##SFX(gy, pl->h, align); \
            CT x0 = floor(ix), y0 = floor(iy);                                                     \
            CT tx = ix - x0, ty = iy - y0;                                                         \
            CT rows[4];                                                                            \
            for (int i = 0; i < 4; i++) {                                                          \
                CT yy = y0 - 1 + (CT)i;                                                            \
                rows[i] = cubic_##SFX(bounded_##SFX(pl, x0 - 1, yy, pad, align),                   \
                                      bounded_##SFX(pl, x0, yy, pad, align),                       \
                                      bounded_##SFX(pl, x0 + 1, yy, pad, align),                   \
                                      bounded_##SFX(pl, x0 + 2, yy, pad, align), tx);              \
            }                                                                                      \
            return cubic_##SFX(rows[0], rows[1], rows[2], rows[3], ty);                            \
        }                                                                                          \
        CT ix = padded_##SFX(unnormalize_##SFX(gx, pl->w, align), pl->w, pad, align);             \
        CT iy = padded_##SFX(unnormalize_##SFX(gy, pl->h, align), pl->h, pad, align);             \
        if (mode == GS_NEAREST)                                                                    \
            return at_##SFX(pl, (int64_t)nearbyint(iy), (int64_t)nearbyint(ix));                   \
        CT fx = floor(ix), fy = floor(iy);                                                         \
        int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;                                                \
        CT e = ix - fx, s = iy - fy; /* east and south weights */                                  \
        return at_##SFX(pl, y0, x0) * (1 - e) * (1 - s) + at_##SFX(pl, y0, x0 + 1) * e * (1 - s) + \
               at_##SFX(pl, y0 + 1, x0) * (1 - e) * s + at_##SFX(pl, y0 + 1, x0 + 1) * e * s;      \
    }                                                                                              \
    static void grid_sampler_##SFX(ember_tensor *out, const ember_tensor *in,                      \
                                   const ember_tensor *grid, int mode, int pad, bool align) {      \
        int64_t n = in->sizes[0], c = in->sizes[1], oh = grid->sizes[1], ow = grid->sizes[2];      \
        const T *g = (const T *)grid->data;                                                        \
        T *y = (T *)out->data;                                                                     \
        gs_plane pl = {NULL, in->sizes[2], in->sizes[3], in->strides[2], in->strides[3]};          \
        for (int64_t b = 0; b < n; b++)                                                            \
            for (int64_t i = 0; i < oh; i++)                                                       \
                for (int64_t j = 0; j < ow; j++) {                                                 \
                    const T *gp = g + b * grid->strides[0] + i * grid->strides[1] +                \
                                  j * grid->strides[2];                                            \
                    CT gx = LOAD(gp[0]), gy = LOAD(gp[grid->strides[3]]);                          \
                    for (int64_t ch = 0; ch < c; ch++) {                                           \
                        pl.data = (const T *)in->data + b * in->strides[0] + ch * in->strides[1];  \
                        CT v = sample_##SFX(&pl, gx, gy, mode, pad, align);                        \
                        y[b * out->strides[0] + ch * out->strides[1] + i * out->strides[2] +       \
                          j * out->strides[3]] = STORE(v);                                         \
                    }                                                                              \
                }                                                                                  \
    }

EK_FOR_EACH_FLOAT(DEF_GRID_SAMPLER)

ember_status ek_op_grid_sampler_2d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *grid, *out;
    int64_t mode, pad;
    bool align;
    EK_TRY(ek_check_nargs(ctx, nargs, 7));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &grid));
    EK_TRY(ek_arg_int(ctx, args, 2, &mode));
    EK_TRY(ek_arg_int(ctx, args, 3, &pad));
    EK_TRY(ek_arg_bool(ctx, args, 4, &align));
    EK_TRY(ek_arg_out(ctx, args, 5, &out));
    if (mode < 0 || mode > 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "grid_sampler_2d: interpolation_mode must be 0, 1 or 2, got %lld",
                                 (long long)mode);
    if (pad < 0 || pad > 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "grid_sampler_2d: padding_mode must be 0, 1 or 2, got %lld",
                                 (long long)pad);
    EK_TRY(ek_check_float(ctx, in->dtype, "grid_sampler_2d"));
    EK_TRY(ek_check_same_dtype(ctx, in, grid, "grid_sampler_2d input and grid"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "grid_sampler_2d input and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_check_no_alias(ctx, out, grid));
    if (in->dim != 4 || grid->dim != 4 || grid->sizes[3] != 2 || grid->sizes[0] != in->sizes[0])
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "grid_sampler_2d: expected input (N, C, H, W) and grid "
                                 "(N, H_out, W_out, 2)");
    if ((in->sizes[2] == 0 || in->sizes[3] == 0) && in->sizes[0] * in->sizes[1] > 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "grid_sampler_2d: input has an empty spatial dim");
    const int64_t shape[4] = {in->sizes[0], in->sizes[1], grid->sizes[1], grid->sizes[2]};
    EK_TRY(ek_resize_out(ctx, out, shape, 4));
    if (out->numel == 0) return EMBER_OK;
    EK_FLOAT_SWITCH(ctx, in->dtype, grid_sampler, out, in, grid, (int)mode, (int)pad, align);
    return EMBER_OK;
}
