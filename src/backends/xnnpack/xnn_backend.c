/*
 * XnnpackBackend: runs ExecuTorch's XNNPACK delegate payloads on ember's
 * own kernels (src/kernels/optimized), without XNNPACK.
 *
 * init: decode and verify the payload (xnn_read.c), infer shapes from the
 * serialized dims and check every node's operands (xnn_shape.c), load the
 * constants and pack weights once (xnn_pack.c), size each node's scratch and
 * plan one arena for intermediates and scratch (xnn_plan.c), which lives in
 * the workspace the method's delegates share.
 * execute: bind the delegate's argument tensors (inputs, then outputs,
 * indexed by external id), infer shapes again for the actual input sizes
 * (never re-packing), resize the outputs, run the nodes in file order.
 * Execute allocates nothing.
 */
#include <string.h>

#include "xnn_graph.h"
#include "xnn_run.h"

static bool xnn_available(void) { return true; }

/* The ember dtype that holds an XNNPACK value's elements. */
static int ember_dtype_of(uint8_t dtype) {
    switch (dtype) {
    case XNN_DT_FP32: return EMBER_FLOAT32;
    case XNN_DT_FP16: return EMBER_FLOAT16;
    case XNN_DT_BF16: return EMBER_BFLOAT16;
    case XNN_DT_INT32: return EMBER_INT32;
    case XNN_DT_QINT8: case XNN_DT_QCINT8: case XNN_DT_QDINT8: return EMBER_INT8;
    case XNN_DT_QUINT8: return EMBER_UINT8;
    default: return -1;
    }
}

static ember_status xnn_init(const ember_backend_init_ctx *ctx, const void *payload,
                             size_t payload_size, const ember_compile_spec *specs,
                             size_t num_specs, void **handle) {
    (void)specs;
    (void)num_specs;
    xnn_graph *g = ember_alloc(ctx->allocator, sizeof *g, _Alignof(xnn_graph));
    if (g == NULL) return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "xnnpack: no memory");
    xnn_const_source *sources;
    EMBER_TRY(xnn_read(ctx, payload, payload_size, g, &sources));
    xnn_fuse_qs8_clamps(g);
    xnn_fuse_f32(g);
    xnn_fuse_qs8_unary(g);
    g->threadpool = ctx->threadpool;
    EMBER_TRY(xnn_infer_shapes(g, false));
    EMBER_TRY(xnn_pack(g, ctx, sources));
    for (uint32_t ni = 0; ni < g->num_nodes; ni++)
        if (!xnn_node_scratch(g, ni, &g->nodes[ni].scratch_bytes))
            return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM, "scratch size overflows");
    EMBER_TRY(xnn_plan(g, ctx));
    *handle = g;
    return EMBER_OK;
}

/* The tensor of external value vi among the delegate's arguments. */
static ember_status external_tensor(const xnn_graph *g, uint32_t vi, ember_value **args,
                                    size_t nargs, ember_tensor **out) {
    const xnn_value *v = &g->values[vi];
    if (v->external_id >= nargs || args[v->external_id]->tag != EMBER_TAG_TENSOR)
        return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM,
                                  "xnnpack: argument %u (value %u) is not a tensor (%zu arguments)",
                                  v->external_id, vi, nargs);
    ember_tensor *t = args[v->external_id]->u.t;
    int want = ember_dtype_of(v->dtype);
    bool widened = v->dtype == XNN_DT_INT32 && t->dtype == EMBER_INT64; /* argmax indices */
    if (t->dtype != want && !widened)
        return ember_backend_fail(EMBER_ERR_TYPE_MISMATCH,
                                  "xnnpack: argument %u is %s, the delegate's value %u is %s",
                                  v->external_id, ember_dtype_name(t->dtype), vi,
                                  xnn_dtype_name(v->dtype));
    if (t->dim > XNN_MAX_DIMS)
        return ember_backend_fail(EMBER_ERR_SHAPE_MISMATCH,
                                  "xnnpack: argument %u has rank %u (at most %d)", v->external_id,
                                  (unsigned)t->dim, XNN_MAX_DIMS);
    *out = t;
    return EMBER_OK;
}

#if EMBER_EVENT_TRACER
/* Hands a node's outputs to the event tracer, as the node left them: in the
 * delegate's layout (NHWC for convolutions) and dtype (int8 for static
 * quantized values). Dynamically quantized activations are left out: their
 * bytes are meaningless without the per-row parameters kept beside them. */
