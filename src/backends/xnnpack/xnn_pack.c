/*
 * Constants of an XNNPACK subgraph (xnn_graph.h): loaded once at init, from
 * the program's named data or the payload, and either packed into the
 * layout the matrix-product kernels stream (fully connected filters and
 * biases, convolution filters, constant batch-matmul operands) or copied for
 * the nodes that read them as they are. The named data is given back right
 * after, so a weight is held twice only while it is being packed.
 *
 * Packed products whose sources are all named data go through the method's
 * weight cache (ember_weight_cache): found there, they are used in place
 * and their sources are never read; packed here, they are offered to it.
 * Their key names the layout, its version, the shapes and quantization,
 * and the sources' named-data keys, which the exporter makes from the
 * bytes' SHA-256.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernels/optimized/gemm.h"
#include "kernels/optimized/qs8_ops.h"
#include "xnn_graph.h"

/* A constant's bytes while init uses them. */
typedef struct loaded {
    ember_backend_data named;
    const float *f;     /* the bytes as floats (aligned) */
    size_t size;
} loaded;

/* Loads src, the bytes of value vi (scales: of its quantization scales),
 * for node. */
static ember_status load_bytes(xnn_graph *g, const ember_backend_init_ctx *ctx,
                               const xnn_const_source *src, uint32_t vi, bool scales,
                               uint32_t node, loaded *out) {
    const char *what = scales ? "scales of value" : "constant value";
    memset(out, 0, sizeof *out);
    const void *bytes = src->bytes;
    size_t size = src->size;
    if (src->key != NULL) {
        ember_status st = ember_backend_get_data(ctx, src->key, src->key_len, &out->named);
        if (st != EMBER_OK)
            return xnn_node_fail(g, node, st, "%s %u: named data '%.*s': %s", what, vi,
                                 (int)(src->key_len < 80 ? src->key_len : 80), src->key,
                                 ember_last_error());
        bytes = out->named.data;
        size = out->named.size;
    }
    if (size < src->needed) {
        ember_backend_release_data(&out->named);
        return xnn_node_fail(g, node, EMBER_ERR_INVALID_PROGRAM,
                             scales ? "%s %u have %zu bytes, %zu needed"
                                    : "%s %u has %zu bytes, its shape needs %zu",
                             what, vi, size, src->needed);
    }
    if (((uintptr_t)bytes % _Alignof(float)) != 0) {
        /* misaligned data: read it through an aligned copy */
        void *copy = ember_alloc(ctx->allocator, src->needed, 64);
        if (copy == NULL) {
            ember_backend_release_data(&out->named);
            return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "xnnpack: no memory");
        }
        memcpy(copy, bytes, src->needed);
        ember_backend_release_data(&out->named);
        bytes = copy;
    }
    out->f = bytes;
    out->size = src->needed;
    return EMBER_OK;
}

static ember_status load(xnn_graph *g, const ember_backend_init_ctx *ctx,
                         const xnn_const_source *src, uint32_t vi, uint32_t node, loaded *out) {
    return load_bytes(g, ctx, src, vi, false, node, out);
}

static void unload(loaded *l) { ember_backend_release_data(&l->named); }

static bool is_const(const xnn_const_source *sources, uint32_t vi) {
    return vi != XNN_INVALID_ID && sources[vi].present;
}

/* Whether input k of node n is consumed in packed form (never read raw). */
static bool packed_role(const xnn_node *n, uint32_t k, const xnn_const_source *sources) {
    switch (n->type) {
    case XNN_NODE_FullyConnected:
        return (k == 1 || k == 2) && is_const(sources, n->in[1]);
    case XNN_NODE_Conv2d:
        return k == 1 || k == 2;
    case XNN_NODE_DepthwiseConv2d:
        return n->qmode != XNN_QM_FLOAT && (k == 1 || k == 2);
    case XNN_NODE_ConvTranspose2d:
        return k == 1 || (n->qmode != XNN_QM_FLOAT && k == 2);
    case XNN_NODE_BatchMatrixMultiply:
        return k == 1 && is_const(sources, n->in[1]);
    default:
        return false;
    }
}

/* ---------------------------------------------------------------------- */
/* Weight cache keys                                                      */
/* ---------------------------------------------------------------------- */

