/*
 * Pooling nodes on NHWC activations (xnn_run.h): max and average over
 * windows (padding never counts: it is -inf for the max and left out of the
 * average's divisor), global average over H and W, and argmax pooling
 * (stride = window; indices within the window, column-major: x * KH + y).
 * Output rows are spread over the threads.
 */
#include <math.h>
#include <string.h>

#include "ember/threadpool.h"
#include "kernels/optimized/window.h"
#include "xnn_run.h"

typedef struct pool_job {
    xnn_graph *g;
    const xnn_node *n;
    size_t h, w, c, oh, ow;
} pool_job;

static void pool_rows(void *ctx, size_t thread, size_t start, size_t count) {
    const pool_job *j = ctx;
    const xnn_node *n = j->n;
    const xnn_conv_params *p = &n->p.conv;
    const float *x = xr_f(xr_in(j->g, n, 0));
    float *y = xr_f(xr_out(j->g, n, 0));
    const bool is_max = n->type == XNN_NODE_MaxPooling2d;
    const size_t dh = is_max ? p->dilation_h : 1, dw = is_max ? p->dilation_w : 1;
    const size_t c = j->c;
    (void)thread;
    for (size_t row = start; row < start + count; row++) {
        size_t b = row / j->oh, oy = row % j->oh, ky0, ky1, kx0, kx1;
        /* only the taps inside the input (a window may be far larger) */
        eko_window_taps(oy, p->stride_h, dh, p->pad_top, j->h, p->kernel_h, &ky0, &ky1);
        for (size_t ox = 0; ox < j->ow; ox++) {
            float *out = y + (row * j->ow + ox) * c;
            for (size_t ch = 0; ch < c; ch++) out[ch] = is_max ? -INFINITY : 0.0f;
            size_t taps = 0;
            eko_window_taps(ox, p->stride_w, dw, p->pad_left, j->w, p->kernel_w, &kx0, &kx1);
            for (size_t ky = ky0; ky < ky1; ky++) {
                size_t iy = oy * p->stride_h + ky * dh;
                for (size_t kx = kx0; kx < kx1; kx++) {
                    size_t ix = ox * p->stride_w + kx * dw;
                    const float *in = x + ((b * j->h + iy - p->pad_top) * j->w + ix - p->pad_left) * c;
                    taps++;
                    if (is_max) {
                        for (size_t ch = 0; ch < c; ch++) out[ch] = in[ch] > out[ch] ? in[ch] : out[ch];
                    } else {
                        for (size_t ch = 0; ch < c; ch++) out[ch] += in[ch];
                    }
                }
            }
            const float scale = !is_max && taps > 0 ? 1.0f / (float)taps : 1.0f;
            for (size_t ch = 0; ch < c; ch++)
                out[ch] = xr_clamp(out[ch] * scale, n->out_min, n->out_max);
        }
    }
}

static void argmax_rows(void *ctx, size_t thread, size_t start, size_t count) {
    const pool_job *j = ctx;
    const xnn_node *n = j->n;
    const xnn_conv_params *p = &n->p.conv;
    const float *x = xr_f(xr_in(j->g, n, 0));
    float *y = xr_f(xr_out(j->g, n, 0));
    int32_t *idx = (int32_t *)xr_out(j->g, n, 1)->data;
    const size_t c = j->c;
    (void)thread;
    for (size_t row = start; row < start + count; row++) {
        size_t b = row / j->oh, oy = row % j->oh;
        for (size_t ox = 0; ox < j->ow; ox++) {
            float *out = y + (row * j->ow + ox) * c;
            int32_t *oi = idx + (row * j->ow + ox) * c;
            for (size_t ch = 0; ch < c; ch++) out[ch] = -INFINITY, oi[ch] = 0;
            /* column-major over the window: the first maximum wins */
            for (size_t kx = 0; kx < p->kernel_w; kx++) {
                size_t ix = ox * p->kernel_w + kx;
                if (ix < p->pad_left || ix - p->pad_left >= j->w) continue;
                for (size_t ky = 0; ky < p->kernel_h; ky++) {
                    size_t iy = oy * p->kernel_h + ky;
                    if (iy < p->pad_top || iy - p->pad_top >= j->h) continue;
                    const float *in = x + ((b * j->h + iy - p->pad_top) * j->w + ix - p->pad_left) * c;
                    const int32_t at = (int32_t)(kx * p->kernel_h + ky);
                    for (size_t ch = 0; ch < c; ch++)
                        if (in[ch] > out[ch]) out[ch] = in[ch], oi[ch] = at;
                }
            }
        }
    }
}

/* Mean over H and W of [outer..., H, W, C]. */
static void global_avg(xnn_graph *g, const xnn_node *n) {
    const xnn_value *xv = xr_in(g, n, 0);
    const size_t r = xv->rank, h = xv->shape[r - 3], w = xv->shape[r - 2], c = xv->shape[r - 1];
    size_t outer = 1;
    for (size_t d = 0; d + 3 < r; d++) outer *= xv->shape[d];
    const float *x = xr_f(xv);
    float *y = xr_f(xr_out(g, n, 0));
    const float scale = h * w > 0 ? 1.0f / (float)(h * w) : 0.0f;
    /* sums of a block of channels in a local array: no store to the output
     * (which the compiler must assume may alias the input) per pixel, and
     * vectors of independent sums; each channel still adds its pixels in
     * order */
    enum { CH_BLOCK = 128 };
    float acc[CH_BLOCK];
    for (size_t o = 0; o < outer; o++) {
        const float *image = x + o * h * w * c;
        for (size_t c0 = 0; c0 < c; c0 += CH_BLOCK) {
            const size_t cn = c - c0 < CH_BLOCK ? c - c0 : CH_BLOCK;
            for (size_t ch = 0; ch < CH_BLOCK; ch++) acc[ch] = 0.0f;
            if (cn == CH_BLOCK) {
                for (size_t s = 0; s < h * w; s++) {
                    const float *in = image + s * c + c0;
                    for (size_t ch = 0; ch < CH_BLOCK; ch++) acc[ch] += in[ch];
                }
            } else {
                for (size_t s = 0; s < h * w; s++) {
                    const float *in = image + s * c + c0;
                    for (size_t ch = 0; ch < cn; ch++) acc[ch] += in[ch];
                }
            }
            float *out = y + o * c + c0;
            for (size_t ch = 0; ch < cn; ch++)
                out[ch] = xr_clamp(acc[ch] * scale, n->out_min, n->out_max);
        }
    }
}

ember_status xnn_run_pool(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    if (n->type == XNN_NODE_GlobalAvgPooling2d) {
        global_avg(g, n);
        return EMBER_OK;
    }
    const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
    pool_job j = {g, n, x->shape[1], x->shape[2], x->shape[3], y->shape[1], y->shape[2]};
    /* each output reads its window's floats */
    const uint64_t reads = ember_work_mul(ember_work_mul(xr_numel(y), n->p.conv.kernel_h),
                                          n->p.conv.kernel_w);
    xr_parallel(g, ember_work_mul(reads, sizeof(float)),
                n->type == XNN_NODE_ArgMaxPooling2d ? argmax_rows : pool_rows, &j,
                x->shape[0] * j.oh, 1);
    return EMBER_OK;
}
