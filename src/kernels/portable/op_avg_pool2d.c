/*
 * aten::avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
 *     bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None, *,
 *     Tensor(a!) out)
 *
 * Mean over each window of every (H, W) plane, with PyTorch's divisor
 * rules: divisor_override if given, else the window size clipped to the
 * padded input (count_include_pad) or to the input. Float dtypes, contiguous.
 */
#include "pool_util.h"
#include "ops.h"

typedef struct avg_opts {
    bool count_include_pad;
    int64_t divisor; /* 0: none */
} avg_opts;

#define DEF_AVG_POOL(SFX, T, CT, LOAD, STORE)                                                      \
    static void avg_pool_##SFX(T *out, const T *x, const ek_pool2d *p, const avg_opts *o) {        \
        for (int64_t pl = 0; pl < p->planes; pl++) {                                               \
            const T *xp = x + pl * p->h * p->w; /* (H, W) */                                       \
            T *op = out + pl * p->oh * p->ow;   /* (OH, OW) */                                     \
            for (int64_t oy = 0; oy < p->oh; oy++) {                                               \
                for (int64_t ox = 0; ox < p->ow; ox++) {                                           \
                    int64_t hs = oy * p->sh - p->ph, ws = ox * p->sw - p->pw;                      \
                    int64_t he = hs + p->kh, we = ws + p->kw;                                      \
                    if (he > p->h + p->ph) he = p->h + p->ph;                                      \
                    if (we > p->w + p->pw) we = p->w + p->pw;                                      \
                    int64_t pool_size = (he - hs) * (we - ws);                                     \
                    if (hs < 0) hs = 0;                                                            \
                    if (ws < 0) ws = 0;                                                            \
                    if (he > p->h) he = p->h;                                                      \
                    if (we > p->w) we = p->w;                                                      \
                    if (hs >= he || ws >= we) {                                                    \
                        op[oy * p->ow + ox] = STORE((CT)0);                                        \
                        continue;                                                                  \
                    }                                                                              \
                    CT sum = 0;                                                                    \
                    for (int64_t y = hs; y < he; y++)                                              \
                        for (int64_t xx = ws; xx < we; xx++) sum += LOAD(xp[y * p->w + xx]);       \
                    int64_t div = o->divisor != 0        ? o->divisor                              \
                                  : o->count_include_pad ? pool_size                               \
                                                         : (he - hs) * (we - ws);                  \
                    op[oy * p->ow + ox] = STORE(sum / (CT)div);                                    \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(DEF_AVG_POOL)

ember_status ek_op_avg_pool2d_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    const int64_t *ks, *st, *pd;
    size_t nks, nst, npd;
    bool ceil_mode, has_div;
    avg_opts o;
    EK_TRY(ek_check_nargs(ctx, nargs, 9));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &ks, &nks));
    EK_TRY(ek_arg_int_list(ctx, args, 2, &st, &nst));
    EK_TRY(ek_arg_int_list(ctx, args, 3, &pd, &npd));
    EK_TRY(ek_arg_bool(ctx, args, 4, &ceil_mode));
    EK_TRY(ek_arg_bool(ctx, args, 5, &o.count_include_pad));
    EK_TRY(ek_arg_opt_int(ctx, args, 6, &o.divisor, &has_div));
    EK_TRY(ek_arg_out(ctx, args, 7, &out));
    if (has_div && o.divisor == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "avg_pool2d: divisor must not be zero");
    ek_pool2d p;
    EK_TRY(ek_pool2d_init(ctx, &p, in, ks, nks, st, nst, pd, npd, NULL, 0, ceil_mode));
    EK_TRY(ek_check_float(ctx, in->dtype, "avg_pool2d"));
    EK_TRY(ek_check_same_dtype(ctx, in, out, "avg_pool2d self and out"));
    EK_TRY(ek_check_contiguous(ctx, in, "avg_pool2d self"));
    EK_TRY(ek_resize_out(ctx, out, p.out_shape, p.out_dim));
    EK_TRY(ek_check_contiguous(ctx, out, "avg_pool2d out"));
    if (out->numel == 0) return EMBER_OK;
    EK_FLOAT_SWITCH(ctx, in->dtype, avg_pool, out->data, in->data, &p, &o);
    return EMBER_OK;
}
