/*
 * embedding_util.c — shared engine of the quantized embedding kernels.
 */
#include <string.h>

#include "embedding_util.h"
#include "quant_util.h"

/* Index element at offset off (int64 or int32, checked by the caller). */
static int64_t index_at(const ember_tensor *indices, int64_t off) {
    return indices->dtype == EMBER_INT64 ? ((const int64_t *)indices->data)[off]
                                         : ((const int32_t *)indices->data)[off];
}

/* Scales or zero points: (V) or (V, G), contiguous, of a dtype a float
 * loader reads; zero points must match the scales' shape. */
static ember_status check_params(ember_kernel_ctx *ctx, const char *op, const char *what,
                                 const ember_tensor *t, int64_t rows, bool allow_int) {
    if (!(ek_is_float(t->dtype) || (allow_int && ek_is_int(t->dtype))) ||
        ek_loader(t->dtype, EK_CT_F32) == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "%s: %s of dtype %s not supported",
                                 op, what, ember_dtype_name(t->dtype));
    if (t->dim != 1 && t->dim != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "%s: %s must be 1-d or 2-d, got %u-d",
                                 op, what, (unsigned)t->dim);
    if (t->sizes[0] != rows)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: %s has %d rows, the weight %lld", op, what, (int)t->sizes[0],
                                 (long long)rows);
    return ek_check_contiguous(ctx, t, what);
}

