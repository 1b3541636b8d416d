/*
 * Elementwise nodes (xnn_run.h): binary ops with numpy broadcasting, unary
 * math and activations, clamp, softmax over the last dim, and conversions
 * between float32, float16 and bfloat16.
 *
 * Binary ops run as an outer loop over the output's leading dims and an
 * inner loop over its last dim, in which each operand either advances or
 * repeats (broadcast), so the common cases (same shape, a scalar, a row
 * vector) are straight vectorizable loops. output_min_max clamps the results
 * of add, subtract, multiply and divide, as XNNPACK applies it.
 */
#include <math.h>
#include <string.h>

#include "xnn_run.h"

typedef enum bop { B_ADD, B_SUB, B_MUL, B_DIV, B_MIN, B_MAX, B_PRELU } bop;

/* out[j] = op(a[j * sa], b[j * sb]) for j < len (sa, sb in {0, 1}). */
#define BINARY_CASES(EXPR)                                                                        \
    if (sa && sb) {                                                                               \
        for (size_t j = 0; j < len; j++) {                                                        \
            const float x = a[j], y = b[j];                                                       \
            out[j] = (EXPR);                                                                      \
        }                                                                                         \
    } else if (sa) {                                                                              \
        const float y = b[0];                                                                     \
        for (size_t j = 0; j < len; j++) {                                                        \
            const float x = a[j];                                                                 \
            out[j] = (EXPR);                                                                      \
        }                                                                                         \
    } else if (sb) {                                                                              \
        const float x = a[0];                                                                     \
        for (size_t j = 0; j < len; j++) {                                                        \
            const float y = b[j];                                                                 \
            out[j] = (EXPR);                                                                      \
        }                                                                                         \
    } else {                                                                                      \
        const float x = a[0], y = b[0], v = (EXPR);                                               \
        for (size_t j = 0; j < len; j++) out[j] = v;                                              \
    }

static void binary_run(bop op, const float *a, size_t sa, const float *b, size_t sb, float *out,
                       size_t len) {
    switch (op) {
    case B_ADD: BINARY_CASES(x + y) break;
    case B_SUB: BINARY_CASES(x - y) break;
    case B_MUL: BINARY_CASES(x * y) break;
    case B_DIV: BINARY_CASES(x / y) break;
    case B_MIN: BINARY_CASES(x < y ? x : y) break;
    case B_MAX: BINARY_CASES(x > y ? x : y) break;
    case B_PRELU: BINARY_CASES(x >= 0.0f ? x : x * y) break;
    }
}

/* Strides (elements) of a value's dims in the output's rank: 0 where it repeats. */
static void broadcast_strides(const xnn_value *v, size_t rank, size_t *strides) {
    size_t step = 1;
    for (size_t d = rank; d-- > 0;) {
        size_t vd = d + v->rank >= rank ? d + v->rank - rank : SIZE_MAX;
        size_t size = vd == SIZE_MAX ? 1 : v->shape[vd];
        strides[d] = size == 1 ? 0 : step;
        step *= size;
    }
}

static ember_status run_binary(xnn_graph *g, const xnn_node *n) {
    static const bop ops[] = {
        [XNN_NODE_Add] = B_ADD, [XNN_NODE_Subtract] = B_SUB, [XNN_NODE_Multiply] = B_MUL,
        [XNN_NODE_Div] = B_DIV, [XNN_NODE_Minimum] = B_MIN, [XNN_NODE_Maximum] = B_MAX,
        [XNN_NODE_PReLU] = B_PRELU};
    const bop op = ops[n->type];
    const xnn_value *av = xr_in(g, n, 0), *bv = xr_in(g, n, 1), *yv = xr_out(g, n, 0);
    const float *a = xr_f(av), *b = xr_f(bv);
    float *y = xr_f(yv);
    const size_t rank = yv->rank, total = xr_numel(yv);
    if (total == 0) return EMBER_OK;
    size_t sa[XNN_MAX_DIMS], sb[XNN_MAX_DIMS];
    broadcast_strides(av, rank, sa);
    broadcast_strides(bv, rank, sb);
    const size_t len = rank > 0 ? yv->shape[rank - 1] : 1;
    const size_t la = rank > 0 ? sa[rank - 1] : 1, lb = rank > 0 ? sb[rank - 1] : 1;
    size_t coord[XNN_MAX_DIMS] = {0}, ao = 0, bo = 0;
    for (size_t done = 0; done < total; done += len) {
        binary_run(op, a + ao, la, b + bo, lb, y + done, len);
        /* next outer index: increment the leading dims' counter */
        for (size_t d = rank > 1 ? rank - 1 : 0; d-- > 0;) {
            ao += sa[d];
            bo += sb[d];
            if (++coord[d] < yv->shape[d]) break;
            ao -= sa[d] * coord[d];
            bo -= sb[d] * coord[d];
            coord[d] = 0;
        }
    }
    if (op <= B_DIV && (n->out_min > -INFINITY || n->out_max < INFINITY))
        for (size_t i = 0; i < total; i++) y[i] = xr_clamp(y[i], n->out_min, n->out_max);
    return EMBER_OK;
}

