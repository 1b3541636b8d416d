/*
 * ExecuTorch's attention operators for language models (namespace llama):
 *
 *   llama::custom_sdpa.out(Tensor query, Tensor key, Tensor value,
 *       SymInt start_pos, Tensor? attn_mask=None, float drpout_p=0.,
 *       bool is_causal=False, float? scale=None, *, Tensor(a!) out)
 *   llama::sdpa_with_kv_cache.out(Tensor query, Tensor key, Tensor value,
 *       Tensor(a!) key_cache, Tensor(b!) value_cache, SymInt start_pos,
 *       SymInt seq_len, Tensor? attn_mask=None, float drpout_p=0.,
 *       bool is_causal=False, float? scale=None, *, Tensor(c!) out)
 *
 * With B batch, S query rows, H query heads, Hkv key/value heads (H a
 * multiple of Hkv: grouped-query attention), D head size and L positions:
 *
 *   query, out            (B, S, H, D)
 *   key, value            custom_sdpa: the caches (B, L, Hkv, D);
 *                         sdpa_with_kv_cache: the new rows (B, S, Hkv, D)
 *   key_cache, value_cache (B, L, Hkv, D), sequence at dim 1
 *
 * sdpa_with_kv_cache first copies key and value into the caches at rows
 * [start_pos, start_pos + S), then does what custom_sdpa does on the caches:
 *
 * - no mask: the queries attend over cache rows [0, start_pos + S); with
 *   is_causal, query t (at position start_pos + t) only over [0, start_pos + t];
 * - attn_mask (S, L), a float tensor added to the scaled scores: every one of
 *   the L cache rows is read and start_pos is not used; is_causal must be
 *   false then.
 *
 * scale defaults to 1 / sqrt(D); drpout_p must be 0 (inference). Float
 * dtypes (ExecuTorch has float32, float16, bfloat16; float64 works too),
 * contiguous. start_pos is data (a model input read by _local_scalar_dense):
 * out of range it fails EMBER_ERR_DATA_OUT_OF_BOUNDS. seq_len only enters
 * that check, as in ExecuTorch.
 */
#include <math.h>

#include "../portable/kernel_util.h"
#include "../portable/ops.h"
#include "attention.h"

/* t must be 4-d, of dtype like q's, contiguous. */
static ember_status check_4d(ember_kernel_ctx *ctx, const char *op, const ember_tensor *t,
                             const ember_tensor *q, const char *what) {
    if (t->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "%s: %s must be 4-d, got %u-d", op,
                                 what, (unsigned)t->dim);
    if (t->dtype != q->dtype)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: %s is %s but query is %s", op,
                                 what, ember_dtype_name(t->dtype), ember_dtype_name(q->dtype));
    if (!ember_tensor_is_contiguous(t))
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: %s: only the default (contiguous) dim order is supported", op,
                                 what);
    return EMBER_OK;
}

/* t must have sizes (b, n, h, d); n < 0 accepts any. */
static ember_status check_sizes(ember_kernel_ctx *ctx, const char *op, const ember_tensor *t,
                                const char *what, int64_t b, int64_t n, int64_t h, int64_t d,
                                const char *n_name) {
    if (t->sizes[0] != b || (n >= 0 && t->sizes[1] != n) || t->sizes[2] != h ||
        t->sizes[3] != d) {
        char got[64];
        if (n >= 0)
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "%s: %s must be (%lld, %lld, %lld, %lld), got %s", op, what,
                                     (long long)b, (long long)n, (long long)h, (long long)d,
                                     ek_shape_str(got, sizeof got, t->sizes, t->dim));
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: %s must be (%lld, %s, %lld, %lld), got %s", op, what,
                                 (long long)b, n_name, (long long)h, (long long)d,
                                 ek_shape_str(got, sizeof got, t->sizes, t->dim));
    }
    return EMBER_OK;
}

