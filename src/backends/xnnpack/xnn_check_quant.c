/*
 * Which quantized nodes this backend runs (xnn_graph.h), checked once at
 * init on the decoded payload: the node's operands must have the types,
 * quantization kinds and roles (constant, intermediate) its kernels take.
 * A node that passes gets its qmode; one that does not fails naming itself,
 * EMBER_ERR_NOT_SUPPORTED where a valid payload asks for something this
 * backend does not run, EMBER_ERR_INVALID_PROGRAM where the payload
 * contradicts itself. The constants' values (weight scales, bias scales)
 * are checked when they are loaded (xnn_pack.c).
 */
#include <math.h>

#include "kernels/optimized/qs8_ops.h"
#include "xnn_graph.h"

#define FAIL(...) return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM, __VA_ARGS__)
#define REFUSE(...) return xnn_node_fail(g, ni, EMBER_ERR_NOT_SUPPORTED, __VA_ARGS__)

static const xnn_value *in(const xnn_graph *g, const xnn_node *n, int k) {
    return &g->values[n->in[k]];
}
static const xnn_value *out(const xnn_graph *g, const xnn_node *n, int k) {
    return &g->values[n->out[k]];
}

static bool is_plain_fp32(const xnn_value *v) {
    return v->dtype == XNN_DT_FP32 && v->quant == XNN_Q_NONE;
}

/* An intermediate made and read inside the subgraph (not external, not constant). */
static bool is_internal(const xnn_value *v) { return v->flags == 0 && !v->has_constant; }

static bool is_qs8(const xnn_value *v) {
    return v->dtype == XNN_DT_QINT8 && v->quant == XNN_Q_PER_TENSOR;
}

bool xnn_node_is_quantized(const xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    for (uint32_t k = 0; k < n->nin + n->nout; k++) {
        uint32_t vi = k < n->nin ? n->in[k] : n->out[k - n->nin];
        if (vi != XNN_INVALID_ID && g->values[vi].quant != XNN_Q_NONE) return true;
    }
    return false;
}

/* A qint8 activation (operand k of node ni, value vi): quantized per
 * tensor, zero point in int8, not a constant. It may be an input or output
 * of the delegate: ExecuTorch hands such a value over as an int8 tensor
 * holding the quantized bytes (the scale and zero point live only in the
 * payload), which the nodes read and write in place (xnn_backend.c checks
 * its dtype). */
static ember_status check_act(const xnn_graph *g, uint32_t ni, uint32_t vi, const char *role) {
    const xnn_value *v = &g->values[vi];
    if (!is_qs8(v))
        REFUSE("%s (value %u) is %s%s; with qint8 activations this backend takes qint8 "
               "quantized per tensor",
               role, vi, xnn_dtype_name(v->dtype),
               v->quant == XNN_Q_PER_TENSOR || v->quant == XNN_Q_NONE ? "" : " (not per tensor)");
    if (v->zero_point < -128 || v->zero_point > 127)
        FAIL("%s (value %u): zero point %d is outside int8", role, vi, (int)v->zero_point);
    if (v->has_constant) REFUSE("%s (value %u) is a qint8 constant", role, vi);
    return EMBER_OK;
}

/* Convert float32 -> qdint8 (dynamic per-token quantization). */
static ember_status check_convert_qd8(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = in(g, n, 0), *y = out(g, n, 0);
    if (!is_plain_fp32(x))
        FAIL("quantizes a %s value; dynamic quantization takes float32", xnn_dtype_name(x->dtype));
    if (y->quant != XNN_Q_PER_TOKEN)
        FAIL("qdint8 output (value %u) is not quantized per token", n->out[0]);
    if (!is_internal(y))
        FAIL("qdint8 value %u is external or constant; it must stay inside the subgraph",
             n->out[0]);
    return EMBER_OK;
}

/* Convert float32 <-> qint8. */
static ember_status check_convert_qs8(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = in(g, n, 0), *y = out(g, n, 0);
    if (is_plain_fp32(x) && y->dtype == XNN_DT_QINT8) return check_act(g, ni, n->out[0], "output");
    if (x->dtype == XNN_DT_QINT8 && is_plain_fp32(y)) return check_act(g, ni, n->in[0], "input");
    REFUSE("converts %s to %s; this backend converts float32 to and from qint8 and float32 to "
           "qdint8",
           xnn_dtype_name(x->dtype), xnn_dtype_name(y->dtype));
}

/* The quantized filter of a product or convolution: constant, int8 in
 * [-127, 127] (checked when packed), per channel along `channel_dim` or
 * (static only) per tensor with zero point 0. */