static float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

static ember_status run_unary(xnn_graph *g, const xnn_node *n) {
    const float *x = xr_f(xr_in(g, n, 0));
    float *y = xr_f(xr_out(g, n, 0));
    const size_t count = xr_numel(xr_out(g, n, 0));
    const float alpha = n->p.alpha, lo = n->out_min, hi = n->out_max;
#define UNARY(EXPR)                                                                               \
    for (size_t i = 0; i < count; i++) {                                                          \
        const float v = x[i];                                                                     \
        y[i] = (EXPR);                                                                            \
    }                                                                                             \
    break;
    switch (n->type) {
    case XNN_NODE_Sigmoid: UNARY(1.0f / (1.0f + expf(-v)))
    case XNN_NODE_Tanh: UNARY(tanhf(v))
    case XNN_NODE_Exp: UNARY(expf(v))
    case XNN_NODE_Log: UNARY(logf(v))
    case XNN_NODE_Sin: UNARY(sinf(v))
    case XNN_NODE_Cos: UNARY(cosf(v))
    case XNN_NODE_SquareRoot: UNARY(sqrtf(v))
    case XNN_NODE_ReciprocalSquareRoot: UNARY(1.0f / sqrtf(v))
    case XNN_NODE_Square: UNARY(v * v)
    case XNN_NODE_Abs: UNARY(fabsf(v))
    case XNN_NODE_Negate: UNARY(-v)
    case XNN_NODE_Floor: UNARY(floorf(v))
    case XNN_NODE_Ceiling: UNARY(ceilf(v))
    case XNN_NODE_Hardswish: UNARY(v * xr_clamp(v + 3.0f, 0.0f, 6.0f) / 6.0f)
    case XNN_NODE_Gelu: UNARY(gelu(v))
    case XNN_NODE_ELU: UNARY(v >= 0.0f ? v : alpha * expm1f(v))
    case XNN_NODE_LeakyReLU: UNARY(v >= 0.0f ? v : v * alpha)
    case XNN_NODE_Clamp: UNARY(xr_clamp(v, lo, hi))
    default:
        return xnn_node_fail(g, (uint32_t)(n - g->nodes), EMBER_ERR_NOT_SUPPORTED,
                             "node type not supported");
    }
#undef UNARY
    return EMBER_OK;
}

/* Softmax over the last dim: exp(x - max) / sum. */
static ember_status run_softmax(xnn_graph *g, const xnn_node *n) {
    const xnn_value *xv = xr_in(g, n, 0);
    const float *x = xr_f(xv);
    float *y = xr_f(xr_out(g, n, 0));
    const size_t len = xv->shape[xv->rank - 1], rows = len > 0 ? xr_numel(xv) / len : 0;
    for (size_t r = 0; r < rows; r++) {
        const float *in = x + r * len;
        float *out = y + r * len, max = -INFINITY, sum = 0.0f;
        for (size_t i = 0; i < len; i++) max = in[i] > max ? in[i] : max;
        for (size_t i = 0; i < len; i++) sum += out[i] = expf(in[i] - max);
        const float inv = 1.0f / sum;
        for (size_t i = 0; i < len; i++) out[i] *= inv;
    }
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
