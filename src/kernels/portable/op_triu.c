/*
 * aten::triu.out(Tensor self, SymInt diagonal=0, *, Tensor(a!) out)
 * aten::tril.out(Tensor self, SymInt diagonal=0, *, Tensor(a!) out)
 *
 * Keeps the elements on and above (triu) or below (tril) the given
 * diagonal of the last two dims (j - i >= diagonal, resp. <=); zeroes the
 * rest. All-zero bytes are zero in every dtype.
 */
#include <string.h>

#include "kernel_util.h"
#include "ops.h"

static ember_status tri(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, bool upper) {
    ember_tensor *in, *out;
    int64_t diag;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &diag));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    if (in->dim < 2)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: input must have at least 2 dims", upper ? "triu" : "tril");
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_resize_like(ctx, out, in));
    if (out->numel == 0) return EMBER_OK;
    ek_copy_tensor(out, in);

    /* clear the other triangle of every (rows, cols) matrix of out */
    size_t r = out->dim, nb = r - 2;
    int64_t rows = out->sizes[r - 2], cols = out->sizes[r - 1];
    int64_t rs = out->strides[r - 2], cs = out->strides[r - 1];
    int64_t bsizes[EMBER_MAX_DIM], bstrides[1][EMBER_MAX_DIM];
    for (size_t d = 0; d < nb; d++) {
        bsizes[d] = out->sizes[d];
        bstrides[0][d] = out->strides[d];
    }
    size_t esize = ember_dtype_size(out->dtype);
    int64_t idx[EMBER_MAX_DIM] = {0}, off[1] = {0};
    do {
        char *m = (char *)out->data + off[0] * (int64_t)esize;
        for (int64_t i = 0; i < rows; i++) {
            for (int64_t j = 0; j < cols; j++) {
                /* j - i cannot overflow: both are below 2^31 */
                bool keep = upper ? (j - i >= diag) : (j - i <= diag);
                if (!keep) memset(m + (i * rs + j * cs) * (int64_t)esize, 0, esize);
            }
        }
    } while (ek_advance(idx, bsizes, nb, 1, (const int64_t(*)[EMBER_MAX_DIM])bstrides, off));
    return EMBER_OK;
}

ember_status ek_op_triu_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return tri(ctx, args, nargs, true);
}

ember_status ek_op_tril_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return tri(ctx, args, nargs, false);
}