ember_status ek_attn_check_keys(ember_kernel_ctx *ctx, const char *op, int64_t nq, int64_t nh,
                                int64_t nkvh, int64_t len, int64_t start_pos,
                                const ember_tensor *mask, double dropout, bool causal,
                                int64_t *n_keys_out) {
    if (nkvh == 0 || nh % nkvh != 0)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: %lld query heads are not a multiple of %lld key/value heads",
                                 op, (long long)nh, (long long)nkvh);
    if (dropout != 0.0)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: drpout_p is %g; only 0 (inference) is supported", op,
                                 dropout);
    if (mask != NULL && causal)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: attn_mask and is_causal cannot both be set", op);
    int64_t n_keys = len;
    if (mask != NULL) {
        if (!ek_is_float(mask->dtype))
            return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                     "%s: attn_mask must be a float tensor, got %s", op,
                                     ember_dtype_name(mask->dtype));
        if (mask->dim != 2 || mask->sizes[0] != nq || mask->sizes[1] != len) {
            char got[64];
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "%s: attn_mask must be (%lld, %lld) (query rows, cache "
                                     "positions), got %s",
                                     op, (long long)nq, (long long)len,
                                     ek_shape_str(got, sizeof got, mask->sizes, mask->dim));
        }
        if (!ember_tensor_is_contiguous(mask))
            return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                     "%s: attn_mask: only the default (contiguous) dim order is "
                                     "supported",
                                     op);
    } else {
        if (start_pos < 0 || start_pos > len - nq)
            return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                     "%s: start_pos %lld with %lld query rows does not fit in "
                                     "the cache of %lld positions",
                                     op, (long long)start_pos, (long long)nq, (long long)len);
        n_keys = start_pos + nq;
    }
    *n_keys_out = n_keys;
    return EMBER_OK;
}

/*
 * The part both operators share: query against the caches kc, vc (B, L, Hkv,
 * D), after any cache update. Checks the attention arguments and fills *a.
 */
static ember_status describe(ember_kernel_ctx *ctx, const char *op, const ember_tensor *q,
                             const ember_tensor *kc, const ember_tensor *vc, int64_t start_pos,
                             const ember_tensor *mask, double dropout, bool causal,
                             bool has_scale, double scale, ember_tensor *out, ek_attn *a) {
    int64_t nb = q->sizes[0], nq = q->sizes[1], nh = q->sizes[2], d = q->sizes[3];
    int64_t len = kc->sizes[1], nkvh = kc->sizes[2];
    int64_t n_keys;
    EK_TRY(ek_attn_check_keys(ctx, op, nq, nh, nkvh, len, start_pos, mask, dropout, causal,
                              &n_keys));
    /* out is written while the others are read */
    if (out == q || out == kc || out == vc || (mask != NULL && out == mask))
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "%s: out is also one of the inputs", op);
    EK_TRY(ek_resize_like(ctx, out, q));
    if (out->dtype != q->dtype)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: out is %s but query is %s", op,
                                 ember_dtype_name(out->dtype), ember_dtype_name(q->dtype));
    EK_TRY(ek_check_contiguous(ctx, out, op));
    if (!has_scale) scale = 1.0 / sqrt((double)d);

    int64_t q_st = nh * d, k_sn = nkvh * d;
    *a = (ek_attn){.dtype = q->dtype,
                   .q = q->data,
                   .k = kc->data,
                   .v = vc->data,
                   .out = out->data,
                   .mask = mask != NULL ? mask->data : NULL,
                   .mask_dtype = mask != NULL ? mask->dtype : EMBER_FLOAT32,
                   .mask_st = len,
                   .nb = nb,
                   .nq = nq,
                   .nh = nh,
                   .nkvh = nkvh,
                   .d = d,
                   .n_keys = n_keys,
                   .start_pos = mask != NULL ? 0 : start_pos,
                   .causal = causal,
                   .scale = scale,
                   .q_sb = nq * q_st,
                   .q_st = q_st,
                   .q_sh = d,
                   .k_sb = len * k_sn,
                   .k_sn = k_sn,
                   .k_sh = d,
                   .v_sb = len * k_sn,
                   .v_sn = k_sn,
                   .v_sh = d,
                   .o_sb = nq * q_st,
                   .o_st = q_st,
                   .o_sh = d};
    return EMBER_OK;
}

/* attn_mask, drpout_p, is_causal, scale at args[i..i+4). */
static ember_status attention_args(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                                   ember_tensor **mask, double *dropout, bool *causal,
                                   bool *has_scale, double *scale) {
    EK_TRY(ek_arg_opt_tensor(ctx, args, i, mask));
    EK_TRY(ek_arg_double(ctx, args, i + 1, dropout));
    EK_TRY(ek_arg_bool(ctx, args, i + 2, causal));
    *has_scale = args[i + 3]->tag != EMBER_TAG_NONE;
    *scale = 0.0;
    if (*has_scale) EK_TRY(ek_arg_double(ctx, args, i + 3, scale));
    return EMBER_OK;
}

