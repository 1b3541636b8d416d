/*
 * Dispatch of an XNNPACK node to its family, and its scratch needs
 * (xnn_run.h).
 */
#include "xnn_run.h"

bool xnn_node_scratch(xnn_graph *g, uint32_t ni, size_t *bytes) {
    *bytes = 0;
    if (g->nodes[ni].qmode != XNN_QM_FLOAT) /* weights packed at init */
        return g->nodes[ni].type == XNN_NODE_Conv2d || g->nodes[ni].type == XNN_NODE_ConvTranspose2d
                   ? xnn_qconv_scratch(g, ni, bytes)
                   : true;
    switch (g->nodes[ni].type) {
    case XNN_NODE_FullyConnected: case XNN_NODE_BatchMatrixMultiply:
        return xnn_linear_scratch(g, ni, bytes);
    case XNN_NODE_Conv2d: case XNN_NODE_ConvTranspose2d:
        return xnn_conv_scratch(g, ni, bytes);
    default:
        return true;
    }
}

ember_status xnn_run_node(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    if (n->qmode != XNN_QM_FLOAT) {
        if (n->type == XNN_NODE_FullyConnected) return xnn_run_fc_quant(g, ni);
        if (n->type == XNN_NODE_Conv2d || n->type == XNN_NODE_ConvTranspose2d)
            return xnn_run_qconv(g, ni);
        return xnn_run_qs8(g, ni);
    }
    if (n->type == XNN_NODE_Convert && g->values[n->out[0]].dtype == XNN_DT_QDINT8)
        return xnn_run_convert_qd8(g, ni);
    switch (n->type) {
    case XNN_NODE_FullyConnected: case XNN_NODE_BatchMatrixMultiply:
        return xnn_run_linear(g, ni);
    case XNN_NODE_Conv2d: case XNN_NODE_DepthwiseConv2d: case XNN_NODE_ConvTranspose2d:
        return xnn_run_conv(g, ni);
    case XNN_NODE_MaxPooling2d: case XNN_NODE_AvgPooling2d: case XNN_NODE_GlobalAvgPooling2d:
    case XNN_NODE_ArgMaxPooling2d:
        return xnn_run_pool(g, ni);
    case XNN_NODE_StaticTranspose: case XNN_NODE_StaticReshape: case XNN_NODE_StaticSlice:
    case XNN_NODE_StaticConstantPad: case XNN_NODE_Concatenate2: case XNN_NODE_Concatenate3:
    case XNN_NODE_Concatenate4: case XNN_NODE_Concatenate5: case XNN_NODE_StaticResizeBilinear2D:
    case XNN_NODE_Copy:
        return xnn_run_layout(g, ni);
    default:
        return xnn_run_elementwise(g, ni);
    }
}