/* Bump a version when its packed layout changes. */
#define PACK_QD8_VERSION 2
#define PACK_QDECONV_VERSION 1
#define PACK_F32_VERSION 1

typedef struct pack_key {
    char text[768];
    size_t len;
    bool ok;    /* false: a source is not named data, or the key did not fit */
} pack_key;

static void key_printf(pack_key *k, const char *fmt, ...) {
    if (!k->ok) return;
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(k->text + k->len, sizeof k->text - k->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof k->text - k->len)
        k->ok = false;
    else
        k->len += (size_t)n;
}

/* Appends " name=<named-data key>", or fails the key for payload bytes. */
static void key_source(pack_key *k, const char *name, const xnn_const_source *src) {
    if (src->key == NULL || src->key_len == 0 || src->key_len > 256) {
        k->ok = false;
        return;
    }
    key_printf(k, " %s=%.*s", name, (int)src->key_len, src->key);
}

/* The key of a quantized product's packed filter (pack_product), or !ok. */
static void qd8_key(const xnn_graph *g, const xnn_const_source *sources, const xnn_node *n,
                    bool bf16, pack_key *k) {
    const uint32_t wi = n->in[1];
    const xnn_value *wv = &g->values[wi];
    const eko_qd8_weights *q = &n->qw;
    uint32_t scale_bits;
    memcpy(&scale_bits, &wv->scale, sizeof scale_bits);
    k->len = 0;
    k->ok = n->qmode == XNN_QM_DYNAMIC;
    key_printf(k, "xnnpack.qd8.v%d n=%zu k=%zu slice=%zu int4=%d bf16=%d dtype=%u quant=%u",
               PACK_QD8_VERSION, q->n, q->k, q->slice_k, (int)q->int4, (int)bf16,
               (unsigned)wv->dtype, (unsigned)wv->quant);
    if (wv->quant == XNN_Q_PER_TENSOR)
        key_printf(k, " scale=%08x", (unsigned)scale_bits);
    else
        key_source(k, "scales", &sources[g->num_values + wi]);
    key_source(k, "w", &sources[wi]);
    if (n->in[2] != XNN_INVALID_ID) key_source(k, "bias", &sources[n->in[2]]);
    if (n->type == XNN_NODE_ConvTranspose2d) {
        const xnn_conv_params *p = &n->p.conv;
        key_printf(k, " deconv.v%d=%u,%u,%u,%u,%u,%u,%u", PACK_QDECONV_VERSION, p->kernel_h,
                   p->kernel_w, p->stride_h, p->stride_w, p->dilation_h, p->dilation_w,
                   p->groups);
    }
}

static float *alloc_packed(const ember_backend_init_ctx *ctx, size_t floats, size_t count) {
    size_t bytes;
    if (ember_mul_overflow(floats, count, &floats) || ember_mul_overflow(floats, 4, &bytes))
        return NULL;
    return ember_alloc(ctx->allocator, bytes, 64);
}

/* ---------------------------------------------------------------------- */
/* Quantized filters                                                      */
/* ---------------------------------------------------------------------- */

/* Scale i of a per-channel or per-group value's loaded scales. */
static float scale_at(const xnn_value *v, const loaded *sc, size_t i) {
    if (!v->scales_bf16) return sc->f[i];
    uint16_t h;
    memcpy(&h, (const uint8_t *)sc->f + 2 * i, sizeof h);
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The scales of quantized constant vi as n floats into out (per tensor:
 * its one scale n times), each checked to be a positive number (XNNPACK
 * checks the same). sc: where its per-channel scales were loaded (kept
 * loaded for groupwise packing), or NULL when per tensor. */
static ember_status value_scales(xnn_graph *g, const ember_backend_init_ctx *ctx,
                                 const xnn_const_source *sources, uint32_t vi, uint32_t ni,
                                 size_t n, loaded *sc, float *out) {
    const xnn_value *v = &g->values[vi];
    memset(sc, 0, sizeof *sc);
    if (v->quant != XNN_Q_PER_TENSOR)
        EMBER_TRY(load_bytes(g, ctx, &sources[g->num_values + vi], vi, true, ni, sc));
    const size_t count = v->quant == XNN_Q_PER_TENSOR ? 1 : v->num_scales;
    if (out != NULL && count != 1 && count != n) {
        unload(sc);
        return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM,
                             "value %u has %zu scales for %zu channels", vi, count, n);
    }
    for (size_t i = 0; i < count; i++) {
        const float f = v->quant == XNN_Q_PER_TENSOR ? v->scale : scale_at(v, sc, i);
        if (!(f > 0.0f && isfinite(f))) {
            unload(sc);
            return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM,
                                 "value %u: scale %zu is %g, not a positive number", vi, i,
                                 (double)f);
        }
        if (out != NULL && i < n) out[i] = f;
    }
    for (size_t i = count; out != NULL && i < n; i++) out[i] = out[0]; /* per tensor */
    return EMBER_OK;
}

