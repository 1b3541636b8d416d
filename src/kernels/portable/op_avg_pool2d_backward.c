/*
 * aten::avg_pool2d_backward.grad_input(Tensor grad_output, Tensor self, int[2] kernel_size,
 *     int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad,
 *     int? divisor_override, *, Tensor(a!) grad_input) -> Tensor(a!)
 *
 * Gradient of avg_pool2d: grad_input has self's shape; each input cell sums
 * grad / divisor over the output cells whose window covers it, with the
 * forward's divisor rules (divisor_override, else the window clipped to the
 * padded input or, without count_include_pad, to the input). Output row oy
 * covers input rows [oy sh - ph, oy sh - ph + kh), so row y is covered by
 * oy in [floor((y + ph - kh) / sh) + 1, floor((y + ph) / sh)]. Float dtypes
 * and int64, contiguous; int64 divides each grad by its divisor first,
 * truncating, as PyTorch does. Arguments: 8 inputs, grad_input, grad_input (10).
 */
#include "pool_util.h"
#include "ops.h"

typedef struct avg_opts {
    bool count_include_pad;
    int64_t divisor; /* 0: none */
} avg_opts;

/* floor(a / b) for b > 0 */
static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* The forward's divisor of output cell (oy, ox). */
static int64_t divisor_of(const ek_pool2d *p, const avg_opts *o, int64_t oy, int64_t ox) {
    if (o->divisor != 0) return o->divisor;
    int64_t hs = oy * p->sh - p->ph, ws = ox * p->sw - p->pw;
    int64_t he = hs + p->kh, we = ws + p->kw;
    if (he > p->h + p->ph) he = p->h + p->ph;
    if (we > p->w + p->pw) we = p->w + p->pw;
    if (o->count_include_pad) return (he - hs) * (we - ws);
    if (hs < 0) hs = 0;
    if (ws < 0) ws = 0;
    if (he > p->h) he = p->h;
    if (we > p->w) we = p->w;
    return (he - hs) * (we - ws);
}

#define DEF_AVG_POOL_BWD(SFX, T, CT, LOAD, STORE, SHARE)                                           \
    static void avg_bwd_##SFX(T *gin, const T *gout, const ek_pool2d *p, const avg_opts *o) {      \
        for (int64_t pl = 0; pl < p->planes; pl++) {                                               \
            const T *gp = gout + pl * p->oh * p->ow; /* (OH, OW) */                                \
            T *ip = gin + pl * p->h * p->w;          /* (H, W) */                                  \
            for (int64_t y = 0; y < p->h; y++) {                                                   \
                int64_t oy0 = floor_div(y + p->ph - p->kh, p->sh) + 1;                             \
                int64_t oy1 = floor_div(y + p->ph, p->sh) + 1;                                     \
                if (oy0 < 0) oy0 = 0;                                                              \
                if (oy1 > p->oh) oy1 = p->oh;                                                      \
                for (int64_t x = 0; x < p->w; x++) {                                               \
                    int64_t ox0 = floor_div(x + p->pw - p->kw, p->sw) + 1;                         \
                    int64_t ox1 = floor_div(x + p->pw, p->sw) + 1;                                 \
                    if (ox0 < 0) ox0 = 0;                                                          \
                    if (ox1 > p->ow) ox1 = p->ow;                                                  \
                    CT acc = 0;                                                                    \
                    for (int64_t oy = oy0; oy < oy1; oy++)                                         \
                        for (int64_t ox = ox0; ox < ox1; ox++)                                     \
                            acc += SHARE(CT, LOAD(gp[oy * p->ow + ox]), divisor_of(p, o, oy, ox));  \
                    ip[y * p->w + x] = STORE(acc);                                                 \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* A float grad's share: g / d in the compute type. */
#define AVG_SHARE_FLOAT(CT, g, d) ((g) / (CT)(d))
#define DEF_AVG_POOL_BWD_FLOAT(SFX, T, CT, LOAD, STORE)                                            \
    DEF_AVG_POOL_BWD(SFX, T, CT, LOAD, STORE, AVG_SHARE_FLOAT)
EK_FOR_EACH_FLOAT(DEF_AVG_POOL_BWD_FLOAT)

/* An int64 grad's share: g / d truncated, as PyTorch divides before it
 * adds; the sums wrap in uint64_t (INT64_MIN / -1 wraps to INT64_MIN). */
static uint64_t avg_share_i64(int64_t g, int64_t d) {
    return d == -1 ? 0u - (uint64_t)g : (uint64_t)(g / d);
}
#define AVG_SHARE_I64(CT, g, d) avg_share_i64((g), (d))
#define AVG_U2I(v) ((int64_t)(v))
DEF_AVG_POOL_BWD(i64, int64_t, uint64_t, EK_IDENT, AVG_U2I, AVG_SHARE_I64)

ember_status ek_op_avg_pool2d_backward_grad_input(ember_kernel_ctx *ctx, ember_value **args,
                                                  size_t nargs) {
    ember_tensor *gout, *in, *gin;
    const int64_t *ks, *st, *pd;
    size_t nks, nst, npd;
    bool ceil_mode, has_div;
    avg_opts o;
    EK_TRY(ek_check_nargs(ctx, nargs, 10));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &gout));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 1, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &ks, &nks));
    EK_TRY(ek_arg_int_list(ctx, args, 3, &st, &nst));
    EK_TRY(ek_arg_int_list(ctx, args, 4, &pd, &npd));
    EK_TRY(ek_arg_bool(ctx, args, 5, &ceil_mode));
    EK_TRY(ek_arg_bool(ctx, args, 6, &o.count_include_pad));
    EK_TRY(ek_arg_opt_int(ctx, args, 7, &o.divisor, &has_div));
    EK_TRY(ek_arg_out(ctx, args, 8, &gin));
    if (has_div && o.divisor == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "avg_pool2d_backward: divisor must not be zero");
    ek_pool2d p;
    EK_TRY(ek_pool2d_init(ctx, &p, in, ks, nks, st, nst, pd, npd, NULL, 0, ceil_mode));
    bool same = gout->dim == p.out_dim;
    for (size_t d = 0; same && d < p.out_dim; d++) same = gout->sizes[d] == p.out_shape[d];
    if (!same) {
        char got[96];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "avg_pool2d_backward: grad_output has shape %s, not the %lldx%lld "
                                 "pooled planes",
                                 ek_shape_str(got, sizeof got, gout->sizes, gout->dim),
                                 (long long)p.oh, (long long)p.ow);
    }
    if (in->dtype != EMBER_INT64) EK_TRY(ek_check_float(ctx, in->dtype, "avg_pool2d_backward"));
    EK_TRY(ek_check_same_dtype(ctx, gout, in, "avg_pool2d_backward grad_output and self"));
    EK_TRY(ek_check_same_dtype(ctx, in, gin, "avg_pool2d_backward self and grad_input"));
    EK_TRY(ek_check_contiguous(ctx, gout, "avg_pool2d_backward grad_output"));
    EK_TRY(ek_check_no_alias(ctx, gin, gout));
    EK_TRY(ek_resize_like(ctx, gin, in));
    EK_TRY(ek_check_contiguous(ctx, gin, "avg_pool2d_backward grad_input"));
    if (gin->numel == 0) return EMBER_OK;
    if (in->dtype == EMBER_INT64)
        avg_bwd_i64(gin->data, gout->data, &p, &o);
    else
        EK_FLOAT_SWITCH(ctx, in->dtype, avg_bwd, gin->data, gout->data, &p, &o);
    return EMBER_OK;
}