static ember_status check_filter(const xnn_graph *g, uint32_t ni, int channel_dim,
                                 bool per_tensor_ok) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *w = in(g, n, 1);
    const bool channelwise = w->dtype == XNN_DT_QCINT8 && w->quant == XNN_Q_PER_CHANNEL;
    const bool tensorwise = per_tensor_ok && w->dtype == XNN_DT_QINT8 &&
                            w->quant == XNN_Q_PER_TENSOR;
    if (!channelwise && !tensorwise)
        REFUSE("filter (value %u) is %s; this backend runs qcint8 filters quantized per "
               "channel%s",
               n->in[1], xnn_dtype_name(w->dtype),
               per_tensor_ok ? " and qint8 filters quantized per tensor" : "");
    if (!w->has_constant) FAIL("quantized filter (value %u) is not a constant", n->in[1]);
    if (channelwise && w->channel_dim != channel_dim)
        FAIL("filter (value %u) is quantized along dim %d, not its output channels (dim %d)",
             n->in[1], (int)w->channel_dim, channel_dim);
    if (tensorwise && w->zero_point != 0)
        FAIL("qint8 filter (value %u) has zero point %d; int8 weights are symmetric (0)",
             n->in[1], (int)w->zero_point);
    return EMBER_OK;
}

/* The bias of a static product: absent, or int32 constant quantized as the
 * filter is (per channel / per tensor) with zero point 0; its scales are
 * compared with input scale x filter scales when loaded. */
static ember_status check_qs8_bias(const xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    if (n->in[2] == XNN_INVALID_ID) return EMBER_OK;
    const xnn_value *b = in(g, n, 2), *w = in(g, n, 1);
    const bool channelwise = b->dtype == XNN_DT_QCINT32 && b->quant == XNN_Q_PER_CHANNEL;
    const bool tensorwise = b->dtype == XNN_DT_QINT32 && b->quant == XNN_Q_PER_TENSOR;
    if (!channelwise && !tensorwise)
        FAIL("bias (value %u) is %s; a qint8 product takes a qcint32 or qint32 bias", n->in[2],
             xnn_dtype_name(b->dtype));
    if (channelwise != (w->quant == XNN_Q_PER_CHANNEL))
        FAIL("bias (value %u) is quantized %s, the filter %s", n->in[2],
             channelwise ? "per channel" : "per tensor",
             channelwise ? "per tensor" : "per channel");
    if (!b->has_constant) REFUSE("bias (value %u) is not a constant", n->in[2]);
    if (channelwise && b->channel_dim != 0)
        FAIL("bias (value %u) is quantized along dim %d", n->in[2], (int)b->channel_dim);
    if (tensorwise && b->zero_point != 0)
        FAIL("bias (value %u) has zero point %d, not 0", n->in[2], (int)b->zero_point);
    return EMBER_OK;
}

/* The float32 bias of a dynamic product: absent or a float32 constant. */
static ember_status check_f32_bias(const xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    if (n->in[2] == XNN_INVALID_ID) return EMBER_OK;
    if (!is_plain_fp32(in(g, n, 2)))
        FAIL("bias (value %u) is %s; a dynamically quantized product takes a float32 bias",
             n->in[2], xnn_dtype_name(in(g, n, 2)->dtype));
    return EMBER_OK;
}

/* Output range of a static node in output steps. */
static void set_range(xnn_graph *g, uint32_t ni) {
    xnn_node *n = &g->nodes[ni];
    const xnn_value *y = out(g, n, 0);
    eko_qs8_range((eko_qs8_params){y->scale, y->zero_point}, n->out_min, n->out_max,
                  &n->q.qmin, &n->q.qmax);
}

