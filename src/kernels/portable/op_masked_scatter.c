/*
 * aten::masked_scatter.out(Tensor self, Tensor mask, Tensor source, *, Tensor(a!) out)
 *
 * self and mask (bool) broadcast together to out's shape; walking out in
 * row-major order, each position where mask is true takes the next element
 * of source (read in source's own row-major order), the others take self.
 * source needs at least as many elements as mask has true positions, which
 * is checked at execute: EMBER_ERR_DATA_OUT_OF_BOUNDS. Every dtype; source
 * has self's dtype.
 */
#include <string.h>

#include "kernel_util.h"
#include "ops.h"

/* Strides of t broadcast to shape[0..dim): 0 where t has no dim or size 1. */
static void broadcast_strides(const ember_tensor *t, const int64_t *shape, size_t dim,
                              int64_t *st) {
    size_t lead = dim - t->dim;
    for (size_t k = 0; k < dim; k++) {
        if (k < lead) {
            st[k] = 0;
        } else {
            size_t j = k - lead;
            st[k] = t->sizes[j] == 1 && shape[k] != 1 ? 0 : t->strides[j];
        }
    }
}

ember_status ek_op_masked_scatter_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *mask, *source, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &mask));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &source));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "masked_scatter self"));
    if (mask->dtype != EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "masked_scatter: mask must be bool, got %s",
                                 ember_dtype_name(mask->dtype));
    EK_TRY(ek_check_same_dtype(ctx, self, source, "self and source"));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, self));
    EK_TRY(ek_check_no_alias(ctx, out, mask));
    EK_TRY(ek_check_no_alias(ctx, out, source));
    const ember_tensor *both[2] = {self, mask};
    int64_t shape[EMBER_MAX_DIM];
    size_t dim;
    EK_TRY(ek_broadcast_shape(ctx, both, 2, shape, &dim));
    EK_TRY(ek_resize_out(ctx, out, shape, dim));
    if (out->numel == 0) return EMBER_OK;

    /* operands: out, self, mask (broadcast); source walks its own counter */
    int64_t st[3][EMBER_MAX_DIM], pos[EMBER_MAX_DIM] = {0}, off[3] = {0, 0, 0};
    for (size_t k = 0; k < dim; k++) st[0][k] = out->strides[k];
    broadcast_strides(self, shape, dim, st[1]);
    broadcast_strides(mask, shape, dim, st[2]);
    int64_t ssizes[EMBER_MAX_DIM], sst[1][EMBER_MAX_DIM], spos[EMBER_MAX_DIM] = {0}, soff[1] = {0};
    ek_sizes64(source, ssizes);
    for (size_t k = 0; k < source->dim; k++) sst[0][k] = source->strides[k];
    int64_t used = 0;
    size_t es = ember_dtype_size(out->dtype);
    char *o = (char *)out->data;
    const char *s = (const char *)self->data, *src = (const char *)source->data;
    const uint8_t *m = (const uint8_t *)mask->data;
    do {
        if (m[off[2]] != 0) {
            if (used >= source->numel)
                return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                         "masked_scatter: source has %lld elements, fewer than "
                                         "the true positions of mask",
                                         (long long)source->numel);
            memcpy(o + off[0] * (int64_t)es, src + soff[0] * (int64_t)es, es);
            used++;
            ek_advance(spos, ssizes, source->dim, 1, (const int64_t(*)[EMBER_MAX_DIM])sst, soff);
        } else {
            memcpy(o + off[0] * (int64_t)es, s + off[1] * (int64_t)es, es);
        }
    } while (ek_advance(pos, shape, dim, 3, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    return EMBER_OK;
}