/* Static int8: the multipliers in_scale * w_scale[c] / out_scale of node ni
 * into mult, and its int32 bias (zeros when absent) into bias, after
 * checking that the bias is quantized with scale in_scale * w_scale[c]. */
static ember_status qs8_constants(xnn_graph *g, const ember_backend_init_ctx *ctx,
                                  const xnn_const_source *sources, uint32_t ni, size_t n,
                                  float *mult, int32_t *bias) {
    const xnn_node *node = &g->nodes[ni];
    const xnn_value *x = &g->values[node->in[0]], *y = &g->values[node->out[0]];
    loaded sc;
    EMBER_TRY(value_scales(g, ctx, sources, node->in[1], ni, n, &sc, mult));
    unload(&sc);
    memset(bias, 0, n * sizeof *bias);
    ember_status st = EMBER_OK;
    const uint32_t bi = node->in[2];
    if (bi != XNN_INVALID_ID) {
        float *bscale = ember_alloc(ctx->allocator, n * sizeof(float), 64);
        loaded b;
        if (bscale == NULL)
            return xnn_node_fail(g, ni, EMBER_ERR_OUT_OF_MEMORY, "no memory for bias scales");
        EMBER_TRY(value_scales(g, ctx, sources, bi, ni, n, &sc, bscale));
        unload(&sc);
        EMBER_TRY(load(g, ctx, &sources[bi], bi, ni, &b));
        memcpy(bias, b.f, n * sizeof *bias);
        unload(&b);
        /* XNNPACK adds the bias to the int32 sums: it must be in their units */
        for (size_t c = 0; c < n && st == EMBER_OK; c++) {
            const float want = x->scale * mult[c];
            if (fabsf(bscale[c] - want) > 1e-3f * want)
                st = xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM,
                                   "bias (value %u): channel %zu has scale %g, not input scale x "
                                   "filter scale = %g",
                                   bi, c, (double)bscale[c], (double)want);
        }
    }
    for (size_t c = 0; c < n && st == EMBER_OK; c++) {
        mult[c] = x->scale * mult[c] / y->scale;
        if (!isfinite(mult[c]) || !isfinite((float)bias[c] * mult[c]))
            st = xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM,
                               "channel %zu: input scale x filter scale / output scale is %g, "
                               "beyond float32",
                               c, (double)mult[c]);
    }
    return st;
}

/* Depthwise convolution on qint8: filter [1, KH, KW, C] is already tap-major
 * with channels innermost; it is kept with its int32 bias and multipliers. */
static ember_status pack_dw_qs8(xnn_graph *g, const ember_backend_init_ctx *ctx,
                                const xnn_const_source *sources, uint32_t ni) {
    xnn_node *n = &g->nodes[ni];
    const uint32_t wi = n->in[1];
    const xnn_value *wv = &g->values[wi];
    const size_t c = wv->dims[3];
    size_t wbytes; /* int8: one byte a weight */
    if (!xnn_numel(wv->dims, 4, &wbytes))
        return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM, "filter too large");
    n->q.dw_w = ember_alloc(ctx->allocator, wbytes > 0 ? wbytes : 1, 64);
    n->q.dw_bias = ember_alloc(ctx->allocator, (c > 0 ? c : 1) * sizeof(int32_t), 64);
    n->q.dw_mult = ember_alloc(ctx->allocator, (c > 0 ? c : 1) * sizeof(float), 64);
    if (n->q.dw_w == NULL || n->q.dw_bias == NULL || n->q.dw_mult == NULL)
        return xnn_node_fail(g, ni, EMBER_ERR_OUT_OF_MEMORY, "no memory for the filter");
    loaded w;
    EMBER_TRY(load(g, ctx, &sources[wi], wi, ni, &w));
    memcpy(n->q.dw_w, w.f, wbytes);
    unload(&w);
    /* the int32 sums: |bias| < 2^30 and taps x 255 x 128 < 2^30 cannot overflow */
    const size_t taps = c > 0 ? wbytes / c : 0;
    if (taps > 16384)
        return xnn_node_fail(g, ni, EMBER_ERR_NOT_SUPPORTED,
                             "depthwise filter of %zu taps (at most 16384)", taps);
    EMBER_TRY(qs8_constants(g, ctx, sources, ni, c, n->q.dw_mult, n->q.dw_bias));
    for (size_t i = 0; i < c; i++)
        if (n->q.dw_bias[i] < -(1 << 30) || n->q.dw_bias[i] > (1 << 30))
            return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM,
                                 "bias (value %u): channel %zu is %d, beyond 2^30", n->in[2], i,
                                 (int)n->q.dw_bias[i]);
    return EMBER_OK;
}

