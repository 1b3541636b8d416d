/*
 * aten::repeat.out(Tensor self, SymInt[] repeats, *, Tensor(a!) out)
 *
 * Tiles self: with self padded with leading 1s to len(repeats) dims,
 * out.shape[i] = self.shape[i] * repeats[i]; every tile is a copy of self.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_repeat_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *reps;
    size_t n;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &reps, &n));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    if (n < in->dim || n > EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "repeat: %zu repeats for a tensor of rank %u", n,
                                 (unsigned)in->dim);
    size_t lead = n - in->dim;
    int64_t tile[EMBER_MAX_DIM], src_st[EMBER_MAX_DIM], shape[EMBER_MAX_DIM];
    for (size_t i = 0; i < n; i++) {
        if (reps[i] < 0 || reps[i] > INT32_MAX)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "repeat: count %lld invalid",
                                     (long long)reps[i]);
        tile[i] = i < lead ? 1 : in->sizes[i - lead];
        src_st[i] = i < lead ? 0 : in->strides[i - lead];
        shape[i] = tile[i] * reps[i]; /* both < 2^31: fits; the resize bounds it */
    }
    EK_TRY(ek_resize_out(ctx, out, shape, n));
    if (out->numel == 0) return EMBER_OK;
    /* walk the tile grid; tile t starts at sum t[i] * tile[i] * out.strides[i] */
    int64_t grid[EMBER_MAX_DIM], gst[1][EMBER_MAX_DIM], idx[EMBER_MAX_DIM] = {0}, off[1] = {0};
    for (size_t i = 0; i < n; i++) {
        grid[i] = reps[i];
        gst[0][i] = tile[i] * out->strides[i];
    }
    do {
        ek_copy_block(out->data, off[0], out->strides, in->data, 0, src_st, tile, n,
                      ember_dtype_size(in->dtype));
    } while (ek_advance(idx, grid, n, 1, (const int64_t(*)[EMBER_MAX_DIM])gst, off));
    return EMBER_OK;
}
