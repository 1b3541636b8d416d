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
