/*
 * Shape inference for XNNPACK subgraphs (xnn_graph.h).
 *
 * The serialized dims of intermediates are upper bounds; the shapes a run
 * uses follow from its input shapes by XNNPACK's rules, node by node in
 * file order. At init the rules run once on the serialized input dims, which
 * also checks that every node's operands fit together and are of a type the
 * backend runs; at execute they run again for the actual input shapes, and a
 * value that would outgrow the bytes planned for it is an error, never an
 * overrun.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "xnn_graph.h"

ember_status xnn_node_fail(const xnn_graph *g, uint32_t node, ember_status st, const char *fmt,
                           ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const xnn_node *n = &g->nodes[node];
    return ember_backend_fail_at(st, (int64_t)n->debug_handle,
                                 "xnnpack node %u (%s, debug handle %u): %s", node,
                                 xnn_node_name(n->type), n->debug_handle, msg);
}

#define FAIL(...) return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM, __VA_ARGS__)

static xnn_value *in(xnn_graph *g, const xnn_node *n, int k) { return &g->values[n->in[k]]; }
static xnn_value *out(xnn_graph *g, const xnn_node *n, int k) { return &g->values[n->out[k]]; }

static void set_shape(xnn_value *v, const size_t *shape, size_t rank) {
    v->rank = (uint8_t)rank;
    for (size_t i = 0; i < rank; i++) v->shape[i] = shape[i];
}



/* Checks that every operand of a node is of a type this backend runs. */
static ember_status check_types(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    if (xnn_node_is_quantized(g, ni)) return xnn_check_quantized(g, ni);
    for (uint32_t k = 0; k < n->nin + n->nout; k++) {
        uint32_t vi = k < n->nin ? n->in[k] : n->out[k - n->nin];
        if (vi == XNN_INVALID_ID) continue;
        const xnn_value *v = &g->values[vi];
        bool is_float = v->dtype == XNN_DT_FP32 ||
                        (n->type == XNN_NODE_Convert &&
                         (v->dtype == XNN_DT_FP16 || v->dtype == XNN_DT_BF16));
        /* argmax pooling's second output holds indices */
        bool index = n->type == XNN_NODE_ArgMaxPooling2d && k == n->nin + 1u;
        if (index ? v->dtype != XNN_DT_INT32 && v->dtype != XNN_DT_FP32 : !is_float)
            FAIL("operand %u (value %u) is %s without quantization parameters; this backend "
                 "runs float32 subgraphs (and float16/bfloat16 conversions, and quantized "
                 "values with their parameters)",
                 k, vi, xnn_dtype_name(v->dtype));
    }
    return EMBER_OK;
}

/* numpy broadcasting of two shapes into out. */
static bool broadcast(const xnn_value *a, const xnn_value *b, size_t *shape, size_t *rank) {
    size_t r = a->rank > b->rank ? a->rank : b->rank;
    for (size_t i = 0; i < r; i++) {
        size_t da = i < r - a->rank ? 1 : a->shape[i - (r - a->rank)];
        size_t db = i < r - b->rank ? 1 : b->shape[i - (r - b->rank)];
        if (da != db && da != 1 && db != 1) return false;
        shape[i] = da == 1 ? db : da;
    }
    *rank = r;
    return true;
}

/* Output size of a window op along one axis: floor(max(0, span) / stride) + 1. */
static bool window_out(size_t size, uint32_t pad_a, uint32_t pad_b, uint32_t kernel,
                       uint32_t dilation, uint32_t stride, size_t *out) {
    if (kernel == 0 || stride == 0 || dilation == 0) return false;
    uint64_t padded = (uint64_t)size + pad_a + pad_b;
    uint64_t eff = (uint64_t)(kernel - 1) * dilation + 1;
    *out = (size_t)((padded > eff ? padded - eff : 0) / stride + 1);
    return true;
}

