/*
 * xnn_run.h — what the node families (xnn_run_*.c) share: operand access,
 * the scratch a node was planned, and each family's entry points.
 *
 * Every run function gets a graph whose shapes are current (xnn_shape.c)
 * and whose values are bound to memory; it reads its inputs, writes its
 * outputs and may use its node's scratch, nothing else. A *_scratch function
 * says, from the current shapes, how many scratch bytes its node needs; it
 * runs at init (to plan) and before each run (checked against the plan).
 */
#ifndef EMBER_BACKENDS_XNNPACK_XNN_RUN_H
#define EMBER_BACKENDS_XNNPACK_XNN_RUN_H

#include "ember/threadpool.h"
#include "kernels/optimized/gemm.h"
#include "xnn_graph.h"

static inline xnn_value *xr_in(xnn_graph *g, const xnn_node *n, int k) {
    return &g->values[n->in[k]];
}
static inline xnn_value *xr_out(xnn_graph *g, const xnn_node *n, int k) {
    return &g->values[n->out[k]];
}
static inline float *xr_f(const xnn_value *v) { return (float *)v->data; }
static inline size_t xr_numel(const xnn_value *v) {
    size_t n = 1;
    for (uint32_t i = 0; i < v->rank; i++) n *= v->shape[i]; /* checked by xnn_shape.c */
    return n;
}
/* ember_parallel_1d over the graph's pool, on as many threads as `work`
 * (ember_parallel_threads' units: multiply-adds or bytes moved) is worth. */
static inline void xr_parallel(xnn_graph *g, uint64_t work, ember_task_1d fn, void *ctx,
                               size_t range, size_t tile) {
    ember_parallel_1d_on(g->threadpool, ember_parallel_threads(g->threadpool, work), fn, ctx,
                         range, tile);
}

static inline float *xr_scratch(xnn_graph *g, const xnn_node *n) {
    return (float *)(void *)(g->arena + n->scratch_offset);
}
static inline float xr_clamp(float v, float lo, float hi) {
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
}
static inline const eko_f32_gemm_config *xr_gemm(const xnn_graph *g) {
    return eko_f32_gemm_config_for((eko_isa)g->isa);
}

/* Families. */
ember_status xnn_run_linear(xnn_graph *g, uint32_t ni);       /* FC, batch matmul */
ember_status xnn_run_conv(xnn_graph *g, uint32_t ni);         /* conv, depthwise, deconv */
ember_status xnn_run_pool(xnn_graph *g, uint32_t ni);         /* max, avg, global avg, argmax */
ember_status xnn_run_elementwise(xnn_graph *g, uint32_t ni);  /* binary, unary, softmax, convert */
ember_status xnn_run_layout(xnn_graph *g, uint32_t ni);       /* transpose .. resize, copy */
ember_status xnn_run_convert_qd8(xnn_graph *g, uint32_t ni);  /* float32 -> qdint8 */
ember_status xnn_run_fc_quant(xnn_graph *g, uint32_t ni);     /* qdint8 / qint8 x int filter */
ember_status xnn_run_qconv(xnn_graph *g, uint32_t ni);        /* qdint8 / qint8 Conv2d, deconv */
ember_status xnn_run_qs8(xnn_graph *g, uint32_t ni);          /* the other qint8 nodes */

bool xnn_linear_scratch(xnn_graph *g, uint32_t ni, size_t *bytes);
bool xnn_conv_scratch(xnn_graph *g, uint32_t ni, size_t *bytes);
bool xnn_qconv_scratch(xnn_graph *g, uint32_t ni, size_t *bytes);

/* Bytes of node i's scratch for the current shapes; false on overflow. */
bool xnn_node_scratch(xnn_graph *g, uint32_t ni, size_t *bytes);

#endif /* EMBER_BACKENDS_XNNPACK_XNN_RUN_H */
