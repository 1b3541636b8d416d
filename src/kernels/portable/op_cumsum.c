/*
 * aten::cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out)
 *
 * Running sums along dim, in double for floats and int64 for integers,
 * written in out's dtype (the dtype argument must match it).
 */
#include "kernel_util.h"
#include "ops.h"

ember_status ek_op_cumsum_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    int64_t dim;
    size_t d;
    EK_TRY(ek_check_nargs(ctx, nargs, 5));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(ek_arg_out(ctx, args, 3, &out));
    EK_TRY(ek_arg_check_dtype(ctx, args, 2, out->dtype));
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    if (ek_is_float(in->dtype) && !ek_is_float(out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "cumsum: cannot write %s sums to %s",
                                 ember_dtype_name(in->dtype), ember_dtype_name(out->dtype));
    EK_TRY(ek_norm_dim(ctx, dim, in->dim, &d));
    EK_TRY(ek_resize_like(ctx, out, in));
    if (out->numel == 0) return EMBER_OK;

    /* the other dims index runs; each run is walked along d */
    int64_t sizes[EMBER_MAX_DIM], st[2][EMBER_MAX_DIM];
    size_t n = 0;
    for (size_t k = 0; k < in->dim; k++) {
        if (k == d) continue;
        sizes[n] = in->sizes[k];
        st[0][n] = out->strides[k];
        st[1][n] = in->strides[k];
        n++;
    }
    int64_t len = in->dim == 0 ? 1 : in->sizes[d];
    int64_t ist = in->dim == 0 ? 0 : in->strides[d], ost = in->dim == 0 ? 0 : out->strides[d];
    bool use_double = ek_is_float(in->dtype) || ek_is_float(out->dtype);
    ek_ctype ct = use_double ? EK_CT_F64 : EK_CT_I64;
    ek_load_fn load = ek_loader(in->dtype, ct);
    ek_store_fn store = ek_storer(out->dtype, ct);
    int64_t isz = (int64_t)ember_dtype_size(in->dtype), osz = (int64_t)ember_dtype_size(out->dtype);
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2] = {0, 0};
    do {
        double dacc = 0.0;
        uint64_t iacc = 0;
        for (int64_t j = 0; j < len; j++) {
            const char *src = (const char *)in->data + (off[1] + j * ist) * isz;
            char *dst = (char *)out->data + (off[0] + j * ost) * osz;
            if (use_double) {
                double v;
                load(&v, src, 1, 1);
                dacc += v;
                store(dst, 1, &dacc, 1);
            } else {
                int64_t v;
                load(&v, src, 1, 1);
                iacc += (uint64_t)v;
                int64_t r = (int64_t)iacc;
                store(dst, 1, &r, 1);
            }
        }
    } while (ek_advance(idx, sizes, n, 2, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    return EMBER_OK;
}
