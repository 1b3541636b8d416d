/*
 * Statically quantized int8 nodes besides the products (qs8_ops.h):
 *
 *   Convert             float32 <-> qint8 (per-tensor scale and zero point)
 *   DepthwiseConv2d     qint8 NHWC x int8 filter [1, KH, KW, C] + int32 bias
 *   Add, Subtract,      qint8 (op) qint8 -> qint8, numpy broadcasting
 *   Multiply
 *   MaxPooling2d        qint8 -> qint8 quantized alike
 *   GlobalAvgPooling2d  qint8 [N, H, W, C] -> qint8 [N, C] (kept dims or not)
 *   Clamp, Sigmoid,     qint8 -> qint8 through the node's table of the 256
 *   Tanh, ELU,          input bytes, built at init (xnn_pack.c)
 *   LeakyReLU, Hardswish
 *
 * The fused output_min_max clamps in output steps (xnn_check_quant.c).
 * Image rows and element chunks are spread over the graph's threads.
 */
#include "kernels/optimized/eltwise.h"
#include "kernels/optimized/qs8_dwconv.h"
#include "kernels/optimized/qs8_elt.h"
#include "kernels/optimized/qs8_ops.h"
#include "ember/threadpool.h"
#include "xnn_run.h"

/* Elements of one piece of a split conversion or addition. */
#define QS8_CHUNK 8192

static eko_qs8_params qp(const xnn_value *v) { return (eko_qs8_params){v->scale, v->zero_point}; }

static size_t chunks(size_t n) { return n / QS8_CHUNK + (n % QS8_CHUNK != 0); }

typedef struct flat_job {
    xnn_graph *g;
    const xnn_node *n;
    size_t total;
} flat_job;

static void convert_chunks(void *ctx, size_t thread, size_t start, size_t count) {
    const flat_job *j = ctx;
    const xnn_value *x = xr_in(j->g, j->n, 0), *y = xr_out(j->g, j->n, 0);
    (void)thread;
    const size_t lo = start * QS8_CHUNK, hi = (start + count) * QS8_CHUNK;
    const size_t len = (hi < j->total ? hi : j->total) - lo;
    if (y->dtype == XNN_DT_QINT8)
        eko_qs8_quantize(len, xr_f(x) + lo, (int8_t *)y->data + lo, qp(y));
    else
        eko_qs8_dequantize(len, (const int8_t *)x->data + lo, xr_f(y) + lo, qp(x));
}

/* Add, Subtract, Multiply on a run of elements: a subtraction is an
 * addition of b with its scale negated, as XNNPACK runs it. */
static void binary(const xnn_node *n, size_t len, const int8_t *a, size_t inc_a,
                   eko_qs8_params pa, const int8_t *b, size_t inc_b, eko_qs8_params pb, int8_t *y,
                   eko_qs8_params py) {
    if (n->type == XNN_NODE_Multiply) {
        eko_qs8_mul(len, a, inc_a, pa, b, inc_b, pb, y, py, n->q.qmin, n->q.qmax);
        return;
    }
    if (n->type == XNN_NODE_Subtract) pb.scale = -pb.scale;
    eko_qs8_add(len, a, inc_a, pa, b, inc_b, pb, y, py, n->q.qmin, n->q.qmax);
}

/* Operands that are contiguous and alike in shape (nd of rank 1). */
static void binary_chunks(void *ctx, size_t thread, size_t start, size_t count) {
    const flat_job *j = ctx;
    const xnn_value *a = xr_in(j->g, j->n, 0), *b = xr_in(j->g, j->n, 1);
    const xnn_value *y = xr_out(j->g, j->n, 0);
    (void)thread;
    const size_t lo = start * QS8_CHUNK, hi = (start + count) * QS8_CHUNK;
    const size_t len = (hi < j->total ? hi : j->total) - lo;
    binary(j->n, len, (const int8_t *)a->data + lo, 1, qp(a), (const int8_t *)b->data + lo, 1,
           qp(b), (int8_t *)y->data + lo, qp(y));
}

static ember_status run_binary(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *av = xr_in(g, n, 0), *bv = xr_in(g, n, 1), *yv = xr_out(g, n, 0);
    const size_t rank = yv->rank, total = xr_numel(yv);
    if (total == 0) return EMBER_OK;
    size_t st[EKO_ND_MAX_OPS][EKO_ND_MAX_DIM];
    if (!eko_nd_broadcast(rank, yv->shape, rank, yv->shape, st[0]) ||
        !eko_nd_broadcast(rank, yv->shape, av->rank, av->shape, st[1]) ||
        !eko_nd_broadcast(rank, yv->shape, bv->rank, bv->shape, st[2]))
        return xnn_node_fail(g, ni, EMBER_ERR_SHAPE_MISMATCH,
                             "operands do not broadcast to the output");
    eko_nd nd;
    eko_nd_init(&nd, rank, yv->shape, 3, (const size_t(*)[EKO_ND_MAX_DIM])st);
    const size_t last = nd.rank - 1;
    if (nd.rank == 1 && nd.strides[1][0] == 1 && nd.strides[2][0] == 1) {
        flat_job j = {g, n, total};
        xr_parallel(g, ember_work_mul(total, 3), binary_chunks, &j, chunks(total), 1);
        return EMBER_OK;
    }
    /* rows of the merged shape, each operand advancing or repeating */
    const int8_t *a = av->data, *b = bv->data;
    int8_t *y = yv->data;
    const size_t len = nd.sizes[last], rows = total / len;
    for (size_t r = 0; r < rows; r++) {
        size_t rest = r, off[3] = {0, 0, 0};
        for (size_t d = last; d-- > 0;) {
            const size_t coord = rest % nd.sizes[d];
            rest /= nd.sizes[d];
            for (int o = 0; o < 3; o++) off[o] += coord * nd.strides[o][d];
        }
        binary(n, len, a + off[1], nd.strides[1][last], qp(av), b + off[2], nd.strides[2][last],
               qp(bv), y + off[0], qp(yv));
    }
    return EMBER_OK;
}

