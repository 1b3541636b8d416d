/*
 * ExecuTorch's attention over an int8 KV cache (its quantize_kv_cache
 * export: QuantizedKVCache with QuantizedSDPA):
 *
 *   llama::custom_quantized_sdpa.out(Tensor query, Tensor key, Tensor value,
 *       SymInt start_pos, Tensor? attn_mask=None, float drpout_p=0.,
 *       bool is_causal=False, float? scale=None, Tensor? q_zero_points=None,
 *       Tensor? q_scales=None, Tensor? k_zero_points=None,
 *       Tensor? k_scales=None, Tensor? v_zero_points=None,
 *       Tensor? v_scales=None, bool is_seq_at_dim_2=False, *, Tensor(a!) out)
 *
 * query, key and value are int8, quantized per token (per row of D): each
 * has a float32 scale and an int8 zero point per row, in tensors of its
 * shape with a last dimension of 1 (all six must be given). With B batch,
 * S query rows, H query heads, Hkv key/value heads (H a multiple of Hkv),
 * D head size and L cache positions, query is (B, S, H, D) and the caches
 * (B, L, Hkv, D); with is_seq_at_dim_2 they are (B, H, S, D) and
 * (B, Hkv, L, D). out is float32, (B, S, H, D) or (B, H, S, D) like query.
 *
 * What it computes, as ExecuTorch's reference does: the products of query
 * and key rows in int32, exactly, zero points taken out,
 *
 *   score(t, j) = [sum_d (q_td - zq_t) (k_jd - zk_j)] * (sq_t * sk_j) * scale
 *
 * (+ attn_mask), softmax over the visible keys (as llama::custom_sdpa: rows
 * [0, start_pos + S), causally up to start_pos + t, or all L with a mask),
 * then the weighted sum of the dequantized values sv_j * (v_jd - zv_j).
 * scale defaults to 1 / sqrt(D); drpout_p must be 0.
 */
#include <math.h>

#include "../portable/kernel_util.h"
#include "../portable/ops.h"
#include "attention.h"

static const char OP[] = "llama::custom_quantized_sdpa";

/* Strides of a 4-d contiguous tensor, in elements, as (batch, seq, head):
 * dims (b, s, h, x) or, with seq_at_2, (b, h, s, x). */
typedef struct qs_strides {
    int64_t b, s, h;
} qs_strides;

static qs_strides strides_of(const ember_tensor *t, bool seq_at_2) {
    const int64_t x = t->sizes[3];
    if (seq_at_2) return (qs_strides){t->sizes[1] * t->sizes[2] * x, x, t->sizes[2] * x};
    return (qs_strides){t->sizes[1] * t->sizes[2] * x, t->sizes[2] * x, x};
}

/* t: 4-d, contiguous, of dtype. */
static ember_status check_tensor(ember_kernel_ctx *ctx, const ember_tensor *t, int dtype,
                                 const char *what) {
    if (t->dim != 4)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "%s: %s must be 4-d, got %u-d", OP,
                                 what, (unsigned)t->dim);
    if (t->dtype != dtype)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: %s must be %s, got %s", OP,
                                 what, ember_dtype_name(dtype), ember_dtype_name(t->dtype));
    return ek_check_contiguous(ctx, t, OP);
}

/* The scale (float32) and zero point (int8) of t: t's sizes with a last dim of 1. */
static ember_status check_qparams(ember_kernel_ctx *ctx, const ember_tensor *t,
                                  const ember_tensor *scale, const ember_tensor *zp,
                                  const char *what) {
    if (scale == NULL || zp == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: the %s scales and zero points must both be given", OP, what);
    EK_TRY(check_tensor(ctx, scale, EMBER_FLOAT32, "a scale tensor"));
    EK_TRY(check_tensor(ctx, zp, EMBER_INT8, "a zero-point tensor"));
    for (int i = 0; i < 4; i++) {
        const int64_t want = i < 3 ? t->sizes[i] : 1;
        if (scale->sizes[i] != want || zp->sizes[i] != want) {
            char got[64], want_s[64];
            int32_t w[4] = {t->sizes[0], t->sizes[1], t->sizes[2], 1};
            ek_shape_str(want_s, sizeof want_s, w, 4);
            ek_shape_str(got, sizeof got, scale->sizes[i] != want ? scale->sizes : zp->sizes, 4);
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "%s: the %s %s must be %s, got %s", OP, what,
                                     scale->sizes[i] != want ? "scales" : "zero points", want_s,
                                     got);
        }
    }
    return EMBER_OK;
}

