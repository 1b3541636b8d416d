/*
 * aten::native_dropout.out(Tensor input, float p, bool? train, *, Tensor(a!) out0,
 *     Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))
 *
 * Training (train true or None): each element is kept with probability
 * 1 - p; out1 (bool) is the mask and out0 = input * mask / (1 - p), or 0
 * everywhere when p is 1. Float dtypes; p in [0, 1]. Evaluation (train
 * false): out0 is a copy of input (any dtype) and out1 is all true.
 * The mask comes from the portable kernels' generator (rng_util.h).
 * Arguments: 3 inputs, 2 outs, TensorList (6).
 */
#include "kernel_util.h"
#include "ops.h"
#include "rng_util.h"

ember_status ek_op_native_dropout_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out, *mask;
    double p;
    bool train = true;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_double(ctx, args, 1, &p));
    if (args[2]->tag != EMBER_TAG_NONE) EK_TRY(ek_arg_bool(ctx, args, 2, &train));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(ek_arg_out(ctx, args, 4, &mask));
    EK_TRY(ek_check_supported(ctx, in->dtype, "input"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "input and out0"));
    if (mask->dtype != EMBER_BOOL)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "out1 (the mask) must be bool, got %s",
                                 ember_dtype_name(mask->dtype));
    EK_TRY(ek_check_no_alias(ctx, mask, in));
    EK_TRY(ek_check_no_alias(ctx, mask, out));
    if (train) {
        EK_TRY(ek_check_float(ctx, in->dtype, "native_dropout input (training)"));
        if (!(p >= 0.0 && p <= 1.0))
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                     "native_dropout: p must be in [0, 1], got %g", p);
    }
    EK_TRY(ek_resize_like(ctx, out, in));
    EK_TRY(ek_resize_like(ctx, mask, in));
    if (in->numel == 0) return EMBER_OK;
    uint8_t *m = (uint8_t *)mask->data;
    if (!train) {
        ek_copy_tensor(out, in);
        for (int64_t i = 0; i < mask->numel; i++) m[i] = 1; /* dense: any order */
        return EMBER_OK;
    }

    /* walk out0, mask and input together, row-major over input's shape */
    int64_t sizes[EMBER_MAX_DIM], st[3][EMBER_MAX_DIM];
    ek_sizes64(in, sizes);
    for (size_t d = 0; d < in->dim; d++) {
        st[0][d] = out->strides[d];
        st[1][d] = mask->strides[d];
        st[2][d] = in->strides[d];
    }
    double keep = 1.0 - p, scale = keep == 0.0 ? 0.0 : 1.0 / keep;
    ek_load_fn load = ek_loader(in->dtype, EK_CT_F64);
    ek_store_fn store = ek_storer(out->dtype, EK_CT_F64);
    int64_t es = (int64_t)ember_dtype_size(in->dtype);
    ek_rng r;
    ek_rng_open(&r);
    int64_t idx[EMBER_MAX_DIM] = {0}, off[3] = {0, 0, 0};
    do {
        /* u < keep with u in [0, 1): keep 0 never keeps, keep 1 always does */
        bool kept = ek_rng_uniform(&r, 53) < keep;
        double x;
        load(&x, (const char *)in->data + off[2] * es, 1, 1);
        double y = kept ? x * scale : 0.0 * x; /* 0 * NaN stays NaN, as input * 0 does */
        store((char *)out->data + off[0] * es, 1, &y, 1);
        m[off[1]] = kept ? 1 : 0;
    } while (ek_advance(idx, sizes, in->dim, 3, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    return EMBER_OK;
}
