/*
 * Convolution nodes on NHWC activations (xnn_run.h).
 *
 * Conv2d: a matrix product with the filter packed at init (conv.h: through
 * row pointers into the input, or im2col rows for a few channels per
 * group). A 1x1 convolution with stride 1 and no padding multiplies the
 * input itself.
 * DepthwiseConv2d: a direct loop, channels innermost (contiguous in NHWC).
 * ConvTranspose2d: the product of every input pixel with the filter gives
 * all its output taps (columns (j, ky, kx)); each output pixel then gathers
 * the taps that land on it, so threads write disjoint output rows.
 */
#include <math.h>
#include <string.h>

#include "ember/threadpool.h"
#include "kernels/optimized/conv.h"
#include "kernels/optimized/f32_dwconv.h"
#include "xnn_run.h"

typedef eko_conv_geom conv_geom;

static conv_geom geom(xnn_graph *g, const xnn_node *n) {
    const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
    const xnn_conv_params *p = &n->p.conv;
    conv_geom c = {x->shape[0], x->shape[1], x->shape[2], x->shape[3], y->shape[1], y->shape[2],
                   y->shape[3], p->kernel_h, p->kernel_w, p->stride_h, p->stride_w,
                   p->dilation_h, p->dilation_w, p->pad_top, p->pad_left, p->groups,
                   p->group_in, p->group_out};
    return c;
}

static bool is_direct(const conv_geom *c) {
    return c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && c->pt == 0 && c->pl == 0 &&
           c->groups == 1 && c->oh == c->h && c->ow == c->w;
}

bool xnn_conv_scratch(xnn_graph *g, uint32_t ni, size_t *bytes) {
    const xnn_node *n = &g->nodes[ni];
    conv_geom c = geom(g, n);
    size_t floats;
    if (n->type == XNN_NODE_Conv2d) {
        if (is_direct(&c)) return true;
        return eko_f32_conv_scratch_bytes(&c, ember_threadpool_size(g->threadpool), bytes);
    } else {
        /* deconvolution: every input pixel's taps, one group at a time */
        size_t pixels, taps = c.gout * c.kh * c.kw;
        if (ember_mul_overflow(c.n * c.h, c.w, &pixels) || ember_mul_overflow(pixels, taps, &floats))
            return false;
    }
    return !ember_mul_overflow(floats, sizeof(float), bytes);
}

/* ---------------------------------------------------------------------- */
/* Conv2d                                                                 */
/* ---------------------------------------------------------------------- */

