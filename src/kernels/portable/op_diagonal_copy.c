/*
 * aten::diagonal_copy.out(Tensor self, int offset=0, int dim1=0, int dim2=1, *,
 *     Tensor(a!) out)
 *
 * The diagonal of the (dim1, dim2) planes of self, offset above (offset > 0)
 * or below the main one: out has self's dims without dim1 and dim2, then the
 * diagonal's length (0 when offset leaves the plane). Every dtype.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_diagonal_copy_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    int64_t offset, dim1, dim2;
    size_t d1, d2;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_int(ctx, args, 1, &offset));
    EK_TRY(ek_arg_int(ctx, args, 2, &dim1));
    EK_TRY(ek_arg_int(ctx, args, 3, &dim2));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    EK_TRY(ek_check_same_dtype(ctx, self, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, self));
    if (self->dim < 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "diagonal: self must have at least 2 dims, got %u",
                                 (unsigned)self->dim);
    EK_TRY(ek_norm_dim(ctx, dim1, self->dim, &d1));
    EK_TRY(ek_norm_dim(ctx, dim2, self->dim, &d2));
    if (d1 == d2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "diagonal: dim1 and dim2 are both %zu", d1);
    int64_t s1 = self->sizes[d1], s2 = self->sizes[d2];
    /* offsets beyond the plane give an empty diagonal (and no overflow) */
    int64_t len = 0, start = 0;
    if (offset >= 0 && offset < s2) {
        len = s1 < s2 - offset ? s1 : s2 - offset;
        start = offset * self->strides[d2];
    } else if (offset < 0 && offset > -s1) {
        len = s1 + offset < s2 ? s1 + offset : s2;
        start = -offset * self->strides[d1];
    }
    int64_t shape[EMBER_MAX_DIM], src_strides[EMBER_MAX_DIM];
    size_t n = 0;
    for (size_t k = 0; k < self->dim; k++) {
        if (k == d1 || k == d2) continue;
        shape[n] = self->sizes[k];
        src_strides[n] = self->strides[k];
        n++;
    }
    shape[n] = len;
    src_strides[n] = self->strides[d1] + self->strides[d2];
    n++;
    EK_TRY(ek_resize_out(ctx, out, shape, n));
    if (out->numel == 0) return EMBER_OK;
    ek_copy_block(out->data, 0, out->strides, self->data, start, src_strides, shape, n,
                  ember_dtype_size(self->dtype));
    return EMBER_OK;
}
