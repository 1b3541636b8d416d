/*
 * ember::sdpa_with_kv_cache.out(Tensor q, Tensor k, Tensor v, Tensor(a!) k_cache,
 *     Tensor(b!) v_cache, Tensor start_pos, float? scale=None, *, Tensor(c!) out)
 *
 * One attention step of a decoder with a KV cache, fused. With B batch, T new
 * tokens, H heads, D head size and L cache length:
 *
 *   q, k, v, out       (B, T, H, D)   as the fused qkv projection lays them out
 *   k_cache, v_cache   (B, H, L, D)   one contiguous (L, D) block per head
 *   start_pos          int64 (or int32) tensor with one element
 *
 * k and v are written into the caches at positions [start_pos, start_pos + T);
 * query t, at absolute position p = start_pos + t, attends causally over cache
 * positions [0, p]: out = softmax(scale * q . k_j) weighted sum of v_j, with
 * scale = 1 / sqrt(D) by default. start_pos is data, so it is checked here at
 * execute: 0 <= start_pos and start_pos + T <= L (EMBER_ERR_DATA_OUT_OF_BOUNDS).
 *
 * Float dtypes, contiguous; float16 / bfloat16 compute in float, float64 in
 * double. The checks and the cache writes live in ek_sdpa_with_kv_cache_setup,
 * shared with the optimized kernel (kernels/optimized/attention.c); the
 * attention itself is ek_attn_reference (attention_ref.c), one row of scores
 * and one accumulator of scratch.
 */
#include <math.h>
#include <string.h>

#include "../portable/kernel_util.h"
#include "../portable/ops.h"
#include "attention.h"

/* The shape of q, k, v and out: (B, T, H, D). */
static ember_status check_qkv(ember_kernel_ctx *ctx, const ember_tensor *t, const ember_tensor *q,
                              const char *what) {
    if (t->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "sdpa_with_kv_cache: %s must be 4-d (B, T, H, D), got %u-d", what,
                                 (unsigned)t->dim);
    for (size_t i = 0; i < 4; i++)
        if (t->sizes[i] != q->sizes[i]) {
            char a[64], b[64];
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "sdpa_with_kv_cache: %s has shape %s but q has %s", what,
                                     ek_shape_str(a, sizeof a, t->sizes, t->dim),
                                     ek_shape_str(b, sizeof b, q->sizes, q->dim));
        }
    EK_TRY(ek_check_same_dtype(ctx, q, t, what));
    return ek_check_contiguous(ctx, t, what);
}

/* The shape of a cache: (B, H, L, D) with B, H, D those of q. */
static ember_status check_cache(ember_kernel_ctx *ctx, const ember_tensor *c, const ember_tensor *q,
                                const char *what) {
    if (c->dim != 4 || c->sizes[0] != q->sizes[0] || c->sizes[1] != q->sizes[2] ||
        c->sizes[3] != q->sizes[3]) {
        char a[64];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "sdpa_with_kv_cache: %s must be (B, H, L, D) = (%d, %d, L, %d), "
                                 "got %s",
                                 what, (int)q->sizes[0], (int)q->sizes[2], (int)q->sizes[3],
                                 ek_shape_str(a, sizeof a, c->sizes, c->dim));
    }
    EK_TRY(ek_check_same_dtype(ctx, q, c, what));
    return ek_check_contiguous(ctx, c, what);
}