ember_status ek_attn_quantized_reference(ember_kernel_ctx *ctx, const ek_attn *a) {
    const int64_t d = a->d, reps = a->nh / a->nkvh;
    size_t count, bytes;
    if (ember_add_overflow((size_t)a->n_keys, (size_t)d, &count) ||
        ember_mul_overflow(count, sizeof(float), &bytes))
        return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY, "%s: scratch size overflows", OP);
    float *score = ember_kernel_scratch(ctx, bytes, sizeof(float));
    if (score == NULL)
        return ember_kernel_fail(ctx, EMBER_ERR_OUT_OF_MEMORY, "%s: needs %zu bytes of scratch",
                                 OP, bytes);
    float *acc = score + a->n_keys;
    const int8_t *q = a->q, *k = a->k, *v = a->v;
    const float *mask = a->mask;
    for (int64_t b = 0; b < a->nb; b++)
        for (int64_t h = 0; h < a->nh; h++) {
            const int64_t g = h / reps;
            for (int64_t t = 0; t < a->nq; t++) {
                const int64_t qi = b * a->q_sb + t * a->q_st + h * a->q_sh;
                const int8_t *qr = q + qi;
                const int32_t zq = a->q_zero[qi / d];
                const float sq = a->q_scale[qi / d];
                int32_t qsum = 0;
                for (int64_t i = 0; i < d; i++) qsum += qr[i];
                int64_t n = a->n_keys;
                if (a->causal && a->start_pos + t + 1 < n) n = a->start_pos + t + 1;
                float max = -INFINITY;
                for (int64_t j = 0; j < n; j++) {
                    const int64_t ki = b * a->k_sb + j * a->k_sn + g * a->k_sh;
                    const int8_t *kr = k + ki;
                    const int32_t zk = a->k_zero[ki / d];
                    int32_t dot = 0, ksum = 0;
                    for (int64_t i = 0; i < d; i++) {
                        dot += (int32_t)qr[i] * kr[i];
                        ksum += kr[i];
                    }
                    /* sum (q - zq)(k - zk), exactly (dot and the sums fit in
                     * int32 for D <= 32768, the corrections in int64) */
                    const int64_t prod = (int64_t)dot - (int64_t)zk * qsum - (int64_t)zq * ksum +
                                         (int64_t)d * zq * zk;
                    float s = (float)prod * (sq * a->k_scale[ki / d]) * (float)a->scale;
                    if (mask != NULL) s += mask[t * a->mask_st + j];
                    score[j] = s;
                    if (s > max) max = s;
                }
                float sum = 0.0f;
                for (int64_t j = 0; j < n; j++) {
                    score[j] = expf(score[j] - max);
                    sum += score[j];
                }
                for (int64_t i = 0; i < d; i++) acc[i] = 0.0f;
                for (int64_t j = 0; j < n; j++) {
                    const int64_t vi = b * a->v_sb + j * a->v_sn + g * a->v_sh;
                    const int8_t *vr = v + vi;
                    const float w = score[j] * a->v_scale[vi / d], zv = (float)a->v_zero[vi / d];
                    for (int64_t i = 0; i < d; i++) acc[i] += w * ((float)vr[i] - zv);
                }
                float *orow = (float *)a->out + b * a->o_sb + t * a->o_st + h * a->o_sh;
                const float inv = 1.0f / sum;
                for (int64_t i = 0; i < d; i++) orow[i] = acc[i] * inv;
            }
        }
    return EMBER_OK;
}