static ember_status conv_shape(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_conv_params *p = &n->p.conv;
    const xnn_value *x = in(g, n, 0), *w = in(g, n, 1);
    if (x->rank != 4 || w->rank != 4) FAIL("input and filter must be 4-d (NHWC, OHWI)");
    size_t groups = p->groups, gin = p->group_in, gout = p->group_out;
    if (groups == 0 || gin == 0 || gout == 0) FAIL("groups and group channels must be >= 1");
    size_t cin, cout;
    if (ember_mul_overflow(groups, gin, &cin) || ember_mul_overflow(groups, gout, &cout))
        FAIL("channel count overflows");
    if (x->shape[3] != cin)
        FAIL("input has %zu channels, %zu groups x %zu expected", x->shape[3], groups, gin);
    if (n->type == XNN_NODE_DepthwiseConv2d) {
        if (gin != 1) FAIL("depthwise convolution with %zu input channels per group", gin);
        if (w->shape[0] != 1 || w->shape[1] != p->kernel_h || w->shape[2] != p->kernel_w ||
            w->shape[3] != cout)
            FAIL("depthwise filter [%zu, %zu, %zu, %zu] is not [1, %u, %u, %zu]", w->shape[0],
                 w->shape[1], w->shape[2], w->shape[3], p->kernel_h, p->kernel_w, cout);
    } else if (w->shape[0] != cout || w->shape[1] != p->kernel_h || w->shape[2] != p->kernel_w ||
               w->shape[3] != gin) {
        FAIL("filter [%zu, %zu, %zu, %zu] is not [%zu, %u, %u, %zu]", w->shape[0], w->shape[1],
             w->shape[2], w->shape[3], cout, p->kernel_h, p->kernel_w, gin);
    }
    if (n->in[2] != XNN_INVALID_ID) {
        const xnn_value *b = in(g, n, 2);
        if (b->rank != 1 || b->shape[0] != cout) FAIL("bias must be [%zu]", cout);
    }
    size_t shape[4] = {x->shape[0], 0, 0, cout};
    if (n->type == XNN_NODE_ConvTranspose2d) {
        if (p->stride_h == 0 || p->stride_w == 0 || p->dilation_h == 0 || p->dilation_w == 0)
            FAIL("stride and dilation must be >= 1");
        for (int a = 0; a < 2; a++) {
            uint64_t size = x->shape[1 + a];
            uint64_t stride = a ? p->stride_w : p->stride_h, dil = a ? p->dilation_w : p->dilation_h;
            uint64_t k = a ? p->kernel_w : p->kernel_h, adj = a ? p->adj_w : p->adj_h;
            uint64_t pads = a ? (uint64_t)p->pad_left + p->pad_right
                              : (uint64_t)p->pad_top + p->pad_bottom;
            uint64_t full = (size > 0 ? stride * (size - 1) : 0) + adj + (k - 1) * dil + 1;
            if (k == 0) FAIL("kernel size 0");
            shape[1 + a] = (size_t)(full > pads ? full - pads : 0);
        }
    } else if (!window_out(x->shape[1], p->pad_top, p->pad_bottom, p->kernel_h, p->dilation_h,
                           p->stride_h, &shape[1]) ||
               !window_out(x->shape[2], p->pad_left, p->pad_right, p->kernel_w, p->dilation_w,
                           p->stride_w, &shape[2])) {
        FAIL("kernel, stride and dilation must be >= 1");
    }
    set_shape(out(g, n, 0), shape, 4);
    return EMBER_OK;
}

static ember_status pool_shape(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_conv_params *p = &n->p.conv;
    const xnn_value *x = in(g, n, 0);
    if (x->rank != 4) FAIL("input must be 4-d (NHWC)");
    size_t shape[4] = {x->shape[0], 0, 0, x->shape[3]};
    if (n->type == XNN_NODE_ArgMaxPooling2d) {
        if (p->kernel_h == 0 || p->kernel_w == 0) FAIL("pooling size 0");
        shape[1] = (x->shape[1] + p->pad_top + p->pad_bottom) / p->kernel_h;
        shape[2] = (x->shape[2] + p->pad_left + p->pad_right) / p->kernel_w;
        set_shape(out(g, n, 1), shape, 4);
    } else {
        /* average pooling serializes dilation 0 and ignores it */
        uint32_t dh = n->type == XNN_NODE_AvgPooling2d ? 1 : p->dilation_h;
        uint32_t dw = n->type == XNN_NODE_AvgPooling2d ? 1 : p->dilation_w;
        if (!window_out(x->shape[1], p->pad_top, p->pad_bottom, p->kernel_h, dh, p->stride_h,
                        &shape[1]) ||
            !window_out(x->shape[2], p->pad_left, p->pad_right, p->kernel_w, dw, p->stride_w,
                        &shape[2]))
            FAIL("pooling size, stride and dilation must be >= 1");
        if (n->type == XNN_NODE_AvgPooling2d &&
            ((uint64_t)x->shape[1] + p->pad_top + p->pad_bottom < p->kernel_h ||
             (uint64_t)x->shape[2] + p->pad_left + p->pad_right < p->kernel_w))
            FAIL("pooling window larger than the padded input");
    }
    set_shape(out(g, n, 0), shape, 4);
    return EMBER_OK;
}