/* FullyConnected of a qdint8 input with a quantized constant filter. */
static ember_status check_fc_qd8(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = in(g, n, 0), *w = in(g, n, 1), *y = out(g, n, 0);
    if (x->quant != XNN_Q_PER_TOKEN || !is_internal(x))
        FAIL("qdint8 input (value %u) is not a per-token quantized intermediate", n->in[0]);
    if (x->num_nonbatch_dims != 1)
        REFUSE("qdint8 input quantized over %u trailing dims (this backend runs 1: one scale "
               "and zero point per row)",
               x->num_nonbatch_dims);
    const bool channelwise = (w->dtype == XNN_DT_QCINT8 || w->dtype == XNN_DT_QCINT4) &&
                             w->quant == XNN_Q_PER_CHANNEL;
    const bool groupwise = w->dtype == XNN_DT_QBINT4 && w->quant == XNN_Q_PER_CHANNEL_GROUP;
    if (!channelwise && !groupwise)
        REFUSE("filter (value %u) is %s; with a qdint8 input this backend runs qcint8 and "
               "qcint4 filters quantized per channel, and qbint4 quantized per group",
               n->in[1], xnn_dtype_name(w->dtype));
    if (!w->has_constant) FAIL("quantized filter (value %u) is not a constant", n->in[1]);
    if (w->rank != 2 || w->channel_dim != 0)
        FAIL("quantized filter must be [output channels, input channels], quantized along dim 0");
    if (n->flags & XNN_FLAG_TRANSPOSE_WEIGHTS)
        REFUSE("transposed quantized filters are not supported");
    EMBER_TRY(check_f32_bias(g, ni));
    if (!is_plain_fp32(y))
        FAIL("output is %s; a quantized product makes float32", xnn_dtype_name(y->dtype));
    return EMBER_OK;
}

/* Conv2d or ConvTranspose2d of a qdint8 input (one scale and zero point
 * per image); transposed ones in any number of groups. */
static ember_status check_conv_qd8(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = in(g, n, 0), *y = out(g, n, 0);
    if (x->quant != XNN_Q_PER_TOKEN || !is_internal(x))
        FAIL("qdint8 input (value %u) is not a per-token quantized intermediate", n->in[0]);
    if (x->rank != 4 || x->num_nonbatch_dims != 3)
        REFUSE("qdint8 input quantized over %u trailing dims of %u (this backend runs one "
               "scale and zero point per NHWC image: 3 of 4)",
               x->num_nonbatch_dims, x->rank);
    /* in groups: packed as one product over all input channels (xnn_pack.c) */
    EMBER_TRY(check_filter(g, ni, 0, false));
    EMBER_TRY(check_f32_bias(g, ni));
    if (!is_plain_fp32(y))
        FAIL("output is %s; a dynamically quantized convolution makes float32",
             xnn_dtype_name(y->dtype));
    return EMBER_OK;
}

/* FullyConnected, Conv2d, DepthwiseConv2d, ConvTranspose2d of a qint8 input. */
static ember_status check_product_qs8(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const bool depthwise = n->type == XNN_NODE_DepthwiseConv2d;
    const int channel_dim = depthwise ? 3 : 0;
    EMBER_TRY(check_act(g, ni, n->in[0], "input"));
    EMBER_TRY(check_filter(g, ni, channel_dim, true));
    EMBER_TRY(check_qs8_bias(g, ni));
    EMBER_TRY(check_act(g, ni, n->out[0], "output"));
    if (n->type == XNN_NODE_FullyConnected) {
        if (in(g, n, 1)->rank != 2) FAIL("quantized filter must be 2-d");
        if (n->flags & XNN_FLAG_TRANSPOSE_WEIGHTS)
            REFUSE("transposed quantized filters are not supported");
    }
    /* Conv2d in groups: packed as one product over all input channels
     * (xnn_pack.c) */
    return EMBER_OK;
}

/* Nodes whose every operand is a qint8 activation; `same`: quantized
 * alike (the node moves or compares values without rescaling them). */
static ember_status check_all_qs8(xnn_graph *g, uint32_t ni, bool same) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *y = out(g, n, 0);
    for (uint32_t k = 0; k < n->nin; k++) {
        if (n->in[k] == XNN_INVALID_ID) continue;
        EMBER_TRY(check_act(g, ni, n->in[k], "input"));
        const xnn_value *x = in(g, n, (int)k);
        if (same && is_qs8(y) && (x->scale != y->scale || x->zero_point != y->zero_point))
            REFUSE("input %u (value %u) is quantized with scale %g, zero point %d and the "
                   "output with %g, %d; this backend runs this node on equal quantization",
                   k, n->in[k], (double)x->scale, (int)x->zero_point, (double)y->scale,
                   (int)y->zero_point);
    }
    return check_act(g, ni, n->out[0], "output");
}