ember_status ek_llama_custom_quantized_sdpa_setup(ember_kernel_ctx *ctx, ember_value **args,
                                                  size_t nargs, ek_attn *a) {
    ember_tensor *q, *k, *v, *mask, *qz, *qs, *kz, *ks, *vz, *vs, *out;
    int64_t start_pos;
    double dropout, scale = 0.0;
    bool causal, seq_at_2;
    EK_TRY(ek_check_nargs(ctx, nargs, 17)); /* the 15 arguments, out, and out returned */
    EK_TRY(ek_arg_tensor(ctx, args, 0, &q));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &k));
    EK_TRY(ek_arg_tensor(ctx, args, 2, &v));
    EK_TRY(ek_arg_int(ctx, args, 3, &start_pos));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 4, &mask));
    EK_TRY(ek_arg_double(ctx, args, 5, &dropout));
    EK_TRY(ek_arg_bool(ctx, args, 6, &causal));
    const bool has_scale = args[7]->tag != EMBER_TAG_NONE;
    if (has_scale) EK_TRY(ek_arg_double(ctx, args, 7, &scale));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 8, &qz));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 9, &qs));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 10, &kz));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 11, &ks));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 12, &vz));
    EK_TRY(ek_arg_opt_tensor(ctx, args, 13, &vs));
    EK_TRY(ek_arg_bool(ctx, args, 14, &seq_at_2));
    EK_TRY(ek_arg_out(ctx, args, 15, &out));

    EK_TRY(check_tensor(ctx, q, EMBER_INT8, "query"));
    EK_TRY(check_tensor(ctx, k, EMBER_INT8, "key"));
    EK_TRY(check_tensor(ctx, v, EMBER_INT8, "value"));
    EK_TRY(check_qparams(ctx, q, qs, qz, "query"));
    EK_TRY(check_qparams(ctx, k, ks, kz, "key"));
    EK_TRY(check_qparams(ctx, v, vs, vz, "value"));
    const int sd = seq_at_2 ? 2 : 1, hd = seq_at_2 ? 1 : 2; /* seq and head dims */
    const int64_t nb = q->sizes[0], nq = q->sizes[sd], nh = q->sizes[hd], d = q->sizes[3];
    const int64_t len = k->sizes[sd], nkvh = k->sizes[hd];
    if (k->sizes[0] != nb || k->sizes[3] != d || v->sizes[0] != nb || v->sizes[sd] != len ||
        v->sizes[hd] != nkvh || v->sizes[3] != d) {
        char kq[64], vq[64];
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "%s: key %s and value %s do not match each other and query's "
                                 "batch and head size",
                                 OP, ek_shape_str(kq, sizeof kq, k->sizes, 4),
                                 ek_shape_str(vq, sizeof vq, v->sizes, 4));
    }
    if (d > 32768)
        return ember_kernel_fail(ctx, EMBER_ERR_NOT_SUPPORTED,
                                 "%s: head size %lld (at most 32768: int32 products)", OP,
                                 (long long)d);
    if (mask != NULL && mask->dtype != EMBER_FLOAT32)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH,
                                 "%s: attn_mask must be float32, got %s", OP,
                                 ember_dtype_name(mask->dtype));
    int64_t n_keys;
    EK_TRY(ek_attn_check_keys(ctx, OP, nq, nh, nkvh, len, start_pos, mask, dropout, causal,
                              &n_keys));
    if (out->dtype != EMBER_FLOAT32)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "%s: out must be float32, got %s",
                                 OP, ember_dtype_name(out->dtype));
    EK_TRY(ek_resize_like(ctx, out, q));
    EK_TRY(ek_check_contiguous(ctx, out, OP));

    const qs_strides qst = strides_of(q, seq_at_2), kst = strides_of(k, seq_at_2),
                     vst = strides_of(v, seq_at_2), ost = strides_of(out, seq_at_2);
    *a = (ek_attn){
        .dtype = EMBER_INT8, .q = q->data, .k = k->data, .v = v->data, .out = out->data,
        .mask = mask != NULL ? mask->data : NULL, .mask_dtype = EMBER_FLOAT32, .mask_st = len,
        .nb = nb, .nq = nq, .nh = nh, .nkvh = nkvh, .d = d, .n_keys = n_keys,
        .start_pos = mask != NULL ? 0 : start_pos, .causal = causal,
        .scale = has_scale ? scale : 1.0 / sqrt((double)d),
        .q_sb = qst.b, .q_st = qst.s, .q_sh = qst.h,
        .k_sb = kst.b, .k_sn = kst.s, .k_sh = kst.h,
        .v_sb = vst.b, .v_sn = vst.s, .v_sh = vst.h,
        .o_sb = ost.b, .o_st = ost.s, .o_sh = ost.h,
        .q_scale = qs->data, .k_scale = ks->data, .v_scale = vs->data,
        .q_zero = qz->data, .k_zero = kz->data, .v_zero = vz->data,
    };
    return EMBER_OK;
}

ember_status ek_op_llama_custom_quantized_sdpa_out(ember_kernel_ctx *ctx, ember_value **args,
                                                   size_t nargs) {
    ek_attn a;
    EK_TRY(ek_llama_custom_quantized_sdpa_setup(ctx, args, nargs, &a));
    if (a.nb == 0 || a.nq == 0 || a.nh == 0 || a.d == 0) return EMBER_OK;
    return ek_attn_quantized_reference(ctx, &a);
}
