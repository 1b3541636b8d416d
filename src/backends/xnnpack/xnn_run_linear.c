/*
 * Fully connected and batch matrix multiply nodes, on the packed-weight GEMM
 * of src/kernels/optimized (gemm.h).
 *
 * Fully connected: out[..., OC] = in[..., IC] x W^T + bias, leading dims
 * flattened into rows; W constant was packed at init, a runtime W is packed
 * into scratch on every run. Batch matmul: out[b..., M, N] = A[b...] x B[b...]
 * with numpy-broadcast batch dims; a constant B was packed per batch slice at
 * init, a runtime one is packed per slice into the running thread's scratch.
 */
#include <math.h>
#include <string.h>

#include "ember/threadpool.h"
#include "xnn_run.h"

static size_t fc_packed_floats(xnn_graph *g, const xnn_node *n, bool *ok) {
    const xnn_value *w = xr_in(g, n, 1);
    bool t = n->flags & XNN_FLAG_TRANSPOSE_WEIGHTS;
    size_t floats = 0;
    *ok = eko_f32_packed_size(xr_gemm(g), w->shape[t ? 1 : 0], w->shape[t ? 0 : 1], &floats);
    return floats;
}

/* Packed floats of one B slice of a batch matmul. */
static size_t bmm_slice_floats(xnn_graph *g, const xnn_node *n, bool *ok) {
    const xnn_value *b = xr_in(g, n, 1);
    bool t = n->flags & XNN_FLAG_TRANSPOSE_WEIGHTS;
    size_t floats = 0;
    *ok = eko_f32_packed_size(xr_gemm(g), b->shape[b->rank - (t ? 2 : 1)],
                              b->shape[b->rank - (t ? 1 : 2)], &floats);
    return floats;
}

bool xnn_linear_scratch(xnn_graph *g, uint32_t ni, size_t *bytes) {
    const xnn_node *n = &g->nodes[ni];
    bool ok = true;
    size_t floats = 0;
    if (n->packed != NULL) return true;
    if (n->type == XNN_NODE_FullyConnected) {
        floats = fc_packed_floats(g, n, &ok);
    } else {
        floats = bmm_slice_floats(g, n, &ok);
        ok = ok && !ember_mul_overflow(floats, ember_threadpool_size(g->threadpool), &floats);
    }
    return ok && !ember_mul_overflow(floats, sizeof(float), bytes);
}

static ember_status run_fc(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = xr_in(g, n, 0), *w = xr_in(g, n, 1);
    xnn_value *y = xr_out(g, n, 0);
    const eko_f32_gemm_config *cfg = xr_gemm(g);
    bool t = n->flags & XNN_FLAG_TRANSPOSE_WEIGHTS;
    const size_t oc = w->shape[t ? 1 : 0], ic = w->shape[t ? 0 : 1];
    size_t rows = 1; /* the leading dims, flattened */
    for (uint32_t d = 0; d + 1 < x->rank; d++) rows *= x->shape[d];
    const float *packed = n->packed;
    if (packed == NULL) {
        float *scratch = xr_scratch(g, n);
        const float *bias = n->in[2] != XNN_INVALID_ID ? xr_f(xr_in(g, n, 2)) : NULL;
        eko_f32_pack(cfg, oc, ic, xr_f(w), t, bias, scratch);
        packed = scratch;
    }
    eko_f32_gemm(cfg, g->threadpool, rows, oc, ic, xr_f(x), ic, packed, xr_f(y), oc, n->out_min,
                 n->out_max);
    return EMBER_OK;
}

/* A batch matmul, split by batch slice when there are enough of them. */
typedef struct bmm_job {
    xnn_graph *g;
    const xnn_node *n;
    size_t batch_rank;
    size_t out_batch[XNN_MAX_DIMS], a_batch[XNN_MAX_DIMS], b_batch[XNN_MAX_DIMS];
    size_t m, k, nn;
    bool transposed;
    size_t slice_floats;
    ember_threadpool *inner;   /* threads for each product; NULL when split by slice */
} bmm_job;

