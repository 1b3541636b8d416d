/*
 * aten::constant_pad_nd.out(Tensor self, SymInt[] pad, Scalar value=0, *, Tensor(a!) out)
 *
 * pad = (left, right) pairs starting from the last dim; negative pads crop.
 * out is filled with value, then the overlapping block of self is copied in.
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_constant_pad_nd_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *pad;
    size_t npad;
    ek_scalar value;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &pad, &npad));
    EK_TRY(ek_arg_scalar(ctx, args, 2, &value));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "self and out"));
    EK_TRY(ek_check_no_alias(ctx, out, in));
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    if (npad % 2 != 0 || npad / 2 > in->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "constant_pad_nd: %zu pad values for a tensor of rank %u", npad,
                                 (unsigned)in->dim);
    int64_t shape[EMBER_MAX_DIM], lo[EMBER_MAX_DIM];
    int64_t src_off = 0, block[EMBER_MAX_DIM];
    for (size_t d = 0; d < in->dim; d++) {
        size_t k = in->dim - 1 - d; /* pair k pads dim d counted from the end */
        int64_t l = 0, r = 0;
        if (2 * k < npad) {
            l = pad[2 * k];
            r = pad[2 * k + 1];
        }
        if (l < -(int64_t)INT32_MAX || l > INT32_MAX || r < -(int64_t)INT32_MAX || r > INT32_MAX)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "constant_pad_nd: pad out of range");
        shape[d] = in->sizes[d] + l + r;
        if (shape[d] < 0)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "constant_pad_nd: dim %zu would have negative size", d);
        lo[d] = l;
    }
    EK_TRY(ek_resize_out(ctx, out, shape, in->dim));
    if (out->numel == 0) return EMBER_OK;
    uint8_t elem[8];
    ek_scalar_store(out->dtype, &value, elem);
    ek_fill_bytes(out->data, out->numel, elem, ember_dtype_size(out->dtype));

    int64_t dst_off = 0;
    for (size_t d = 0; d < in->dim; d++) {
        int64_t s0 = lo[d] < 0 ? -lo[d] : 0; /* first self index kept */
        int64_t d0 = lo[d] > 0 ? lo[d] : 0;  /* where it lands in out */
        int64_t len = in->sizes[d] - s0;
        if (len > shape[d] - d0) len = shape[d] - d0;
        if (len <= 0) return EMBER_OK; /* nothing of self survives */
        block[d] = len;
        src_off += s0 * in->strides[d];
        dst_off += d0 * out->strides[d];
    }
    ek_copy_block(out->data, dst_off, out->strides, in->data, src_off, in->strides, block, in->dim,
                  ember_dtype_size(in->dtype));
    return EMBER_OK;
}