/* The float function of an elementwise unary node (Clamp's is the
 * identity: its bounds are the node's output range). */
static float unary_f32(const xnn_node *n, float x) {
    switch (n->type) {
    case XNN_NODE_Sigmoid: /* x * sigmoid(x) where a Multiply was folded in (SiLU) */
        return n->fused == XNN_FUSED_SILU ? x / (1.0f + expf(-x)) : 1.0f / (1.0f + expf(-x));
    case XNN_NODE_Tanh: return tanhf(x);
    case XNN_NODE_ELU: return x < 0.0f ? n->p.alpha * expm1f(x) : x;
    case XNN_NODE_LeakyReLU: return x < 0.0f ? n->p.alpha * x : x;
    case XNN_NODE_Hardswish: {
        const float r = x + 3.0f < 0.0f ? 0.0f : (x + 3.0f > 6.0f ? 6.0f : x + 3.0f);
        return x * r / 6.0f;
    }
    default: return x;
    }
}

/* An elementwise unary node on qint8: one output byte for each of the 256
 * input bytes (the float function of the dequantized input, requantized
 * into the output's quantization within the node's output range), so that
 * a run is one lookup per element, as XNNPACK runs these nodes. */
static ember_status pack_unary_qs8(xnn_graph *g, const ember_backend_init_ctx *ctx,
                                   uint32_t ni) {
    xnn_node *n = &g->nodes[ni];
    const xnn_value *x = &g->values[n->in[0]], *y = &g->values[n->out[0]];
    n->q.lut = ember_alloc(ctx->allocator, 256, 64);
    if (n->q.lut == NULL)
        return xnn_node_fail(g, ni, EMBER_ERR_OUT_OF_MEMORY, "no memory for the table");
    const float mult = 1.0f / y->scale;
    for (int32_t b = -128; b < 128; b++) {
        const float v = unary_f32(n, x->scale * (float)(b - x->zero_point));
        n->q.lut[(uint8_t)(int8_t)b] = eko_qs8_round(v * mult, y->zero_point, n->q.qmin,
                                                     n->q.qmax);
    }
    return EMBER_OK;
}

/* A grouped static Conv2d's filter [OC, KH, KW, IC / G] as the filter of
 * one product over every input channel, [OC, KH, KW, IC], zero outside
 * each output channel's group: exact (a zero weight adds nothing to the
 * sums or to the zero point's correction), at G times the multiply-adds of
 * the groups alone. Written to *dense (from ctx->allocator). */
static ember_status expand_groups(xnn_graph *g, const ember_backend_init_ctx *ctx, uint32_t ni,
                                  const int8_t *w, int8_t **dense, size_t *dense_ic) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_conv_params *p = &n->p.conv;
    const size_t taps = (size_t)p->kernel_h * p->kernel_w, gin = p->group_in;
    const size_t gout = p->group_out, groups = p->groups;
    size_t cin, oc, row, bytes;
    if (ember_mul_overflow(groups, gin, &cin) || ember_mul_overflow(groups, gout, &oc) ||
        ember_mul_overflow(taps, cin, &row) || ember_mul_overflow(oc, row, &bytes))
        return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM, "filter too large");
    *dense = ember_alloc(ctx->allocator, bytes > 0 ? bytes : 1, 64);
    if (*dense == NULL)
        return xnn_node_fail(g, ni, EMBER_ERR_OUT_OF_MEMORY,
                             "no memory for the grouped filter (%zu bytes)", bytes);
    memset(*dense, 0, bytes);
    for (size_t o = 0; o < oc; o++) {
        const size_t grp = o / gout;
        for (size_t t = 0; t < taps; t++)
            memcpy(*dense + o * row + t * cin + grp * gin, w + (o * taps + t) * gin, gin);
    }
    *dense_ic = row;
    return EMBER_OK;
}