/* Offsets (in slices) of A and B for output batch index t. */
static void batch_slices(const bmm_job *j, size_t t, size_t *a_slice, size_t *b_slice) {
    size_t a = 0, b = 0, a_mul = 1, b_mul = 1;
    for (size_t d = j->batch_rank; d-- > 0;) {
        size_t coord = t % j->out_batch[d];
        t /= j->out_batch[d];
        if (j->a_batch[d] != 1) a += coord * a_mul;
        if (j->b_batch[d] != 1) b += coord * b_mul;
        a_mul *= j->a_batch[d];
        b_mul *= j->b_batch[d];
    }
    *a_slice = a;
    *b_slice = b;
}

static void bmm_slices(void *ctx, size_t thread, size_t start, size_t count) {
    const bmm_job *j = ctx;
    xnn_graph *g = j->g;
    const xnn_node *n = j->n;
    const eko_f32_gemm_config *cfg = xr_gemm(g);
    const float *a = xr_f(xr_in(g, n, 0)), *b = xr_f(xr_in(g, n, 1));
    float *y = xr_f(xr_out(g, n, 0));
    float *scratch = n->packed == NULL ? xr_scratch(g, n) + thread * j->slice_floats : NULL;
    for (size_t t = start; t < start + count; t++) {
        size_t as, bs;
        batch_slices(j, t, &as, &bs);
        const float *packed;
        if (n->packed != NULL) {
            packed = n->packed + bs * j->slice_floats;
        } else {
            /* B slice [K, N] (or [N, K] transposed) into panels */
            eko_f32_pack(cfg, j->nn, j->k, b + bs * j->k * j->nn, !j->transposed, NULL, scratch);
            packed = scratch;
        }
        const float *a_rows = a + as * j->m * j->k;
        float *y_rows = y + t * j->m * j->nn;
        if (j->inner != NULL)
            eko_f32_gemm(cfg, j->inner, j->m, j->nn, j->k, a_rows, j->k, packed, y_rows, j->nn,
                         -INFINITY, INFINITY);
        else
            eko_f32_gemm_serial(cfg, j->m, j->nn, j->k, a_rows, j->k, packed, y_rows, j->nn,
                                -INFINITY, INFINITY);
    }
}

static ember_status run_bmm(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *a = xr_in(g, n, 0), *b = xr_in(g, n, 1), *y = xr_out(g, n, 0);
    bmm_job j;
    memset(&j, 0, sizeof j);
    j.g = g;
    j.n = n;
    j.transposed = n->flags & XNN_FLAG_TRANSPOSE_WEIGHTS;
    j.m = a->shape[a->rank - 2];
    j.k = a->shape[a->rank - 1];
    j.nn = y->shape[y->rank - 1];
    j.batch_rank = y->rank - 2u;
    size_t batches = 1;
    for (size_t d = 0; d < j.batch_rank; d++) {
        size_t pa = j.batch_rank - (a->rank - 2u), pb = j.batch_rank - (b->rank - 2u);
        j.out_batch[d] = y->shape[d];
        j.a_batch[d] = d < pa ? 1 : a->shape[d - pa];
        j.b_batch[d] = d < pb ? 1 : b->shape[d - pb];
        batches *= y->shape[d];
    }
    bool ok;
    j.slice_floats = bmm_slice_floats(g, n, &ok);
    const uint64_t macs = ember_work_mul(ember_work_mul(batches, j.m), ember_work_mul(j.nn, j.k));
    const size_t threads = ember_parallel_threads(g->threadpool, macs);
    if (batches >= threads || j.m < 16) {
        ember_parallel_1d_on(g->threadpool, threads, bmm_slices, &j, batches, 1);
    } else {
        j.inner = g->threadpool;
        bmm_slices(&j, 0, 0, batches);
    }
    return EMBER_OK;
}

ember_status xnn_run_linear(xnn_graph *g, uint32_t ni) {
    return g->nodes[ni].type == XNN_NODE_FullyConnected ? run_fc(g, ni) : run_bmm(g, ni);
}
