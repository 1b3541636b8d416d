/*
 * Quantized fully connected layers (qd8_gemm.h), and the conversion that
 * quantizes their input dynamically:
 *
 *   Convert         float32 [..., K] -> qdint8: each row (the trailing
 *                   num_nonbatch_dims dims) gets its own scale and zero point
 *                   from its range, at every run; the value holds the int8
 *                   rows (in the encoding of the graph's kernels), then their
 *                   parameters (xnn_qd8_layout)
 *   FullyConnected  qdint8 [..., IC] x filter [OC, IC] (int8 or int4, scales
 *                   per channel or per group, packed at init) + bias -> float32;
 *                   or qint8 [..., IC] x int8 filter + int32 bias -> qint8,
 *                   requantized (the packed scales and bias give output
 *                   values, see xnn_pack.c), clamped to the fused range
 */
#include "xnn_run.h"

ember_status xnn_run_convert_qd8(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = xr_in(g, n, 0);
    xnn_value *y = xr_out(g, n, 0);
    size_t data_bytes, rows;
    xnn_qd8_layout(y, y->shape, &data_bytes, &rows); /* checked by xnn_shape.c */
    const size_t numel = xr_numel(x), k = rows > 0 ? numel / rows : 0;
    int8_t *q = y->data;
    eko_qd8_row *params = (eko_qd8_row *)(void *)((uint8_t *)y->data + data_bytes);
    eko_qd8_quantize(g->qd8, g->threadpool, rows, k, xr_f(x), k, q, k, params);
    return EMBER_OK;
}

ember_status xnn_run_fc_quant(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = xr_in(g, n, 0);
    xnn_value *y = xr_out(g, n, 0);
    if (n->qmode == XNN_QM_STATIC) {
        const size_t rows = n->qw.k > 0 ? xr_numel(x) / n->qw.k : 0;
        const eko_qd8_out out = {NULL, y->data, n->qw.n};
        eko_qd8_gemm_uniform(g->qd8, g->threadpool, rows, x->data, n->qw.k, 0,
                             (eko_qd8_row){1.0f, x->zero_point}, &n->qw, out, (float)n->q.qmin,
                             (float)n->q.qmax);
        return EMBER_OK;
    }
    size_t data_bytes, rows;
    xnn_qd8_layout(x, x->shape, &data_bytes, &rows);
    const eko_qd8_row *params = (const eko_qd8_row *)(const void *)((const uint8_t *)x->data +
                                                                    data_bytes);
    /* one quantization row per product row (num_nonbatch_dims 1, checked at init) */
    eko_qd8_gemm(g->qd8, g->threadpool, rows, x->data, n->qw.k, params, &n->qw, xr_f(y), n->qw.n,
                 n->out_min, n->out_max);
    return EMBER_OK;
}