static ember_status matmul_shape(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = in(g, n, 0), *w = in(g, n, 1);
    size_t shape[XNN_MAX_DIMS], rank;
    if (n->type == XNN_NODE_FullyConnected) {
        if (x->rank < 1 || w->rank != 2) FAIL("input must have a rank >= 1 and the filter 2");
        bool t = n->flags & XNN_FLAG_TRANSPOSE_WEIGHTS;
        size_t ic = w->shape[t ? 0 : 1], oc = w->shape[t ? 1 : 0];
        if (x->shape[x->rank - 1] != ic)
            FAIL("input's last dim %zu, filter takes %zu", x->shape[x->rank - 1], ic);
        if (n->in[2] != XNN_INVALID_ID && (in(g, n, 2)->rank != 1 || in(g, n, 2)->shape[0] != oc))
            FAIL("bias must be [%zu]", oc);
        rank = x->rank;
        memcpy(shape, x->shape, sizeof shape);
        shape[rank - 1] = oc;
    } else {
        if (x->rank < 2 || w->rank < 2) FAIL("operands must have a rank >= 2");
        bool t = n->flags & XNN_FLAG_TRANSPOSE_WEIGHTS;
        size_t m = x->shape[x->rank - 2], k = x->shape[x->rank - 1];
        size_t k2 = w->shape[w->rank - (t ? 1 : 2)], nn = w->shape[w->rank - (t ? 2 : 1)];
        if (k != k2) FAIL("inner dims %zu and %zu differ", k, k2);
        /* batch dims broadcast, the shorter left-padded with 1s */
        xnn_value xa = *x, wa = *w;
        xa.rank -= 2;
        wa.rank -= 2;
        if (!broadcast(&xa, &wa, shape, &rank)) FAIL("batch dims do not broadcast");
        shape[rank++] = m;
        shape[rank++] = nn;
    }
    set_shape(out(g, n, 0), shape, rank);
    return EMBER_OK;
}

static ember_status cat_shape(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *first = in(g, n, 0);
    if (n->p.axis >= first->rank) FAIL("axis %u out of range for rank %u", n->p.axis, first->rank);
    size_t shape[XNN_MAX_DIMS];
    memcpy(shape, first->shape, sizeof shape);
    shape[n->p.axis] = 0;
    for (uint32_t k = 0; k < n->nin; k++) {
        if (n->in[k] == XNN_INVALID_ID) FAIL("input %u is missing", k);
        const xnn_value *v = in(g, n, (int)k);
        if (v->rank != first->rank) FAIL("inputs have ranks %u and %u", first->rank, v->rank);
        for (uint32_t d = 0; d < v->rank; d++)
            if (d != n->p.axis && v->shape[d] != first->shape[d])
                FAIL("inputs differ in dim %u (%zu, %zu)", d, first->shape[d], v->shape[d]);
        shape[n->p.axis] += v->shape[n->p.axis];
    }
    set_shape(out(g, n, 0), shape, first->rank);
    return EMBER_OK;
}

static ember_status reshape_shape(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = in(g, n, 0);
    size_t shape[XNN_MAX_DIMS], total, known = 1;
    int infer = -1;
    if (!xnn_numel(x->shape, x->rank, &total)) FAIL("input size overflows");
    for (uint32_t d = 0; d < n->p.perm.n; d++) {
        shape[d] = n->p.perm.v[d];
        if (shape[d] == 0) {
            if (infer >= 0) FAIL("more than one dim to infer");
            infer = (int)d;
        } else if (ember_mul_overflow(known, shape[d], &known)) {
            FAIL("new shape overflows");
        }
    }
    if (infer >= 0) {
        if (total % known != 0) FAIL("%zu elements do not divide into dims of %zu", total, known);
        shape[infer] = total / known;
    } else if (known != total) {
        FAIL("%zu elements into a shape of %zu", total, known);
    }
    set_shape(out(g, n, 0), shape, n->p.perm.n);
    return EMBER_OK;
}

