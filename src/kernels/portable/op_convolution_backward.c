/*
 * aten::convolution_backward.out(Tensor grad_output, Tensor input, Tensor weight,
 *     SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation,
 *     bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask, *,
 *     Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))
 *
 * Gradients of convolution.out for the outputs output_mask selects:
 *   out0 grad_input  (input's shape):  the transpose of the forward
 *        convolution applied to grad_output (a transposed forward's is a plain
 *        convolution), run by the forward's own loop (conv_util.c);
 *   out1 grad_weight (weight's shape): for every tap, the sum over the batch
 *        and positions of grad_output times the input it multiplied;
 *   out2 grad_bias   (C_out):          grad_output summed per channel.
 * An output that output_mask leaves out is not touched (it may be None).
 * 1-d, 2-d and 3-d, grouped, strided, padded, dilated, transposed; float dtypes,
 * contiguous. Arguments: 11 inputs, 3 outs, TensorList (15).
 */
#include "conv_util.h"
#include "ops.h"

/*
 * Weight gradient in one loop for both directions. The weight (W0, W1, KD,
 * KH, KW) pairs a channel of A (W0, all of them) with a channel of B within
 * W0's group (W1), and A's position p meets B's position p * s - pad + k * d
 * in each spatial dim:
 *   plain:      A = grad_output (C_out, OD, OH, OW), B = input (C_in, D, H, W);
 *   transposed: A = input (C_in, D, H, W), B = grad_output (C_out, OD, OH, OW).
 */
typedef struct wgrad_geom {
    int64_t n, ca, ad, ah, aw, cb, bd, bh, bw;
} wgrad_geom;