ember_status ek_llama_custom_sdpa_setup(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                                        ek_attn *a) {
    static const char op[] = "llama::custom_sdpa";
    ember_tensor *q, *k, *v, *mask, *out;
    int64_t start_pos;
    double dropout, scale;
    bool causal, has_scale;
    EK_TRY(ek_check_nargs(ctx, nargs, 10));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &q));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &k));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &v));
    EK_TRY(ek_arg_int(ctx, args, 3, &start_pos));
    EK_TRY(attention_args(ctx, args, 4, &mask, &dropout, &causal, &has_scale, &scale));
    EK_TRY(ek_arg_out(ctx, args, 8, &out));

    EK_TRY(ek_check_float(ctx, q->dtype, op));
    EK_TRY(check_4d(ctx, op, q, q, "query"));
    EK_TRY(check_4d(ctx, op, k, q, "key"));
    EK_TRY(check_4d(ctx, op, v, q, "value"));
    EK_TRY(check_sizes(ctx, op, k, "key", q->sizes[0], -1, k->sizes[2], q->sizes[3], "L"));
    EK_TRY(check_sizes(ctx, op, v, "value", q->sizes[0], k->sizes[1], k->sizes[2], q->sizes[3],
                       NULL));
    return describe(ctx, op, q, k, v, start_pos, mask, dropout, causal, has_scale, scale, out, a);
}

ember_status ek_llama_sdpa_with_kv_cache_setup(ember_kernel_ctx *ctx, ember_value **args,
                                               size_t nargs, ek_attn *a) {
    static const char op[] = "llama::sdpa_with_kv_cache";
    ember_tensor *q, *k, *v, *kc, *vc, *mask, *out;
    int64_t start_pos, seq_len;
    double dropout, scale;
    bool causal, has_scale;
    EK_TRY(ek_check_nargs(ctx, nargs, 13));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &q));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &k));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &v));
    EK_TRY(ek_arg_inout(ctx, args, 3, &kc));
    EK_TRY(ek_arg_inout(ctx, args, 4, &vc));
    EK_TRY(ek_arg_int(ctx, args, 5, &start_pos));
    EK_TRY(ek_arg_int(ctx, args, 6, &seq_len));
    EK_TRY(attention_args(ctx, args, 7, &mask, &dropout, &causal, &has_scale, &scale));
    EK_TRY(ek_arg_out(ctx, args, 11, &out));

    EK_TRY(ek_check_float(ctx, q->dtype, op));
    EK_TRY(check_4d(ctx, op, q, q, "query"));
    EK_TRY(check_4d(ctx, op, k, q, "key"));
    EK_TRY(check_4d(ctx, op, v, q, "value"));
    EK_TRY(check_4d(ctx, op, kc, q, "key_cache"));
    EK_TRY(check_4d(ctx, op, vc, q, "value_cache"));
    int64_t nb = q->sizes[0], nq = q->sizes[1], d = q->sizes[3], nkvh = k->sizes[2];
    EK_TRY(check_sizes(ctx, op, k, "key", nb, nq, nkvh, d, NULL));
    EK_TRY(check_sizes(ctx, op, v, "value", nb, nq, nkvh, d, NULL));
    EK_TRY(check_sizes(ctx, op, kc, "key_cache", nb, -1, nkvh, d, "L"));
    EK_TRY(check_sizes(ctx, op, vc, "value_cache", nb, kc->sizes[1], nkvh, d, NULL));
    /* the caches are written while every other tensor is read */
    const ember_tensor *ins[] = {q, k, v, mask, out};
    for (size_t i = 0; i < sizeof ins / sizeof *ins; i++)
        if (ins[i] == kc || ins[i] == vc)
            return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                     "%s: a cache is also argument %zu", op, i);
    if (kc == vc)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM,
                                 "%s: key_cache and value_cache are the same tensor", op);
    int64_t len = kc->sizes[1];
    if (start_pos < 0 || start_pos >= len || start_pos > len - nq || seq_len < 0 ||
        seq_len > len - start_pos)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "%s: start_pos %lld with %lld new rows (seq_len %lld) does not "
                                 "fit in the cache of %lld positions",
                                 op, (long long)start_pos, (long long)nq, (long long)seq_len,
                                 (long long)len);
    /* every check passes before the caches change */
    EK_TRY(
        describe(ctx, op, q, kc, vc, start_pos, mask, dropout, causal, has_scale, scale, out, a));
    ek_llama_cache_write(k, kc, start_pos);
    ek_llama_cache_write(v, vc, start_pos);
    return EMBER_OK;
}

ember_status ek_op_llama_custom_sdpa_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ek_attn a;
    EK_TRY(ek_llama_custom_sdpa_setup(ctx, args, nargs, &a));
    return ek_attn_reference(ctx, &a);
}

ember_status ek_op_llama_sdpa_with_kv_cache_out(ember_kernel_ctx *ctx, ember_value **args,
                                                size_t nargs) {
    ek_attn a;
    EK_TRY(ek_llama_sdpa_with_kv_cache_setup(ctx, args, nargs, &a));
    return ek_attn_reference(ctx, &a);
}