static ember_status node_shape(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = in(g, n, 0);
    size_t shape[XNN_MAX_DIMS], rank;
    switch (n->type) {
    case XNN_NODE_Add: case XNN_NODE_Subtract: case XNN_NODE_Multiply: case XNN_NODE_Div:
    case XNN_NODE_Minimum: case XNN_NODE_Maximum: case XNN_NODE_PReLU:
        if (!broadcast(x, in(g, n, 1), shape, &rank))
            FAIL("operand shapes do not broadcast");
        set_shape(out(g, n, 0), shape, rank);
        return EMBER_OK;
    case XNN_NODE_FullyConnected: case XNN_NODE_BatchMatrixMultiply:
        return matmul_shape(g, ni);
    case XNN_NODE_Conv2d: case XNN_NODE_DepthwiseConv2d: case XNN_NODE_ConvTranspose2d:
        return conv_shape(g, ni);
    case XNN_NODE_MaxPooling2d: case XNN_NODE_AvgPooling2d: case XNN_NODE_ArgMaxPooling2d:
        return pool_shape(g, ni);
    case XNN_NODE_GlobalAvgPooling2d:
        if (x->rank < 3) FAIL("input must have a rank >= 3");
        memcpy(shape, x->shape, sizeof shape);
        rank = x->rank;
        if (n->flags & XNN_FLAG_KEEP_DIMS) {
            shape[rank - 3] = shape[rank - 2] = 1;
        } else {
            shape[rank - 3] = shape[rank - 1];
            rank -= 2;
        }
        set_shape(out(g, n, 0), shape, rank);
        return EMBER_OK;
    case XNN_NODE_Softmax:
        if (x->rank < 1) FAIL("softmax of a scalar");
        set_shape(out(g, n, 0), x->shape, x->rank);
        return EMBER_OK;
    case XNN_NODE_StaticTranspose: {
        bool seen[XNN_MAX_DIMS] = {false};
        if (n->p.perm.n != x->rank) FAIL("perm has %u entries for rank %u", n->p.perm.n, x->rank);
        for (uint32_t d = 0; d < x->rank; d++) {
            uint32_t s = n->p.perm.v[d];
            if (s >= x->rank || seen[s]) FAIL("perm is not a permutation");
            seen[s] = true;
            shape[d] = x->shape[s];
        }
        set_shape(out(g, n, 0), shape, x->rank);
        return EMBER_OK;
    }
    case XNN_NODE_StaticReshape:
        return reshape_shape(g, ni);
    case XNN_NODE_StaticSlice:
        if (n->p.slice.n != x->rank)
            FAIL("slice has %u entries for rank %u", n->p.slice.n, x->rank);
        for (uint32_t d = 0; d < x->rank; d++) {
            size_t dim = x->shape[d], begin = n->p.slice.offsets[d], size = n->p.slice.sizes[d];
            if (begin == 0 && size == 0) size = dim; /* the whole dim */
            if (begin > dim) begin = dim;
            shape[d] = size < dim - begin ? size : dim - begin;
        }
        set_shape(out(g, n, 0), shape, x->rank);
        return EMBER_OK;
    case XNN_NODE_StaticConstantPad:
        for (uint32_t d = 0; d < x->rank; d++) {
            uint64_t s = (uint64_t)x->shape[d] + n->p.pad.pre[d] + n->p.pad.post[d];
            if (s > INT32_MAX) FAIL("padded dim %u is too large", d);
            shape[d] = (size_t)s;
        }
        set_shape(out(g, n, 0), shape, x->rank);
        return EMBER_OK;
    case XNN_NODE_Concatenate2: case XNN_NODE_Concatenate3: case XNN_NODE_Concatenate4:
    case XNN_NODE_Concatenate5:
        return cat_shape(g, ni);
    case XNN_NODE_StaticResizeBilinear2D:
        if (x->rank != 4) FAIL("input must be 4-d (NHWC)");
        if (n->p.resize.height == 0 || n->p.resize.width == 0) FAIL("output size 0");
        if ((n->flags & XNN_FLAG_ALIGN_CORNERS) && (n->flags & XNN_FLAG_TENSORFLOW_LEGACY))
            FAIL("align_corners with TensorFlow legacy mode");
        shape[0] = x->shape[0], shape[1] = n->p.resize.height, shape[2] = n->p.resize.width;
        shape[3] = x->shape[3];
        set_shape(out(g, n, 0), shape, 4);
        return EMBER_OK;
    case XNN_NODE_ScaledDotProductAttention:
        return xnn_node_fail(g, ni, EMBER_ERR_NOT_SUPPORTED,
                             "scaled dot-product attention nodes are not supported (ExecuTorch's "
                             "runtime refuses them too; exporters no longer write them)");
    default: /* elementwise unary, clamp, convert, copy */
        set_shape(out(g, n, 0), x->shape, x->rank);
        return EMBER_OK;
    }
}

ember_status xnn_infer_shapes(xnn_graph *g, bool check_capacity) {
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        const xnn_node *n = &g->nodes[ni];
        if (!check_capacity) EMBER_TRY(check_types(g, ni));
        EMBER_TRY(node_shape(g, ni));
        for (uint32_t k = 0; k < n->nout; k++) {
            const xnn_value *v = out(g, n, (int)k);
            size_t bytes;
            if (!xnn_value_bytes(v, v->shape, &bytes))
                return xnn_node_fail(g, ni, EMBER_ERR_SHAPE_MISMATCH, "output size overflows");
            if (check_capacity && v->planned && bytes > v->capacity)
                return xnn_node_fail(g, ni, EMBER_ERR_SHAPE_MISMATCH,
                                     "output needs %zu bytes, %zu were planned for it", bytes,
                                     v->capacity);
        }
    }
    return EMBER_OK;
}