/* The int8 filter [OC, KH, KW, GIN] of a quantized ConvTranspose2d as the
 * filters of its phases (xnn_graph.h): for each group and each class
 * (ry, rx), rows [GOUT] of slots (jy, jx) x GIN, slot (jy, jx) holding tap
 * (ry + jy * period_h, rx + jx * period_w) or zeros past the kernel. Every
 * tap lands in exactly one slot, so the packer still sees every weight.
 * Packs them one after the other, each qw->panels * panel_bytes long. */
static bool pack_deconv(const xnn_node *n, const ember_backend_init_ctx *ctx, const int8_t *w,
                        const float *scales, const float *bias, int8_t *phase, size_t bytes_each,
                        uint8_t *out) {
    const xnn_conv_params *p = &n->p.conv;
    const xnn_deconv_axis ay = xnn_deconv_axis_of(p->kernel_h, p->stride_h, p->dilation_h);
    const xnn_deconv_axis ax = xnn_deconv_axis_of(p->kernel_w, p->stride_w, p->dilation_w);
    const size_t gin = p->group_in, gout = p->group_out, k = n->qw.k;
    bool ok = true;
    for (size_t grp = 0; grp < p->groups; grp++)
        for (size_t ry = 0; ry < ay.classes; ry++)
            for (size_t rx = 0; rx < ax.classes; rx++, out += bytes_each) {
                memset(phase, 0, gout * k); /* checked by the caller */
                for (size_t o = 0; o < gout; o++)
                    for (size_t jy = 0, ky = ry; jy < ay.slots && ky < p->kernel_h;
                         jy++, ky += ay.period)
                        for (size_t jx = 0, kx = rx; jx < ax.slots && kx < p->kernel_w;
                             jx++, kx += ax.period)
                            memcpy(phase + o * k + (jy * ax.slots + jx) * gin,
                                   w + (((grp * gout + o) * p->kernel_h + ky) * p->kernel_w + kx) *
                                           gin,
                                   gin);
                eko_qd8_weights one = n->qw;
                ok &= eko_qd8_pack_parallel(&one, ctx->threadpool, phase, scales + grp * gout,
                                            bias != NULL ? bias + grp * gout : NULL, out);
            }
    return ok;
}

/* A product on a quantized filter (FullyConnected, Conv2d, ConvTranspose2d
 * of qdint8 or qint8 input): the int8 or int4 filter [OC, K], its scales
 * and bias into the layout of qd8_gemm.h (a transposed convolution: the
 * filters of its phases, see pack_deconv; a grouped static Conv2d: one
 * product over every input channel, see expand_groups). Static int8 layers
 * pack multipliers
 * in_scale * w_scale / out_scale as the scales and their int32 bias in
 * output steps plus the output zero point as the bias, so that the
 * kernels' results are output values before rounding. */