static ember_status run_conv2d(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const conv_geom c = geom(g, n);
    if (is_direct(&c)) {
        eko_f32_gemm(xr_gemm(g), g->threadpool, c.n * c.oh * c.ow, c.oc, c.c,
                     xr_f(xr_in(g, n, 0)), c.c, n->packed, xr_f(xr_out(g, n, 0)), c.oc,
                     n->out_min, n->out_max);
        return EMBER_OK;
    }
    /* groups of few output channels: panels as narrow (packed so, xnn_pack.c) */
    const eko_f32_gemm_config *cfg =
        c.groups > 1 ? eko_f32_gemm_config_grouped(xr_gemm(g), c.gout) : xr_gemm(g);
    eko_f32_conv(cfg, g->threadpool, &c, xr_f(xr_in(g, n, 0)), n->packed,
                 xr_f(xr_out(g, n, 0)), n->out_min, n->out_max, xr_scratch(g, n));
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Depthwise                                                              */
/* ---------------------------------------------------------------------- */

typedef struct dw_job {
    xnn_graph *g;
    const xnn_node *n;
    conv_geom c;
} dw_job;

/* Kernel heights the row kernel takes (taller ones take the plain loop). */
#define XNN_DW_MAX_KH 16

/* Output rows (b, oy) [start, start + count). */
static void dw_rows(void *ctx, size_t thread, size_t start, size_t count) {
    const dw_job *j = ctx;
    const conv_geom *c = &j->c;
    const xnn_node *n = j->n;
    const float *x = xr_f(xr_in(j->g, n, 0)), *w = xr_f(xr_in(j->g, n, 1));
    const float *bias = n->in[2] != XNN_INVALID_ID ? xr_f(xr_in(j->g, n, 2)) : NULL;
    float *y = xr_f(xr_out(j->g, n, 0));
    const size_t oc = c->oc, mult = c->gout;
    (void)thread;
    if (mult == 1 && c->kh <= XNN_DW_MAX_KH) {
        /* one input channel per output channel: the optimized row kernel */
        const eko_f32_dwconv *k = eko_f32_dwconv_active();
        const eko_dwconv_geom geo = {c->w, c->c, c->ow, c->kh, c->kw, c->sw, c->dw, c->pl};
        const float *rows[XNN_DW_MAX_KH];
        for (size_t row = start; row < start + count; row++) {
            size_t b = row / c->oh, oy = row % c->oh;
            for (size_t ky = 0; ky < c->kh; ky++) {
                size_t iy = oy * c->sh + ky * c->dh;
                rows[ky] = iy < c->pt || iy - c->pt >= c->h
                               ? NULL
                               : x + (b * c->h + iy - c->pt) * c->w * c->c;
            }
            k->row(&geo, rows, w, bias, n->out_min, n->out_max, y + row * c->ow * oc);
        }
        return;
    }
    for (size_t row = start; row < start + count; row++) {
        size_t b = row / c->oh, oy = row % c->oh;
        for (size_t ox = 0; ox < c->ow; ox++) {
            float *out = y + (row * c->ow + ox) * oc;
            for (size_t ch = 0; ch < oc; ch++) out[ch] = bias != NULL ? bias[ch] : 0.0f;
            for (size_t ky = 0; ky < c->kh; ky++) {
                size_t iy = oy * c->sh + ky * c->dh;
                if (iy < c->pt || iy - c->pt >= c->h) continue;
                for (size_t kx = 0; kx < c->kw; kx++) {
                    size_t ix = ox * c->sw + kx * c->dw;
                    if (ix < c->pl || ix - c->pl >= c->w) continue;
                    const float *in = x + ((b * c->h + iy - c->pt) * c->w + ix - c->pl) * c->c;
                    const float *tap = w + (ky * c->kw + kx) * oc;
                    if (mult == 1) {
                        for (size_t ch = 0; ch < oc; ch++) out[ch] += in[ch] * tap[ch];
                    } else {
                        for (size_t ch = 0; ch < oc; ch++) out[ch] += in[ch / mult] * tap[ch];
                    }
                }
            }
            for (size_t ch = 0; ch < oc; ch++) out[ch] = xr_clamp(out[ch], n->out_min, n->out_max);
        }
    }
}

static ember_status run_depthwise(xnn_graph *g, uint32_t ni) {
    dw_job j = {g, &g->nodes[ni], geom(g, &g->nodes[ni])};
    const uint64_t outputs = ember_work_mul(ember_work_mul(j.c.n * j.c.oh, j.c.ow), j.c.oc);
    xr_parallel(g, ember_work_mul(outputs, j.c.kh * j.c.kw), dw_rows, &j, j.c.n * j.c.oh, 1);
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Deconvolution                                                          */
/* ---------------------------------------------------------------------- */

typedef struct deconv_job {
    xnn_graph *g;
    const xnn_node *n;
    conv_geom c;
    size_t grp;
    const float *cols; /* [n*h*w][gout*kh*kw] */
} deconv_job;

/* Output rows (b, oy): gather the taps of group grp that land on each pixel. */
static void deconv_rows(void *ctx, size_t thread, size_t start, size_t count) {
    const deconv_job *j = ctx;
    const conv_geom *c = &j->c;
    const xnn_node *n = j->n;
    const float *bias = n->in[2] != XNN_INVALID_ID ? xr_f(xr_in(j->g, n, 2)) : NULL;
    float *y = xr_f(xr_out(j->g, n, 0));
    const size_t taps = c->kh * c->kw, width = c->gout * taps;
    (void)thread;
    for (size_t row = start; row < start + count; row++) {
        size_t b = row / c->oh, oy = row % c->oh;
        for (size_t ox = 0; ox < c->ow; ox++) {
            float *out = y + (row * c->ow + ox) * c->oc + j->grp * c->gout;
            for (size_t o = 0; o < c->gout; o++)
                out[o] = bias != NULL ? bias[j->grp * c->gout + o] : 0.0f;
            for (size_t ky = 0; ky < c->kh; ky++) {
                /* oy = iy * sh + ky * dh - pt */
                size_t t = oy + c->pt;
                if (t < ky * c->dh || (t - ky * c->dh) % c->sh != 0) continue;
                size_t iy = (t - ky * c->dh) / c->sh;
                if (iy >= c->h) continue;
                for (size_t kx = 0; kx < c->kw; kx++) {
                    size_t s = ox + c->pl;
                    if (s < kx * c->dw || (s - kx * c->dw) % c->sw != 0) continue;
                    size_t ix = (s - kx * c->dw) / c->sw;
                    if (ix >= c->w) continue;
                    const float *col = j->cols + ((b * c->h + iy) * c->w + ix) * width +
                                       ky * c->kw + kx;
                    for (size_t o = 0; o < c->gout; o++) out[o] += col[o * taps];
                }
            }
            for (size_t o = 0; o < c->gout; o++) out[o] = xr_clamp(out[o], n->out_min, n->out_max);
        }
    }
}

static ember_status run_deconv(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    deconv_job j = {g, n, geom(g, n), 0, xr_scratch(g, n)};
    const conv_geom *c = &j.c;
    const size_t taps = c->gout * c->kh * c->kw;
    size_t slice;
    eko_f32_packed_size(xr_gemm(g), taps, c->gin, &slice);
    for (j.grp = 0; j.grp < c->groups; j.grp++) {
        eko_f32_gemm(xr_gemm(g), g->threadpool, c->n * c->h * c->w, taps, c->gin,
                     xr_f(xr_in(g, n, 0)) + j.grp * c->gin, c->c, n->packed + j.grp * slice,
                     xr_scratch(g, n), taps, -INFINITY, INFINITY);
        xr_parallel(g, ember_work_mul(ember_work_mul(c->n * c->oh, c->ow), taps), deconv_rows, &j,
                    c->n * c->oh, 1);
    }
    return EMBER_OK;
}

ember_status xnn_run_conv(xnn_graph *g, uint32_t ni) {
    switch (g->nodes[ni].type) {
    case XNN_NODE_Conv2d: return run_conv2d(g, ni);
    case XNN_NODE_DepthwiseConv2d: return run_depthwise(g, ni);
    default: return run_deconv(g, ni);
    }
}