typedef struct window_job {
    const xnn_node *n;
    eko_qs8_window win;
    const int8_t *x;
    int8_t *y;
    int32_t x_zero_point, y_zero_point;
} window_job;

static eko_qs8_window window(xnn_graph *g, const xnn_node *n) {
    const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
    const xnn_conv_params *p = &n->p.conv;
    eko_qs8_window w = {x->shape[1], x->shape[2], x->shape[3], y->shape[1], y->shape[2],
                        p->kernel_h, p->kernel_w, p->stride_h, p->stride_w, p->dilation_h,
                        p->dilation_w, p->pad_top, p->pad_left};
    return w;
}

static void dw_rows(void *ctx, size_t thread, size_t start, size_t count) {
    const window_job *j = ctx;
    const xnn_qs8_node *q = &j->n->q;
    (void)thread;
    const eko_qs8_dw dw = {q->dw_w,          q->dw_bias,      q->dw_mult, j->x_zero_point,
                           j->y_zero_point, q->qmin,         q->qmax};
    eko_qs8_dwconv_active()->run(&j->win, &dw, j->x, j->y, start, count);
}

static void maxpool_rows(void *ctx, size_t thread, size_t start, size_t count) {
    const window_job *j = ctx;
    (void)thread;
    eko_qs8_maxpool(&j->win, j->x, j->y, start, count, j->n->q.qmin, j->n->q.qmax);
}

/* An elementwise unary node: its table (n->q.lut) looked up per element. */
typedef struct lut_job {
    const int8_t *x;
    int8_t *y;
    size_t total;
    const int8_t *lut; /* by input byte, as unsigned */
} lut_job;

static void lut_chunks(void *ctx, size_t thread, size_t start, size_t count) {
    const lut_job *j = ctx;
    (void)thread;
    const size_t lo = start * QS8_CHUNK, hi = (start + count) * QS8_CHUNK;
    const size_t end = hi < j->total ? hi : j->total;
    eko_qs8_elt_active()->lut(end - lo, j->x + lo, j->lut, j->y + lo);
}

static void run_unary(xnn_graph *g, const xnn_node *n) {
    const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
    lut_job j = {x->data, y->data, xr_numel(x), n->q.lut};
    xr_parallel(g, ember_work_mul(j.total, 2), lut_chunks, &j, chunks(j.total), 1);
}

ember_status xnn_run_qs8(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
    switch (n->type) {
    case XNN_NODE_Convert: {
        flat_job j = {g, n, xr_numel(x)};
        xr_parallel(g, ember_work_mul(j.total, 5), convert_chunks, &j, chunks(j.total), 1);
        return EMBER_OK;
    }
    case XNN_NODE_Add: case XNN_NODE_Subtract: case XNN_NODE_Multiply:
        return run_binary(g, ni);
    case XNN_NODE_Clamp: case XNN_NODE_Sigmoid: case XNN_NODE_Tanh: case XNN_NODE_ELU:
    case XNN_NODE_LeakyReLU: case XNN_NODE_Hardswish:
        run_unary(g, n);
        return EMBER_OK;
    case XNN_NODE_DepthwiseConv2d: case XNN_NODE_MaxPooling2d: {
        window_job j = {n, window(g, n), x->data, y->data, x->zero_point, y->zero_point};
        /* each output reads its window */
        const uint64_t outputs = ember_work_mul(xr_numel(y), n->p.conv.kernel_h);
        xr_parallel(g, ember_work_mul(outputs, n->p.conv.kernel_w),
                    n->type == XNN_NODE_MaxPooling2d ? maxpool_rows : dw_rows, &j,
                    x->shape[0] * j.win.oh, 1);
        return EMBER_OK;
    }
    case XNN_NODE_GlobalAvgPooling2d:
        if (x->shape[1] * x->shape[2] > ((size_t)1 << 23)) /* int32 sums (xnn_check_quant.c) */
            return xnn_node_fail(g, ni, EMBER_ERR_NOT_SUPPORTED,
                                 "qint8 global pooling over %zu pixels (at most 2^23)",
                                 x->shape[1] * x->shape[2]);
        eko_qs8_global_avgpool(x->shape[0], x->shape[1] * x->shape[2], x->shape[3], x->data,
                               qp(x), y->data, qp(y), n->q.qmin, n->q.qmax);
        return EMBER_OK;
    default: /* layout nodes run on element bytes (xnn_run_layout.c) */
        return xnn_run_layout(g, ni);
    }
}