static ember_status pack_product(xnn_graph *g, const ember_backend_init_ctx *ctx,
                                 const xnn_const_source *sources, uint32_t ni) {
    xnn_node *n = &g->nodes[ni];
    const uint32_t wi = n->in[1];
    const xnn_value *wv = &g->values[wi];
    const size_t oc = wv->dims[0];
    const bool deconv = n->type == XNN_NODE_ConvTranspose2d;
    size_t ic, rows = oc, packs = 1, bytes_each = 0, phase_bytes = 0;
    if (!xnn_numel(wv->dims + 1, wv->rank - 1u, &ic))
        return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM, "filter too large");
    const bool grouped = n->type == XNN_NODE_Conv2d && n->p.conv.groups > 1;
    if (grouped) /* expanded below to one product over every input channel */
        ic = (size_t)n->p.conv.kernel_h * n->p.conv.kernel_w * n->p.conv.group_in *
             n->p.conv.groups; /* the input's channels times the taps: checked by xnn_shape.c */
    if (deconv) {
        /* per group and phase class: [GOUT, slots_h * slots_w * GIN] */
        const xnn_conv_params *p = &n->p.conv;
        const xnn_deconv_axis ay = xnn_deconv_axis_of(p->kernel_h, p->stride_h, p->dilation_h);
        const xnn_deconv_axis ax = xnn_deconv_axis_of(p->kernel_w, p->stride_w, p->dilation_w);
        rows = p->group_out;
        if (ember_mul_overflow(ay.slots, ax.slots, &ic) ||
            ember_mul_overflow(ic, p->group_in, &ic) ||
            ember_mul_overflow(ay.classes, ax.classes, &packs) ||
            ember_mul_overflow(packs, p->groups, &packs) ||
            ember_mul_overflow(rows, ic, &phase_bytes))
            return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM, "filter too large");
    }
    const bool groupwise = wv->quant == XNN_Q_PER_CHANNEL_GROUP;
    const bool int4 = wv->dtype != XNN_DT_QCINT8 && wv->dtype != XNN_DT_QINT8;
    const size_t slice = groupwise ? (size_t)wv->group_size : ic;
    /* groupwise scales are packed as they are (float or bfloat16); per
     * channel or per tensor ones as floats */
    const bool bf16 = groupwise && wv->scales_bf16;
    size_t bytes, fbytes;
    if (!eko_qd8_weights_init(&n->qw, rows, ic, slice, int4, bf16, &bytes_each) ||
        ember_mul_overflow(bytes_each, packs, &bytes) ||
        ember_mul_overflow(oc > 0 ? oc : 1, sizeof(float), &fbytes))
        return xnn_node_fail(g, ni, EMBER_ERR_NOT_SUPPORTED,
                             "quantized filter [%zu, %zu] with a scale every %zu input "
                             "channels cannot be packed (1 to %d input channels per scale)",
                             rows, ic, slice, EKO_QD8_MAX_K);
    if (n->in[2] != XNN_INVALID_ID && !is_const(sources, n->in[2]))
        return xnn_node_fail(g, ni, EMBER_ERR_NOT_SUPPORTED,
                             "a bias that is not constant, with a quantized filter");
    pack_key key;
    qd8_key(g, sources, n, bf16, &key);
    if (key.ok) {
        const void *cached = ember_backend_find_packed(ctx, key.text, key.len, bytes);
        if (cached != NULL) {
            n->qw.data = cached;
            return EMBER_OK;
        }
    }
    uint8_t *packed = ember_alloc(ctx->allocator, bytes > 0 ? bytes : 1, 64);
    float *scales = ember_alloc(ctx->allocator, fbytes, 64);
    float *fbias = ember_alloc(ctx->allocator, fbytes, 64);
    int32_t *qbias = ember_alloc(ctx->allocator, fbytes, 64);
    int8_t *phase = deconv ? ember_alloc(ctx->allocator, phase_bytes, 64) : NULL;
    if (packed == NULL || scales == NULL || fbias == NULL || qbias == NULL ||
        (deconv && phase == NULL))
        return xnn_node_fail(g, ni, EMBER_ERR_OUT_OF_MEMORY,
                             "cannot allocate %zu bytes of packed weights", bytes);
    loaded w, sc, b;
    memset(&sc, 0, sizeof sc);
    memset(&b, 0, sizeof b);
    const float *bias = NULL;
    const void *pack_scales = scales;
    ember_status st;
    if (n->qmode == XNN_QM_STATIC) {
        st = qs8_constants(g, ctx, sources, ni, oc, scales, qbias);
        const xnn_value *y = &g->values[n->out[0]];
        for (size_t c = 0; c < oc; c++)
            fbias[c] = (float)qbias[c] * scales[c] + (float)y->zero_point;
        bias = fbias;
    } else {
        /* groupwise scales go to the packer as they are (float or bfloat16) */
        st = value_scales(g, ctx, sources, wi, ni, oc, &sc, groupwise ? NULL : scales);
        if (st == EMBER_OK && groupwise) pack_scales = sc.f;
        if (st == EMBER_OK && n->in[2] != XNN_INVALID_ID) {
            st = load(g, ctx, &sources[n->in[2]], n->in[2], ni, &b);
            bias = b.f;
        }
    }
    if (st == EMBER_OK) st = load(g, ctx, &sources[wi], wi, ni, &w);
    else memset(&w, 0, sizeof w);
    bool packed_ok = true;
    if (st == EMBER_OK && deconv) {
        packed_ok = pack_deconv(n, ctx, (const int8_t *)(const void *)w.f, scales, bias, phase,
                                bytes_each, packed);
        n->qw.data = packed;
    } else if (st == EMBER_OK) {
        const void *filter = w.f;
        if (grouped) {
            int8_t *dense = NULL;
            size_t dense_ic = 0;
            st = expand_groups(g, ctx, ni, (const int8_t *)w.f, &dense, &dense_ic);
            if (st == EMBER_OK && dense_ic != ic)
                st = xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM,
                                   "grouped filter does not match");
            filter = dense;
        }
        if (st == EMBER_OK)
            packed_ok = eko_qd8_pack_parallel(&n->qw, ctx->threadpool, filter, pack_scales, bias,
                                              packed);
    }
    if (st == EMBER_OK && !packed_ok)
        st = xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM,
                           "int8 filter (value %u) holds -128; symmetric int8 weights lie in "
                           "[-127, 127]",
                           wi);
    unload(&w);
    unload(&sc);
    unload(&b);
    if (st == EMBER_OK && key.ok) ember_backend_add_packed(ctx, key.text, key.len, packed, bytes);
    return st;
}