ember_status ek_sdpa_with_kv_cache_setup(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                         ek_attn *a) {
    ember_tensor *q, *k, *v, *kc, *vc, *sp, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 9));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &q));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &k));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &v));
    EK_TRY(ek_arg_inout(ctx, args, 3, &kc));
    EK_TRY(ek_arg_inout(ctx, args, 4, &vc));
    EK_TRY(ek_arg_tensor(ctx, args, 5, &sp));
    double scale = 0.0;
    bool has_scale = args[6]->tag != EMBER_TAG_NONE;
    if (has_scale) EK_TRY(ek_arg_double(ctx, args, 6, &scale));
    EK_TRY(ek_arg_out(ctx, args, 7, &out));

    EK_TRY(ek_check_float(ctx, q->dtype, "sdpa_with_kv_cache q"));
    EK_TRY(check_qkv(ctx, q, q, "q"));
    EK_TRY(check_qkv(ctx, k, q, "k"));
    EK_TRY(check_qkv(ctx, v, q, "v"));
    EK_TRY(check_cache(ctx, kc, q, "k_cache"));
    EK_TRY(check_cache(ctx, vc, q, "v_cache"));
    if (vc->sizes[2] != kc->sizes[2])
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "sdpa_with_kv_cache: k_cache holds %d positions, v_cache %d",
                                 (int)kc->sizes[2], (int)vc->sizes[2]);
    /* The caches are written while q, k, v and out are read or written: no two
     * of them may be the same tensor. */
    const ember_tensor *all[] = {q, k, v, kc, vc, out};
    for (size_t i = 3; i < 6; i++)
        for (size_t j = 0; j < i; j++)
            if (all[i] == all[j])
                return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                         "sdpa_with_kv_cache: %s is also argument %zu",
                                         i == 5   ? "out"
                                         : i == 4 ? "v_cache"
                                                  : "k_cache",
                                         j);
    if ((sp->dtype != EMBER_INT64 && sp->dtype != EMBER_INT32) || sp->numel != 1)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "sdpa_with_kv_cache: start_pos must be an int64 or int32 tensor "
                                 "with one element, got %s with %lld elements",
                                 ember_dtype_name(sp->dtype), (long long)sp->numel);

    int64_t nb = q->sizes[0], nt = q->sizes[1], nh = q->sizes[2], d = q->sizes[3];
    int64_t len = kc->sizes[2];
    int64_t pos =
        sp->dtype == EMBER_INT64 ? *(const int64_t *)sp->data : *(const int32_t *)sp->data;
    if (pos < 0 || pos > len - nt)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "sdpa_with_kv_cache: start_pos %lld with %lld new tokens does "
                                 "not fit in the cache of %lld positions",
                                 (long long)pos, (long long)nt, (long long)len);

    EK_TRY(ek_resize_like(ctx, out, q));
    EK_TRY(ek_check_contiguous(ctx, out, "sdpa_with_kv_cache out"));
    if (!has_scale) scale = 1.0 / sqrt((double)d);

    /* k and v rows (b, t, h) go to cache rows (b, h, pos + t) */
    size_t es = ember_dtype_size(q->dtype), row = (size_t)d * es;
    for (int64_t b = 0; q->numel > 0 && b < nb; b++)
        for (int64_t t = 0; t < nt; t++)
            for (int64_t h = 0; h < nh; h++) {
                size_t src = (size_t)(((b * nt + t) * nh + h) * d) * es;
                size_t dst = (size_t)(((b * nh + h) * len + pos + t) * d) * es;
                memcpy((char *)kc->data + dst, (const char *)k->data + src, row);
                memcpy((char *)vc->data + dst, (const char *)v->data + src, row);
            }

    *a = (ek_attn){.dtype = q->dtype,
                   .q = q->data,
                   .k = kc->data,
                   .v = vc->data,
                   .out = out->data,
                   .nb = nb,
                   .nq = nt,
                   .nh = nh,
                   .nkvh = nh,
                   .d = d,
                   .n_keys = pos + nt,
                   .start_pos = pos,
                   .causal = true,
                   .scale = scale,
                   .q_sb = nt * nh * d,
                   .q_st = nh * d,
                   .q_sh = d,
                   .k_sb = nh * len * d,
                   .k_sn = d,
                   .k_sh = len * d,
                   .v_sb = nh * len * d,
                   .v_sn = d,
                   .v_sh = len * d,
                   .o_sb = nt * nh * d,
                   .o_st = nh * d,
                   .o_sh = d};
    return EMBER_OK;
}

ember_status ek_op_sdpa_with_kv_cache_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ek_attn a;
    EK_TRY(ek_sdpa_with_kv_cache_setup(ctx, args, nargs, &a));
    return ek_attn_reference(ctx, &a);
}