static void log_node_outputs(const xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    for (uint32_t k = 0; k < n->nout; k++) {
        const xnn_value *v = &g->values[n->out[k]];
        int dtype = ember_dtype_of(v->dtype);
        if (dtype < 0 || v->dtype == XNN_DT_QDINT8 || v->data == NULL) continue;
        int32_t sizes[XNN_MAX_DIMS];
        int64_t strides[XNN_MAX_DIMS];
        uint8_t order[XNN_MAX_DIMS];
        size_t numel;
        size_t esize = ember_dtype_size(dtype);
        if (!xnn_numel(v->shape, v->rank, &numel) || numel > SIZE_MAX / esize) continue;
        int64_t stride = 1;
        for (uint32_t d = v->rank; d-- > 0;) {
            sizes[d] = (int32_t)v->shape[d];
            strides[d] = stride;
            order[d] = (uint8_t)d;
            stride *= (int64_t)v->shape[d];
        }
        ember_tensor t = {.data = v->data, .sizes = sizes, .bounds = sizes, .dim_order = order,
                          .strides = strides, .numel = (int64_t)numel,
                          .nbytes = numel * esize, .dim = v->rank,
                          .dtype = (uint8_t)dtype};
        t.capacity = t.nbytes;
        ember_backend_log_output(xnn_node_name(n->type), (int64_t)n->debug_handle, NULL, &t);
    }
}
#endif

static ember_status xnn_execute(void *handle, ember_value **args, size_t nargs) {
    xnn_graph *g = handle;
    xnn_bind_arena(g);
#if EMBER_EVENT_TRACER
    bool timing = ember_backend_tracing(), outputs = ember_backend_tracing_outputs();
#endif
    /* inputs: their shapes, in the tensor's physical (dim) order */
    for (uint32_t k = 0; k < g->num_inputs; k++) {
        xnn_value *v = &g->values[g->inputs[k]];
        ember_tensor *t;
        EMBER_TRY(external_tensor(g, g->inputs[k], args, nargs, &t));
        /* the tensor's rank is the value's now (a 0-dim tensor is serialized as [1]) */
        v->rank = (uint8_t)t->dim;
        for (uint32_t d = 0; d < v->rank; d++) v->shape[d] = (size_t)t->sizes[t->dim_order[d]];
        v->data = t->data;
    }
    EMBER_TRY(xnn_infer_shapes(g, true));
    for (uint32_t k = 0; k < g->num_outputs; k++) {
        xnn_value *v = &g->values[g->outputs[k]];
        ember_tensor *t;
        int64_t sizes[XNN_MAX_DIMS];
        EMBER_TRY(external_tensor(g, g->outputs[k], args, nargs, &t));
        size_t numel;
        xnn_numel(v->shape, v->rank, &numel);
        if (t->dim == 0 && numel == 1) { /* a 0-dim output, serialized as [1] */
            v->data = t->data;
            continue;
        }
        if (t->dim != v->rank)
            return ember_backend_fail(EMBER_ERR_SHAPE_MISMATCH,
                                      "xnnpack: output %u has rank %u, the delegate makes %u", k,
                                      (unsigned)t->dim, (unsigned)v->rank);
        for (uint32_t d = 0; d < v->rank; d++) sizes[t->dim_order[d]] = (int64_t)v->shape[d];
        ember_status st = ember_tensor_resize(t, sizes, t->dim);
        if (st != EMBER_OK)
            return ember_backend_fail(st, "xnnpack: output %u: %s", k, ember_last_error());
        v->data = t->data;
    }
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        size_t need;
        if (!xnn_node_scratch(g, ni, &need) || need > g->nodes[ni].scratch_bytes)
            return xnn_node_fail(g, ni, EMBER_ERR_SHAPE_MISMATCH,
                                 "needs more scratch than was planned for it");
#if EMBER_EVENT_TRACER
        if (timing || outputs) {
            /* one event per node, named by the node's debug handle */
            uint64_t start = timing ? ember_ticks_ns() : 0;
            EMBER_TRY(xnn_run_node(g, ni));
            if (timing)
                ember_backend_log_event(xnn_node_name(g->nodes[ni].type),
                                        (int64_t)g->nodes[ni].debug_handle, NULL, start,
                                        ember_ticks_ns(), NULL, 0);
            if (outputs) log_node_outputs(g, ni);
            continue;
        }
#endif
        EMBER_TRY(xnn_run_node(g, ni));
    }
    /* int32 results for int64 outputs widen in place, from the end */
    for (uint32_t k = 0; k < g->num_outputs; k++) {
        const xnn_value *v = &g->values[g->outputs[k]];
        ember_tensor *t = args[v->external_id]->u.t;
        if (v->dtype == XNN_DT_INT32 && t->dtype == EMBER_INT64)
            for (size_t i = (size_t)t->numel; i-- > 0;)
                ((int64_t *)t->data)[i] = ((const int32_t *)t->data)[i];
    }
    return EMBER_OK;
}

static const ember_backend g_xnnpack = {
    sizeof(ember_backend), "XnnpackBackend", xnn_available, xnn_init, xnn_execute, NULL,
};

ember_status ember_xnnpack_backend_register(void) { return ember_backend_register(&g_xnnpack); }