ember_status xnn_check_quantized(xnn_graph *g, uint32_t ni) {
    xnn_node *n = &g->nodes[ni];
    const xnn_value *x = in(g, n, 0);
    ember_status st;
    n->qmode = XNN_QM_STATIC;
    switch (n->type) {
    case XNN_NODE_Convert:
        if (out(g, n, 0)->dtype == XNN_DT_QDINT8) {
            n->qmode = XNN_QM_FLOAT; /* float32 in, the quantization runs as a conversion */
            return check_convert_qd8(g, ni);
        }
        st = check_convert_qs8(g, ni);
        break;
    case XNN_NODE_FullyConnected:
        if (x->dtype == XNN_DT_QDINT8) {
            n->qmode = XNN_QM_DYNAMIC;
            return check_fc_qd8(g, ni);
        }
        st = check_product_qs8(g, ni);
        break;
    case XNN_NODE_Conv2d: case XNN_NODE_ConvTranspose2d:
        if (x->dtype == XNN_DT_QDINT8) {
            n->qmode = XNN_QM_DYNAMIC;
            return check_conv_qd8(g, ni);
        }
        st = check_product_qs8(g, ni);
        break;
    case XNN_NODE_DepthwiseConv2d:
        st = check_product_qs8(g, ni);
        break;
    case XNN_NODE_Add: case XNN_NODE_Subtract: case XNN_NODE_Multiply:
        st = check_all_qs8(g, ni, false);
        break;
    case XNN_NODE_Clamp: case XNN_NODE_Sigmoid: case XNN_NODE_Tanh: case XNN_NODE_ELU:
    case XNN_NODE_LeakyReLU: case XNN_NODE_Hardswish:
        /* one table of the 256 input bytes (xnn_pack.c), any quantization each side */
        st = check_all_qs8(g, ni, false);
        break;
    case XNN_NODE_GlobalAvgPooling2d:
        st = check_all_qs8(g, ni, false);
        if (st == EMBER_OK && x->rank != 4) REFUSE("qint8 global pooling of a rank-%u input", x->rank);
        /* the int32 sums of a channel hold 2^31 / 256 pixels */
        if (st == EMBER_OK && (uint64_t)x->shape[1] * x->shape[2] > (1u << 23))
            REFUSE("qint8 global pooling over more than 2^23 pixels");
        break;
    case XNN_NODE_MaxPooling2d: case XNN_NODE_StaticTranspose: case XNN_NODE_StaticReshape:
    case XNN_NODE_StaticSlice: case XNN_NODE_Copy: case XNN_NODE_Concatenate2:
    case XNN_NODE_Concatenate3: case XNN_NODE_Concatenate4: case XNN_NODE_Concatenate5:
        st = check_all_qs8(g, ni, true);
        break;
    default:
        REFUSE("%s on quantized values is not supported by this backend (it runs qint8 "
               "Convert, FullyConnected, Conv2d, DepthwiseConv2d, ConvTranspose2d, Add, "
               "Subtract, Multiply, MaxPooling2d, GlobalAvgPooling2d, Clamp, Sigmoid, Tanh, ELU, "
               "LeakyReLU, Hardswish and layout nodes, and dynamically quantized "
               "FullyConnected, Conv2d and ConvTranspose2d)",
               xnn_node_name(n->type));
    }
    if (st != EMBER_OK) return st;
    if (n->type == XNN_NODE_Convert && is_plain_fp32(out(g, n, 0))) return EMBER_OK;
    set_range(g, ni);
    return EMBER_OK;
}

void xnn_fuse_qs8_clamps(xnn_graph *g) {
    bool any = false;
    for (uint32_t ci = 0; ci < g->num_nodes; ci++) {
        xnn_node *c = &g->nodes[ci];
        if (c->type != XNN_NODE_Clamp || c->nin != 1 || c->nout != 1) continue;
        const uint32_t vi = c->in[0];
        const uint32_t pi = vi < g->num_values ? xnn_value_producer(g, vi) : UINT32_MAX;
        if (pi >= ci) continue;
        xnn_node *p = &g->nodes[pi];
        const xnn_value *v = &g->values[vi];
        bool fuse = v->flags == 0 && is_qs8(v) && p->nout == 1 &&
                    (p->type == XNN_NODE_Conv2d || p->type == XNN_NODE_DepthwiseConv2d ||
                     p->type == XNN_NODE_ConvTranspose2d ||
                     p->type == XNN_NODE_FullyConnected) &&
                    p->in[0] < g->num_values && g->values[p->in[0]].dtype == XNN_DT_QINT8 &&
                    is_qs8(&g->values[c->out[0]]) && xnn_value_readers(g, vi) == 1;
        if (!fuse) continue;
        p->out[0] = c->out[0];
        p->out_min = p->out_min > c->out_min ? p->out_min : c->out_min;
        p->out_max = p->out_max < c->out_max ? p->out_max : c->out_max;
        g->values[vi].first = -1; /* made by no node now: not planned */
        c->nin = c->nout = 0;     /* dropped below */
        any = true;
    }
    if (any) xnn_drop_emptied_nodes(g);
}
