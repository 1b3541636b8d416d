/*
 * aten::reflection_pad1d.out(Tensor self, SymInt[2] padding, *, Tensor(a!) out)
 * aten::reflection_pad2d.out(Tensor self, SymInt[4] padding, *, Tensor(a!) out)
 * aten::reflection_pad3d.out(Tensor self, SymInt[6] padding, *, Tensor(a!) out)
 * aten::replication_pad1d.out(Tensor self, SymInt[2] padding, *, Tensor(a!) out)
 * aten::replication_pad2d.out(Tensor self, SymInt[4] padding, *, Tensor(a!) out)
 * aten::replication_pad3d.out(Tensor self, SymInt[6] padding, *, Tensor(a!) out)
 *
 * Pads the last k dims (k = 1, 2, 3) of a (k+1)- or (k+2)-dim input; the
 * padding pairs (left, right) start from the last dim, negative values
 * crop. Reflection mirrors around the edge element (each pad must be
 * smaller than its dim); replication repeats the edge element. Every padded
 * dim must be non-empty and the output at least one element wide. Every
 * dtype, any dim order.
 */
#include <string.h>

#include "kernel_util.h"
#include "ops.h"

typedef enum pad_mode { PAD_REFLECT, PAD_REPLICATE } pad_mode;

/* The input index that output index j of a dim of size n reads. */
static int64_t source_index(int64_t j, int64_t left, int64_t n, pad_mode m) {
    int64_t i = j - left;
    if (m == PAD_REPLICATE) return i < 0 ? 0 : i >= n ? n - 1 : i;
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
    return i;
}

/* Copies one element of es bytes (constant sizes become single moves). */
static void copy_elem(char *dst, const char *src, size_t es) {
    switch (es) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, 8); break;
    }
}

static ember_status pad_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, size_t k,
                               pad_mode mode, const char *op) {
    ember_tensor *in, *out;
    const int64_t *pad;
    size_t npad;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &pad, &npad));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_supported(ctx, in->dtype, op));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    if (npad != 2 * k)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: padding must have %zu values, got %zu", op, 2 * k, npad);
    if (in->dim != k + 1 && in->dim != k + 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: expected a %zu-d or %zu-d input, got %u-d", op, k + 1, k + 2,
                                 (unsigned)in->dim);
    size_t lead = in->dim - k;
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(in, shape);
    /* padded dims as (depth, height, width); absent ones have size 1, no pad */
    int64_t n[3] = {1, 1, 1}, on[3] = {1, 1, 1}, left[3] = {0, 0, 0};
    int64_t ist[3] = {0, 0, 0}, ost[3] = {0, 0, 0};
    for (size_t p = 0; p < k; p++) {
        size_t d = in->dim - 1 - p; /* pair p pads dim d */
        size_t slot = 2 - p;
        int64_t l = pad[2 * p], r = pad[2 * p + 1], size = in->sizes[d];
        if (l < -(int64_t)INT32_MAX || l > INT32_MAX || r < -(int64_t)INT32_MAX || r > INT32_MAX)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "%s: padding out of range",
                                     op);
        if (size == 0)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "%s: padded dim %zu of self is empty", op, d);
        if (mode == PAD_REFLECT && (l >= size || r >= size))
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "%s: padding (%lld, %lld) must be smaller than dim %zu of "
                                     "size %lld",
                                     op, (long long)l, (long long)r, d, (long long)size);
        shape[d] = size + l + r;
        if (shape[d] < 1)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "%s: dim %zu would have size %lld", op, d,
                                     (long long)shape[d]);
        n[slot] = size;
        on[slot] = shape[d];
        left[slot] = l;
    }
    EK_TRY(ek_resize_out(ctx, out, shape, in->dim));
    if (out->numel == 0) return EMBER_OK;
    for (size_t p = 0; p < k; p++) {
        size_t d = in->dim - 1 - p;
        ist[2 - p] = in->strides[d];
        ost[2 - p] = out->strides[d];
    }

    int64_t lsizes[EMBER_MAX_DIM], lst[2][EMBER_MAX_DIM], pos[EMBER_MAX_DIM] = {0};
    int64_t off[2] = {0, 0}; /* in, out */
    for (size_t d = 0; d < lead; d++) {
        lsizes[d] = in->sizes[d];
        lst[0][d] = in->strides[d];
        lst[1][d] = out->strides[d];
    }
    size_t es = ember_dtype_size(in->dtype);
    const char *x = (const char *)in->data;
    char *y = (char *)out->data;
    do {
        for (int64_t oz = 0; oz < on[0]; oz++) {
            int64_t iz = source_index(oz, left[0], n[0], mode);
            for (int64_t oy = 0; oy < on[1]; oy++) {
                int64_t iy = source_index(oy, left[1], n[1], mode);
                const char *xr = x + (off[0] + iz * ist[0] + iy * ist[1]) * (int64_t)es;
                char *yr = y + (off[1] + oz * ost[0] + oy * ost[1]) * (int64_t)es;
                for (int64_t ox = 0; ox < on[2]; ox++) {
                    int64_t ix = source_index(ox, left[2], n[2], mode);
                    copy_elem(yr + ox * ost[2] * (int64_t)es, xr + ix * ist[2] * (int64_t)es, es);
                }
            }
        }
    } while (ek_advance(pos, lsizes, lead, 2, (const int64_t(*)[EMBER_MAX_DIM])lst, off));
    return EMBER_OK;
}

ember_status ek_op_reflection_pad1d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return pad_common(ctx, args, nargs, 1, PAD_REFLECT, "reflection_pad1d");
}

ember_status ek_op_reflection_pad2d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return pad_common(ctx, args, nargs, 2, PAD_REFLECT, "reflection_pad2d");
}

ember_status ek_op_reflection_pad3d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return pad_common(ctx, args, nargs, 3, PAD_REFLECT, "reflection_pad3d");
}

ember_status ek_op_replication_pad1d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return pad_common(ctx, args, nargs, 1, PAD_REPLICATE, "replication_pad1d");
}

ember_status ek_op_replication_pad2d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return pad_common(ctx, args, nargs, 2, PAD_REPLICATE, "replication_pad2d");
}

ember_status ek_op_replication_pad3d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return pad_common(ctx, args, nargs, 3, PAD_REPLICATE, "replication_pad3d");
}