static ember_status pack_node(xnn_graph *g, const ember_backend_init_ctx *ctx,
                              const xnn_const_source *sources, uint32_t ni) {
    xnn_node *n = &g->nodes[ni];
    if (n->qmode != XNN_QM_FLOAT) {
        if (n->type == XNN_NODE_FullyConnected || n->type == XNN_NODE_Conv2d ||
            n->type == XNN_NODE_ConvTranspose2d)
            return pack_product(g, ctx, sources, ni);
        if (n->type == XNN_NODE_DepthwiseConv2d) return pack_dw_qs8(g, ctx, sources, ni);
        switch (n->type) {
        case XNN_NODE_Clamp: case XNN_NODE_Sigmoid: case XNN_NODE_Tanh: case XNN_NODE_ELU:
        case XNN_NODE_LeakyReLU: case XNN_NODE_Hardswish:
            return pack_unary_qs8(g, ctx, ni);
        default:
            return EMBER_OK;
        }
    }
    const eko_f32_gemm_config *cfg = eko_f32_gemm_config_for((eko_isa)g->isa);
    loaded w, b;
    memset(&b, 0, sizeof b);
    size_t floats, groups = 1, rows = 0, depth = 0, slice_floats = 0;
    bool k_major = false;
    const xnn_value *wv = &g->values[n->in[1]];
    switch (n->type) {
    case XNN_NODE_FullyConnected:
        if (!is_const(sources, n->in[1])) return EMBER_OK; /* packed at every run */
        k_major = n->flags & XNN_FLAG_TRANSPOSE_WEIGHTS;
        rows = wv->dims[k_major ? 1 : 0];
        depth = wv->dims[k_major ? 0 : 1];
        break;
    case XNN_NODE_Conv2d:
        groups = n->p.conv.groups;
        rows = n->p.conv.group_out;
        /* narrow groups pack for narrower panels (xnn_run_conv.c) */
        if (groups > 1) cfg = eko_f32_gemm_config_grouped(cfg, rows);
        depth = (size_t)n->p.conv.kernel_h * n->p.conv.kernel_w * n->p.conv.group_in;
        break;
    case XNN_NODE_ConvTranspose2d:
        /* per group, rows (j, ky, kx) of the filter: the product gives every
         * output tap of an input pixel (see xnn_run_conv.c) */
        groups = n->p.conv.groups;
        rows = (size_t)n->p.conv.group_out * n->p.conv.kernel_h * n->p.conv.kernel_w;
        depth = n->p.conv.group_in;
        break;
    case XNN_NODE_BatchMatrixMultiply: {
        if (!is_const(sources, n->in[1])) return EMBER_OK;
        /* every batch slice of the constant operand packs on its own */
        bool t = n->flags & XNN_FLAG_TRANSPOSE_WEIGHTS;
        rows = wv->dims[wv->rank - (t ? 2 : 1)];
        depth = wv->dims[wv->rank - (t ? 1 : 2)];
        k_major = !t;
        if (!xnn_numel(wv->dims, wv->rank - 2u, &groups))
            return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM, "operand too large");
        break;
    }
    default:
        return EMBER_OK;
    }
    size_t bytes;
    if (!eko_f32_packed_size(cfg, rows, depth, &slice_floats) ||
        ember_mul_overflow(slice_floats, groups, &floats) ||
        ember_mul_overflow(floats, sizeof(float), &bytes))
        return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM, "weights too large to pack");
    const bool bias_in_pack =
        n->type != XNN_NODE_ConvTranspose2d && n->type != XNN_NODE_BatchMatrixMultiply;
    const bool has_bias = bias_in_pack && n->in[2] != XNN_INVALID_ID;
    if (has_bias && !is_const(sources, n->in[2]))
        return xnn_node_fail(g, ni, EMBER_ERR_NOT_SUPPORTED,
                             "a bias that is not constant, with a constant filter");
    /* the layout depends on the kernels' panel width, so on the level */
    pack_key key = {.len = 0, .ok = true};
    key_printf(&key, "xnnpack.f32.v%d isa=%d nr=%zu rows=%zu depth=%zu groups=%zu kmajor=%d",
               PACK_F32_VERSION, (int)cfg->isa, cfg->nr, rows, depth, groups, (int)k_major);
    key_source(&key, "w", &sources[n->in[1]]);
    if (has_bias) key_source(&key, "bias", &sources[n->in[2]]);
    if (key.ok) {
        n->packed = ember_backend_find_packed(ctx, key.text, key.len, bytes);
        if (n->packed != NULL) return EMBER_OK;
    }
    float *packed = alloc_packed(ctx, slice_floats, groups);
    if (packed == NULL)
        return xnn_node_fail(g, ni, EMBER_ERR_OUT_OF_MEMORY,
                             "cannot allocate %zu floats of packed weights", floats);
    EMBER_TRY(load(g, ctx, &sources[n->in[1]], n->in[1], ni, &w));
    if (has_bias) {
        ember_status st = load(g, ctx, &sources[n->in[2]], n->in[2], ni, &b);
        if (st != EMBER_OK) {
            unload(&w);
            return st;
        }
    }
    size_t slice = rows * depth;
    for (size_t grp = 0; grp < groups; grp++)
        eko_f32_pack_parallel(cfg, ctx->threadpool, rows, depth, w.f + grp * slice, k_major,
                              b.f != NULL ? b.f + grp * rows : NULL, packed + grp * slice_floats);
    unload(&w);
    unload(&b);
    n->packed = packed;
    if (key.ok) ember_backend_add_packed(ctx, key.text, key.len, packed, bytes);
    return EMBER_OK;
}

