/*
 * Elementwise nodes (xnn_run.h): binary ops with numpy broadcasting, unary
 * math and activations, clamp, softmax over the last dim, and conversions
 * between float32, float16 and bfloat16.
 *
 * Binary ops, clamp, softmax and the transcendental unary ops (sigmoid,
 * tanh, exp, log, GELU, hardswish) run on the optimized kernels (eltwise.h, rows.h,
 * vmath.h: SIMD of the instruction set in use, split over the graph's
 * thread pool); the broadcast becomes rows of the output in which each
 * operand advances or repeats. output_min_max clamps the results of add,
 * subtract, multiply and divide, as XNNPACK applies it. The remaining unary
 * ops are plain loops.
 */
#include <math.h>
#include <string.h>

#include "kernels/optimized/eltwise.h"
#include "kernels/optimized/rows.h"
#include "xnn_run.h"

static ember_status run_binary(xnn_graph *g, const xnn_node *n) {
    static const eko_binop ops[] = {
        [XNN_NODE_Add] = EKO_BIN_ADD,     [XNN_NODE_Subtract] = EKO_BIN_SUB,
        [XNN_NODE_Multiply] = EKO_BIN_MUL, [XNN_NODE_Div] = EKO_BIN_DIV,
        [XNN_NODE_Minimum] = EKO_BIN_MIN, [XNN_NODE_Maximum] = EKO_BIN_MAX,
        [XNN_NODE_PReLU] = EKO_BIN_PRELU};
    const eko_binop op = ops[n->type];
    const xnn_value *av = xr_in(g, n, 0), *bv = xr_in(g, n, 1), *yv = xr_out(g, n, 0);
    const size_t rank = yv->rank, total = xr_numel(yv);
    if (total == 0) return EMBER_OK;
    /* shapes were checked against each other by xnn_shape.c */
    size_t st[EKO_ND_MAX_OPS][EKO_ND_MAX_DIM];
    if (!eko_nd_broadcast(rank, yv->shape, rank, yv->shape, st[0]) ||
        !eko_nd_broadcast(rank, yv->shape, av->rank, av->shape, st[1]) ||
        !eko_nd_broadcast(rank, yv->shape, bv->rank, bv->shape, st[2]))
        return xnn_node_fail(g, (uint32_t)(n - g->nodes), EMBER_ERR_SHAPE_MISMATCH,
                             "operands do not broadcast to the output");
    eko_nd nd;
    eko_nd_init(&nd, rank, yv->shape, 3, (const size_t(*)[EKO_ND_MAX_DIM])st);
    const eko_f32_rows *rows = eko_f32_rows_active();
    float *y = xr_f(yv);
    eko_f32_binary_nd(g->threadpool, rows, op, &nd, y, xr_f(av), xr_f(bv));
    if (op <= EKO_BIN_DIV && (n->out_min > -INFINITY || n->out_max < INFINITY))
        eko_f32_clamp(g->threadpool, rows, total, y, n->out_min, n->out_max, y);
    return EMBER_OK;
}