#define DEF_CONV_WGRAD(SFX, T, CT, LOAD, STORE)                                                    \
    static void conv_wgrad_##SFX(T *gw, const T *a, const T *b, const wgrad_geom *w,               \
                                 const ek_conv_geom *g) {                                          \
        const int64_t cag = w->ca / g->groups, cbg = w->cb / g->groups;                            \
        const int64_t asz = w->ad * w->ah * w->aw, bsz = w->bd * w->bh * w->bw;                    \
        for (int64_t w0 = 0; w0 < w->ca; w0++) {                                                   \
            const int64_t grp = w0 / cag;                                                          \
            for (int64_t w1 = 0; w1 < cbg; w1++) {                                                 \
                const int64_t cb = grp * cbg + w1;                                                 \
                T *gp = gw + (w0 * cbg + w1) * g->kd * g->kh * g->kw; /* (KD, KH, KW) */           \
                for (int64_t kz = 0; kz < g->kd; kz++) {                                           \
                    for (int64_t ky = 0; ky < g->kh; ky++) {                                       \
                        for (int64_t kx = 0; kx < g->kw; kx++) {                                   \
                            CT acc = 0;                                                            \
                            for (int64_t n = 0; n < w->n; n++) {                                   \
                                const T *ap = a + (n * w->ca + w0) * asz; /* (AD, AH, AW) */       \
                                const T *bp = b + (n * w->cb + cb) * bsz; /* (BD, BH, BW) */       \
                                for (int64_t pz = 0; pz < w->ad; pz++) {                           \
                                    int64_t qz = pz * g->sd - g->pd + kz * g->dd;                  \
                                    if (qz < 0 || qz >= w->bd) continue;                           \
                                    for (int64_t py = 0; py < w->ah; py++) {                       \
                                        int64_t qy = py * g->sh - g->ph + ky * g->dh;              \
                                        if (qy < 0 || qy >= w->bh) continue;                       \
                                        const T *arow = ap + (pz * w->ah + py) * w->aw;            \
                                        const T *brow = bp + (qz * w->bh + qy) * w->bw;            \
                                        for (int64_t px = 0; px < w->aw; px++) {                   \
                                            int64_t qx = px * g->sw - g->pw + kx * g->dw;          \
                                            if (qx < 0 || qx >= w->bw) continue;                   \
                                            acc += LOAD(arow[px]) * LOAD(brow[qx]);                \
                                        }                                                          \
                                    }                                                              \
                                }                                                                  \
                            }                                                                      \
                            gp[(kz * g->kh + ky) * g->kw + kx] = STORE(acc);                       \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_CONV_WGRAD)

/* grad_bias[c] = sum of grad_output over the batch and positions of channel c. */
#define DEF_CONV_BGRAD(SFX, T, CT, LOAD, STORE)                                                    \
    static void conv_bgrad_##SFX(T *gb, const T *gout, int64_t n, int64_t c, int64_t hw) {         \
        for (int64_t ch = 0; ch < c; ch++) {                                                       \
            CT acc = 0;                                                                            \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const T *gp = gout + (i * c + ch) * hw; /* (OD * OH * OW) */                       \
                for (int64_t k = 0; k < hw; k++) acc += LOAD(gp[k]);                               \
            }                                                                                      \
            gb[ch] = STORE(acc);                                                                   \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_CONV_BGRAD)

static void fill_zero(ember_tensor *t) {
    ek_scalar zero = ek_scalar_from_int(0);
    char elem[8];
    ek_scalar_store(t->dtype, &zero, elem);
    ek_fill_bytes(t->data, t->numel, elem, ember_dtype_size(t->dtype));
}

/* Resizes a requested output to shape and checks its dtype and layout. */
static ember_status prepare_out(ember_kernel_ctx *ctx, ember_tensor *out, const ember_tensor *like,
                                const int64_t *shape, size_t dim, const char *what) {
    EK_TRY(ek_check_same_dtype(ctx, like, out, what));
    EK_TRY(ek_resize_out(ctx, out, shape, dim));
    return ek_check_contiguous(ctx, out, what);
}

ember_status ek_op_convolution_backward_out(ember_kernel_ctx *ctx, ember_value **args,
                                            size_t nargs) {
    ember_tensor *gout, *in, *wt, *outs[3] = {NULL, NULL, NULL};
    const int64_t *l_bias, *l_stride, *l_pad, *l_dil, *l_opad;
    size_t n_bias, n_stride, n_pad, n_dil, n_opad, n_mask;
    bool transposed, has_bias_sizes;
    const bool *mask;
    int64_t groups;
    EK_TRY(ek_check_nargs(ctx, nargs, 15));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &gout));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &in));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &wt));
    EK_TRY(ek_arg_opt_int_list(ctx, args, 3, &l_bias, &n_bias, &has_bias_sizes));
    EK_TRY(ek_arg_int_list(ctx, args, 4, &l_stride, &n_stride));
    EK_TRY(ek_arg_int_list(ctx, args, 5, &l_pad, &n_pad));
    EK_TRY(ek_arg_int_list(ctx, args, 6, &l_dil, &n_dil));
    EK_TRY(ek_arg_bool(ctx, args, 7, &transposed));
    EK_TRY(ek_arg_int_list(ctx, args, 8, &l_opad, &n_opad));
    EK_TRY(ek_arg_int(ctx, args, 9, &groups));
    EK_TRY(ek_arg_bool_list(ctx, args, 10, &mask, &n_mask));
    if (n_mask != 3)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "convolution_backward: output_mask has %zu values, not 3",
                                 n_mask);
    for (size_t k = 0; k < 3; k++)
        if (mask[k]) EK_TRY(ek_arg_out(ctx, args, 11 + k, &outs[k]));

    ek_conv_geom g;
    EK_TRY(ek_conv_geom_init(ctx, &g, in, wt, l_stride, n_stride, l_pad, n_pad, l_dil, n_dil,
                             transposed, l_opad, n_opad, groups));
    bool same = gout->dim == in->dim;
    for (size_t d = 0; same && d < in->dim; d++) same = gout->sizes[d] == g.out_shape[d];
    if (!same) {
        char got[96], want[96];
        int32_t w32[5];
        for (size_t d = 0; d < in->dim; d++) w32[d] = (int32_t)g.out_shape[d];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "convolution_backward: grad_output has shape %s, the convolution "
                                 "gives %s",
                                 ek_shape_str(got, sizeof got, gout->sizes, gout->dim),
                                 ek_shape_str(want, sizeof want, w32, in->dim));
    }
    if (has_bias_sizes && (n_bias != 1 || l_bias[0] != g.cout))
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "convolution_backward: bias_sizes must be [%lld]",
                                 (long long)g.cout);
    EK_TRY(ek_check_float(ctx, in->dtype, "convolution_backward"));
    EK_TRY(ek_check_same_dtype(ctx, in, gout, "convolution_backward input and grad_output"));
    EK_TRY(ek_check_same_dtype(ctx, in, wt, "convolution_backward input and weight"));
    EK_TRY(ek_check_contiguous(ctx, gout, "convolution_backward grad_output"));
    EK_TRY(ek_check_contiguous(ctx, in, "convolution_backward input"));
    EK_TRY(ek_check_contiguous(ctx, wt, "convolution_backward weight"));
    for (size_t k = 0; k < 3; k++) {
        if (outs[k] == NULL) continue;
        EK_TRY(ek_check_no_alias(ctx, outs[k], gout));
        EK_TRY(ek_check_no_alias(ctx, outs[k], in));
        EK_TRY(ek_check_no_alias(ctx, outs[k], wt));
    }

    int64_t wshape[EMBER_MAX_DIM], ishape[EMBER_MAX_DIM];
    ek_sizes64(wt, wshape);
    ek_sizes64(in, ishape);
    const int64_t bshape[1] = {g.cout};
    if (outs[0] != NULL)
        EK_TRY(prepare_out(ctx, outs[0], in, ishape, in->dim, "convolution_backward out0"));
    if (outs[1] != NULL)
        EK_TRY(prepare_out(ctx, outs[1], in, wshape, wt->dim, "convolution_backward out1"));
    if (outs[2] != NULL)
        EK_TRY(prepare_out(ctx, outs[2], in, bshape, 1, "convolution_backward out2"));

    /* no products at all: every gradient is zero */
    bool empty = gout->numel == 0 || in->numel == 0 || wt->numel == 0;
    if (empty) {
        for (size_t k = 0; k < 3; k++)
            if (outs[k] != NULL && outs[k]->numel > 0) fill_zero(outs[k]);
        if (outs[2] != NULL && outs[2]->numel > 0 && gout->numel > 0)
            EK_FLOAT_SWITCH(ctx, in->dtype, conv_bgrad, outs[2]->data, gout->data, g.n, g.cout,
                            g.od * g.oh * g.ow);
        return EMBER_OK;
    }
    if (outs[0] != NULL) {
        /* the input gradient is the opposite-direction convolution of grad_output */
        ek_conv_geom gi = g;
        gi.cin = g.cout;
        gi.d = g.od;
        gi.h = g.oh;
        gi.w = g.ow;
        gi.cout = g.cin;
        gi.od = g.d;
        gi.oh = g.h;
        gi.ow = g.w;
        gi.transposed = !g.transposed;
        EK_TRY(ek_conv_run(ctx, in->dtype, outs[0]->data, gout->data, wt->data, NULL, &gi));
    }
    if (outs[1] != NULL) {
        wgrad_geom w;
        const void *a, *b;
        w.n = g.n;
        if (!g.transposed) {
            w.ca = g.cout, w.ad = g.od, w.ah = g.oh, w.aw = g.ow, a = gout->data;
            w.cb = g.cin, w.bd = g.d, w.bh = g.h, w.bw = g.w, b = in->data;
        } else {
            w.ca = g.cin, w.ad = g.d, w.ah = g.h, w.aw = g.w, a = in->data;
            w.cb = g.cout, w.bd = g.od, w.bh = g.oh, w.bw = g.ow, b = gout->data;
        }
        EK_FLOAT_SWITCH(ctx, in->dtype, conv_wgrad, outs[1]->data, a, b, &w, &g);
    }
    if (outs[2] != NULL)
        EK_FLOAT_SWITCH(ctx, in->dtype, conv_bgrad, outs[2]->data, gout->data, g.n, g.cout,
                        g.od * g.oh * g.ow);
    return EMBER_OK;
}