ember_status eq_embedding(ember_kernel_ctx *ctx, const eq_embedding_spec *spec,
                          ember_value **args, size_t nargs, bool has_dtype) {
    const char *op = spec->name;
    ember_tensor *weight, *scales, *zps, *indices, *out;
    int64_t qmin, qmax;
    EK_TRY(ek_check_nargs(ctx, nargs, has_dtype ? 9 : 8));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &weight));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &scales));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 2, &zps));
    EK_TRY(ek_arg_int(ctx, args, 3, &qmin));
    EK_TRY(ek_arg_int(ctx, args, 4, &qmax));
    EK_TRY(ek_arg_tensor(ctx, args, 5, &indices));
    EK_TRY(ek_arg_out(ctx, args, has_dtype ? 7 : 6, &out));

    /* weight (V, C): C packed bytes per row, D values */
    bool int8_weight = spec->int8_weight && weight->dtype == EMBER_INT8;
    if (weight->dtype != EMBER_UINT8 && !int8_weight)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: weight must be %s, got %s", op,
                                 spec->int8_weight ? "uint8 or int8" : "uint8 (packed)",
                                 ember_dtype_name(weight->dtype));
    if (weight->dim != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "%s: weight must be 2-d, got %u-d",
                                 op, (unsigned)weight->dim);
    EK_TRY(ek_check_contiguous(ctx, weight, "weight"));
    int64_t vocab = weight->sizes[0], packed = weight->sizes[1];
    size_t dim_z;
    if (ember_mul_overflow((size_t)packed, (size_t)spec->values_per_byte, &dim_z) ||
        dim_z > (size_t)INT32_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "%s: rows of %lld bytes too long",
                                 op, (long long)packed);
    int64_t dim = (int64_t)dim_z; /* D */

    /* quant range: ordered, inside what the format holds */
    int64_t lo = spec->qmin, hi = spec->qmax;
    if (spec->int8_weight) {
        lo = int8_weight ? INT8_MIN : 0;
        hi = int8_weight ? INT8_MAX : UINT8_MAX;
    }
    if (qmin > qmax || qmin < lo || qmax > hi)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: quant range [%lld, %lld] is not inside [%lld, %lld]", op,
                                 (long long)qmin, (long long)qmax, (long long)lo, (long long)hi);

    /* scales (V) or (V, G); G groups of D / G values per row */
    EK_TRY(check_params(ctx, op, "weight_scales", scales, vocab, false));
    int64_t groups = scales->dim == 2 ? scales->sizes[1] : 1;
    if (groups < 1 || dim % groups != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: %lld groups per row do not divide a row of %lld values", op,
                                 (long long)groups, (long long)dim);
    int64_t group_size = dim / groups;
    if (zps != NULL) {
        EK_TRY(check_params(ctx, op, "weight_zero_points", zps, vocab, true));
        if (zps->dim != scales->dim || zps->numel != scales->numel)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "%s: weight_zero_points and weight_scales differ in shape",
                                     op);
    }

    /* out: float, of dtype (when given) else the scales' dtype */
    int want = scales->dtype;
    if (has_dtype && args[6]->tag != EMBER_TAG_NONE) EK_TRY(eq_arg_dtype(ctx, args, 6, &want));
    if (out->dtype != want)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: out is %s, expected %s", op,
                                 ember_dtype_name(out->dtype), ember_dtype_name(want));
    ek_store_fn store = ek_is_float(want) ? ek_storer(want, EK_CT_F32) : NULL;
    if (store == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "%s: out dtype %s is not a float dtype",
                                 op, ember_dtype_name(want));

    /* indices: any shape, int64 or int32, every one a row of the table */
    if (indices->dtype != EMBER_INT64 && indices->dtype != EMBER_INT32)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "%s: indices must be int64 or int32, got %s", op,
                                 ember_dtype_name(indices->dtype));
    if (indices->dim + 1 > EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "%s: indices rank too large", op);
    int64_t shape[EMBER_MAX_DIM];
    ek_sizes64(indices, shape);
    shape[indices->dim] = dim;
    EK_TRY(ek_resize_out(ctx, out, shape, indices->dim + 1));
    EK_TRY(ek_check_contiguous(ctx, out, "out"));
    if (indices->numel == 0 || dim == 0) return EMBER_OK;

    int64_t isizes[EMBER_MAX_DIM], istrides[1][EMBER_MAX_DIM];
    ek_sizes64(indices, isizes);
    for (size_t d = 0; d < indices->dim; d++) istrides[0][d] = indices->strides[d];
    /* every index first, so that a bad one leaves out untouched */
    int64_t idx[EMBER_MAX_DIM] = {0}, off[1] = {0};
    do {
        int64_t r = index_at(indices, off[0]);
        if (r < 0 || r >= vocab)
            return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                     "%s: index %lld out of range [0, %lld)", op, (long long)r,
                                     (long long)vocab);
    } while (
        ek_advance(idx, isizes, indices->dim, 1, (const int64_t(*)[EMBER_MAX_DIM])istrides, off));

    ek_load_fn load_scale = ek_loader(scales->dtype, EK_CT_F32);
    ek_load_fn load_zp = zps != NULL ? ek_loader(zps->dtype, EK_CT_F32) : NULL;
    size_t esize = ember_dtype_size(want);
    char *dst = (char *)out->data; /* (numel(indices), D) */
    float buf[EK_CHUNK];
    memset(idx, 0, sizeof idx);
    off[0] = 0;
    do {
        int64_t r = index_at(indices, off[0]);
        /* r < V and the row's G parameters and C bytes lie inside their tensors */
        const uint8_t *row = (const uint8_t *)weight->data + (size_t)r * (size_t)packed;
        for (int64_t g = 0; g < groups; g++) {
            float scale, zp = 0.0f;
            int64_t p = r * groups + g;
            load_scale(&scale, (const char *)scales->data + (size_t)p * ember_dtype_size(scales->dtype),
                       1, 1);
            if (load_zp != NULL)
                load_zp(&zp, (const char *)zps->data + (size_t)p * ember_dtype_size(zps->dtype), 1,
                        1);
            for (int64_t j0 = g * group_size; j0 < (g + 1) * group_size; j0 += EK_CHUNK) {
                int64_t n = (g + 1) * group_size - j0;
                if (n > EK_CHUNK) n = EK_CHUNK;
                for (int64_t k = 0; k < n; k++)
                    buf[k] = ((float)spec->value(row, j0 + k, int8_weight) - zp) * scale;
                store(dst + (size_t)j0 * esize, 1, buf, (size_t)n);
            }
        }
        dst += (size_t)dim * esize;
    } while (
        ek_advance(idx, isizes, indices->dim, 1, (const int64_t(*)[EMBER_MAX_DIM])istrides, off));
    return EMBER_OK;
}