static ember_status run_unary(xnn_graph *g, const xnn_node *n) {
    const float *x = xr_f(xr_in(g, n, 0));
    float *y = xr_f(xr_out(g, n, 0));
    const size_t count = xr_numel(xr_out(g, n, 0));
    const float alpha = n->p.alpha;
    const eko_vmath *vm = eko_vmath_active();
    switch (n->type) {
    case XNN_NODE_Sigmoid:
        if (n->fused == XNN_FUSED_SILU) {
            /* x * sigmoid(x), clamped as the Multiply folded into it was */
            eko_f32_unary(g->threadpool, vm->silu, count, x, y);
            if (n->out_min > -INFINITY || n->out_max < INFINITY)
                eko_f32_clamp(g->threadpool, eko_f32_rows_active(), count, y, n->out_min,
                              n->out_max, y);
            return EMBER_OK;
        }
        eko_f32_unary(g->threadpool, vm->sigmoid, count, x, y);
        return EMBER_OK;
    case XNN_NODE_Tanh: eko_f32_unary(g->threadpool, vm->tanh, count, x, y); return EMBER_OK;
    case XNN_NODE_Exp: eko_f32_unary(g->threadpool, vm->exp, count, x, y); return EMBER_OK;
    case XNN_NODE_Log: eko_f32_unary(g->threadpool, vm->log, count, x, y); return EMBER_OK;
    case XNN_NODE_Gelu: eko_f32_unary(g->threadpool, vm->gelu, count, x, y); return EMBER_OK;
    case XNN_NODE_Hardswish:
        eko_f32_unary(g->threadpool, vm->hardswish, count, x, y);
        return EMBER_OK;
    case XNN_NODE_Clamp:
        eko_f32_clamp(g->threadpool, eko_f32_rows_active(), count, x, n->out_min, n->out_max, y);
        return EMBER_OK;
    default: break;
    }
#define UNARY(EXPR)                                                                               \
    for (size_t i = 0; i < count; i++) {                                                          \
        const float v = x[i];                                                                     \
        y[i] = (EXPR);                                                                            \
    }                                                                                             \
    break;
    switch (n->type) {
    case XNN_NODE_Sin: UNARY(sinf(v))
    case XNN_NODE_Cos: UNARY(cosf(v))
    case XNN_NODE_SquareRoot: UNARY(sqrtf(v))
    case XNN_NODE_ReciprocalSquareRoot: UNARY(1.0f / sqrtf(v))
    case XNN_NODE_Square: UNARY(v * v)
    case XNN_NODE_Abs: UNARY(fabsf(v))
    case XNN_NODE_Negate: UNARY(-v)
    case XNN_NODE_Floor: UNARY(floorf(v))
    case XNN_NODE_Ceiling: UNARY(ceilf(v))
    case XNN_NODE_ELU: UNARY(v >= 0.0f ? v : alpha * expm1f(v))
    case XNN_NODE_LeakyReLU: UNARY(v >= 0.0f ? v : v * alpha)
    default:
        return xnn_node_fail(g, (uint32_t)(n - g->nodes), EMBER_ERR_NOT_SUPPORTED,
                             "node type not supported");
    }
#undef UNARY
    return EMBER_OK;
}

/* Softmax over the last dim: exp(x - max) / sum, rows split over the pool. */
static ember_status run_softmax(xnn_graph *g, const xnn_node *n) {
    const xnn_value *xv = xr_in(g, n, 0);
    const size_t len = xv->shape[xv->rank - 1], rows = len > 0 ? xr_numel(xv) / len : 0;
    eko_f32_softmax_rows(g->threadpool, eko_f32_rows_active(), rows, len, xr_f(xv),
                         xr_f(xr_out(g, n, 0)), false);
    return EMBER_OK;
}

static ember_status run_convert(xnn_graph *g, const xnn_node *n) {
    const xnn_value *xv = xr_in(g, n, 0), *yv = xr_out(g, n, 0);
    const size_t count = xr_numel(yv);
    for (size_t i = 0; i < count; i++) {
        float v;
        switch (xv->dtype) {
        case XNN_DT_FP16: v = ember_half_to_float(((const uint16_t *)xv->data)[i]); break;
        case XNN_DT_BF16: v = ember_bf16_to_float(((const uint16_t *)xv->data)[i]); break;
        default: v = ((const float *)xv->data)[i]; break;
        }
        switch (yv->dtype) {
        case XNN_DT_FP16: ((uint16_t *)yv->data)[i] = ember_float_to_half(v); break;
        case XNN_DT_BF16: ((uint16_t *)yv->data)[i] = ember_float_to_bf16(v); break;
        default: ((float *)yv->data)[i] = v; break;
        }
    }
    return EMBER_OK;
}

ember_status xnn_run_elementwise(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    switch (n->type) {
    case XNN_NODE_Add: case XNN_NODE_Subtract: case XNN_NODE_Multiply: case XNN_NODE_Div:
    case XNN_NODE_Minimum: case XNN_NODE_Maximum: case XNN_NODE_PReLU:
        return run_binary(g, n);
    case XNN_NODE_Softmax:
        return run_softmax(g, n);
    case XNN_NODE_Convert:
        return run_convert(g, n);
    default:
        return run_unary(g, n);
    }
}
