/*
 * Node fusions of an XNNPACK subgraph made at init (xnn_graph.h), and the
 * graph helpers they share with xnn_fuse_qs8_clamps (xnn_check_quant.c).
 */
#include "xnn_graph.h"

uint32_t xnn_value_producer(const xnn_graph *g, uint32_t vi) {
    for (uint32_t ni = 0; ni < g->num_nodes; ni++)
        for (uint32_t k = 0; k < g->nodes[ni].nout; k++)
            if (g->nodes[ni].out[k] == vi) return ni;
    return UINT32_MAX;
}

uint32_t xnn_value_readers(const xnn_graph *g, uint32_t vi) {
    uint32_t count = 0;
    for (uint32_t ni = 0; ni < g->num_nodes; ni++)
        for (uint32_t k = 0; k < g->nodes[ni].nin; k++) count += g->nodes[ni].in[k] == vi;
    return count;
}

void xnn_drop_emptied_nodes(xnn_graph *g) {
    uint32_t kept = 0;
    for (uint32_t ni = 0; ni < g->num_nodes; ni++)
        if (g->nodes[ni].nin != 0 || g->nodes[ni].nout != 0) g->nodes[kept++] = g->nodes[ni];
    g->num_nodes = kept;
    for (uint32_t ni = 0; ni < g->num_nodes; ni++)
        for (uint32_t k = 0; k < g->nodes[ni].nout; k++)
            g->values[g->nodes[ni].out[k]].first = (int32_t)ni;
}

static bool is_f32(const xnn_graph *g, uint32_t vi) {
    return vi < g->num_values && g->values[vi].dtype == XNN_DT_FP32;
}

/* SiLU: the Sigmoid computes x * sigmoid(x) into the Multiply's output, so
 * the sigmoid's values are neither written nor read back (a third of the
 * memory traffic of the pair, and one pass instead of two). */
void xnn_fuse_f32(xnn_graph *g) {
    bool any = false;
    for (uint32_t mi = 0; mi < g->num_nodes; mi++) {
        xnn_node *m = &g->nodes[mi];
        if (m->type != XNN_NODE_Multiply || m->nin != 2 || m->nout != 1) continue;
        for (uint32_t side = 0; side < 2; side++) {
            const uint32_t s = m->in[side], x = m->in[1 - side];
            if (!is_f32(g, s) || !is_f32(g, x) || !is_f32(g, m->out[0]) ||
                g->values[s].flags != 0)
                continue;
            const uint32_t pi = xnn_value_producer(g, s);
            if (pi >= mi) continue;
            xnn_node *p = &g->nodes[pi];
            if (p->type != XNN_NODE_Sigmoid || p->nin != 1 || p->nout != 1 || p->in[0] != x ||
                p->fused != XNN_FUSED_NONE || xnn_value_readers(g, s) != 1)
                continue;
            p->fused = XNN_FUSED_SILU;
            p->out[0] = m->out[0];
            p->out_min = m->out_min;
            p->out_max = m->out_max;
            g->values[s].first = -1; /* made by no node now: not planned */
            m->nin = m->nout = 0;    /* dropped below */
            any = true;
            break;
        }
    }
    if (any) xnn_drop_emptied_nodes(g);
}

static bool is_qs8_tensor(const xnn_graph *g, uint32_t vi) {
    return vi < g->num_values && g->values[vi].dtype == XNN_DT_QINT8;
}

/* Internal float32 value vi, made by a node before `before` of type
 * `type` with one input and one output, and read by one node: that
 * producer, or UINT32_MAX. */
static uint32_t sole_f32_producer(const xnn_graph *g, uint32_t vi, uint32_t before) {
    if (!is_f32(g, vi) || g->values[vi].flags != 0 || xnn_value_readers(g, vi) != 1)
        return UINT32_MAX;
    const uint32_t pi = xnn_value_producer(g, vi);
    if (pi >= before || g->nodes[pi].nin != 1 || g->nodes[pi].nout != 1) return UINT32_MAX;
    return pi;
}

void xnn_fuse_qs8_unary(xnn_graph *g) {
    bool any = false;
    for (uint32_t qi = 0; qi < g->num_nodes; qi++) {
        xnn_node *q = &g->nodes[qi];
        if (q->type != XNN_NODE_Convert || q->nin != 1 || q->nout != 1 ||
            !is_qs8_tensor(g, q->out[0]))
            continue;
        const uint32_t fi = sole_f32_producer(g, q->in[0], qi);
        if (fi == UINT32_MAX) continue;
        xnn_node *f = &g->nodes[fi];
        const bool fits = (f->type == XNN_NODE_Sigmoid &&
                           (f->fused == XNN_FUSED_NONE || f->fused == XNN_FUSED_SILU)) ||
                          ((f->type == XNN_NODE_Tanh || f->type == XNN_NODE_Hardswish) &&
                           f->fused == XNN_FUSED_NONE);
        if (!fits) continue;
        const uint32_t di = sole_f32_producer(g, f->in[0], fi);
        if (di == UINT32_MAX) continue;
        xnn_node *d = &g->nodes[di];
        if (d->type != XNN_NODE_Convert || !is_qs8_tensor(g, d->in[0])) continue;
        g->values[f->in[0]].first = -1; /* made by no node now: not planned */
        g->values[q->in[0]].first = -1;
        f->in[0] = d->in[0];
        f->out[0] = q->out[0];
        /* the final Convert's own range, on top of the function's clamp */
        f->out_min = f->out_min > q->out_min ? f->out_min : q->out_min;
        f->out_max = f->out_max < q->out_max ? f->out_max : q->out_max;
        d->nin = d->nout = 0; /* dropped below */
        q->nin = q->nout = 0;
        any = true;
    }
    if (any) xnn_drop_emptied_nodes(g);
}
