/*
 * aten::convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride,
 *     SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding,
 *     SymInt groups, *, Tensor(a!) out)
 *
 * 1-d, 2-d and 3-d convolution, grouped, strided, padded and dilated, plus
 * its transpose. All ranks run as 3-d: 2-d with depth 1, 1-d with depth and
 * height 1. Float convolutions run as matrix products (on x itself for 1x1,
 * else on im2col tiles in scratch);
 * the rest, and any without scratch, in a direct loop. Tensors may be in any
 * dim order (channels last, ...): the loops walk their strides. Geometry
 * and loops live in conv_util.c (shared with convolution_backward).
 *
 *   input  (N, C_in, [[D,] H,] W)
 *   weight (C_out, C_in / groups, [[KD,] KH,] KW)        or, transposed,
 *          (C_in, C_out / groups, [[KD,] KH,] KW)
 *   out    (N, C_out, [[OD,] OH,] OW)
 *
 * Float dtypes (accumulated in float or double) and integer dtypes (wrapping
 * 64-bit accumulation, as PyTorch's integer convolution).
 */
#include "conv_util.h"
#include "ops.h"

ember_status ek_op_convolution_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *wt, *bias, *out;
    const int64_t *l_stride, *l_pad, *l_dil, *l_opad;
    size_t n_stride, n_pad, n_dil, n_opad;
    bool transposed;
    int64_t groups;
    EK_TRY(ek_check_nargs(ctx, nargs, 11));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &wt));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 2, &bias));
    EK_TRY(ek_arg_int_list(ctx, args, 3, &l_stride, &n_stride));
    EK_TRY(ek_arg_int_list(ctx, args, 4, &l_pad, &n_pad));
    EK_TRY(ek_arg_int_list(ctx, args, 5, &l_dil, &n_dil));
    EK_TRY(ek_arg_bool(ctx, args, 6, &transposed));
    EK_TRY(ek_arg_int_list(ctx, args, 7, &l_opad, &n_opad));
    EK_TRY(ek_arg_int(ctx, args, 8, &groups));
    EK_TRY(ek_arg_out(ctx, args, 9, &out));

    ek_conv_geom g;
    EK_TRY(ek_conv_geom_init(ctx, &g, in, wt, l_stride, n_stride, l_pad, n_pad, l_dil, n_dil,
                             transposed, l_opad, n_opad, groups));
    if (bias != NULL && (bias->dim != 1 || bias->sizes[0] != g.cout))
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "convolution: bias must have shape (%lld)", (long long)g.cout);

    if (!ek_is_float(in->dtype) && !ek_is_int(in->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED, "convolution: dtype %s not supported",
                                 ember_dtype_name(in->dtype));
    EK_TRY(ek_check_same_dtype(ctx, in, wt, "convolution input and weight"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "convolution input and out"));
    if (bias != NULL) EK_TRY(ek_check_same_dtype(ctx, in, bias, "convolution input and bias"));

    const int64_t *shape = g.out_shape;
    EK_TRY(ek_resize_out(ctx, out, shape, in->dim));
    if (out->numel == 0) return EMBER_OK;
    if (in->numel == 0 || wt->numel == 0) {
        /* no products: out is the bias (or zero) */
        const ember_tensor *ins[1] = {bias};
        if (bias == NULL) {
            ek_scalar zero = ek_scalar_from_int(0);
            char elem[8];
            ek_scalar_store(out->dtype, &zero, elem);
            ek_fill_bytes(out->data, out->numel, elem, ember_dtype_size(out->dtype));
            return EMBER_OK;
        }
        /* bias (C_out) broadcast over (N, C_out, spatial...) via a (C_out, 1, ...) view */
        int32_t bsz[4] = {(int32_t)g.cout, 1, 1, 1};
        int64_t bst[4] = {1, 0, 0, 0};
        uint8_t border[4] = {0, 1, 2, 3};
        ember_tensor bview = *bias;
        bview.dim = (uint32_t)in->dim - 1;
        bview.sizes = bsz;
        bview.bounds = bsz;
        bview.strides = bst;
        bview.dim_order = border;
        ins[0] = &bview;
        return ek_map_tensors_to(ctx, out, shape, in->dim, ins, 1, ek_ctype_of(out->dtype),
                                 &ek_map_identity, NULL);
    }
    /* Any dim order (channels last included): the loop walks the strides. */
    ek_conv_strides st;
    ek_conv_strides_of(&g, in, st.x);
    ek_conv_strides_of(&g, wt, st.w);
    ek_conv_strides_of(&g, out, st.out);
    const void *bias_data = bias != NULL ? bias->data : NULL;
    return ek_conv_run_strided(ctx, in->dtype, out->data, in->data, wt->data, bias_data, &g, &st);
}