ember_status xnn_pack(xnn_graph *g, const ember_backend_init_ctx *ctx,
                      const xnn_const_source *sources) {
    g->isa = (int)eko_f32_gemm_config_active()->isa;
    g->qd8 = eko_qd8_gemm_config_active();
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) EMBER_TRY(pack_node(g, ctx, sources, ni));
    /* copies of the constants some node reads as they are */
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        if (!sources[vi].present) continue;
        uint32_t reader = XNN_INVALID_ID;
        for (uint32_t ni = 0; ni < g->num_nodes && reader == XNN_INVALID_ID; ni++) {
            const xnn_node *n = &g->nodes[ni];
            for (uint32_t k = 0; k < n->nin; k++)
                if (n->in[k] == vi && !packed_role(n, k, sources)) reader = ni;
        }
        if (reader == XNN_INVALID_ID) continue;
        loaded c;
        EMBER_TRY(load(g, ctx, &sources[vi], vi, reader, &c));
        void *copy = ember_alloc(ctx->allocator, c.size, 64);
        if (copy == NULL) {
            unload(&c);
            return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY,
                                      "xnnpack: cannot allocate %zu bytes for constant %u",
                                      c.size, vi);
        }
        memcpy(copy, c.f, c.size);
        unload(&c);
        g->values[vi].constant = copy;
        g->values[vi].constant_bytes = c.size;
        g->values[vi].data = copy;
    }
    return EMBER_OK;
}
