/*
 * pool_util.c — shared geometry of the 2-d pooling kernels.
 */
#include "pool_util.h"

/* Bounds parameters so that every index computation fits in int64. */
#define POOL_PARAM_MAX ((int64_t)1 << 30)

static ember_status pair(ember_kernel_ctx *ctx, const int64_t *items, size_t len, int64_t lo,
                         const char *what, int64_t *a, int64_t *b) {
    if (len != 1 && len != 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "pool: %s must have 1 or 2 values", what);
    *a = items[0];
    *b = items[len - 1];
    if (*a < lo || *b < lo || *a > POOL_PARAM_MAX || *b > POOL_PARAM_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "pool: %s out of range", what);
    return EMBER_OK;
}

/* floor((in + 2 pad - dil (k - 1) - 1 + (ceil ? s - 1 : 0)) / s) + 1, then
 * in ceil mode the last window must start inside the input or left pad. */
static int64_t out_size(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t dil,
                        bool ceil_mode) {
    int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t q = num / s;
    if (num % s != 0 && num < 0) q -= 1; /* round toward -inf */
    int64_t o = q + 1;
    if (ceil_mode && (o - 1) * s >= in + pad) o -= 1;
    return o;
}

ember_status ek_pool2d_init(ember_kernel_ctx *ctx, ek_pool2d *p, const ember_tensor *in,
                            const int64_t *ks, size_t nks, const int64_t *st, size_t nst,
                            const int64_t *pd, size_t npd, const int64_t *dl, size_t ndl,
                            bool ceil_mode) {
    if (in->dim != 3 && in->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "pool: expected a 3-d or 4-d input, got %u-d", (unsigned)in->dim);
    EK_TRY(pair(ctx, ks, nks, 1, "kernel_size", &p->kh, &p->kw));
    if (nst == 0) {
        p->sh = p->kh;
        p->sw = p->kw;
    } else {
        EK_TRY(pair(ctx, st, nst, 1, "stride", &p->sh, &p->sw));
    }
    EK_TRY(pair(ctx, pd, npd, 0, "padding", &p->ph, &p->pw));
    if (dl == NULL) {
        p->dh = p->dw = 1;
    } else {
        EK_TRY(pair(ctx, dl, ndl, 1, "dilation", &p->dh, &p->dw));
    }
    if (p->ph > ((p->kh - 1) * p->dh + 1) / 2 || p->pw > ((p->kw - 1) * p->dw + 1) / 2)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "pool: padding must be at most half the kernel size");
    size_t lead = in->dim - 2;
    p->planes = 1;
    for (size_t d = 0; d < lead; d++) {
        p->planes *= in->sizes[d];
        p->out_shape[d] = in->sizes[d];
    }
    p->h = in->sizes[lead];
    p->w = in->sizes[lead + 1];
    p->oh = out_size(p->h, p->kh, p->ph, p->sh, p->dh, ceil_mode);
    p->ow = out_size(p->w, p->kw, p->pw, p->sw, p->dw, ceil_mode);
    if (p->oh < 1 || p->ow < 1)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "pool: output size %lldx%lld is too small (input %lldx%lld)",
                                 (long long)p->oh, (long long)p->ow, (long long)p->h,
                                 (long long)p->w);
    p->out_shape[lead] = p->oh;
    p->out_shape[lead + 1] = p->ow;
    p->out_dim = in->dim;
    return EMBER_OK;
}
