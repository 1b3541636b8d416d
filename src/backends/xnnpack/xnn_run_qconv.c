/*
 * Quantized Conv2d on NHWC int8 activations (xnn_run.h), statically
 * (qint8 input and output) or dynamically (qdint8 input, one scale and zero
 * point per image, float32 output) quantized, on the int8 products of
 * qd8_gemm.h with the filter packed at init (xnn_pack.c).
 *
 * As the float32 convolution: blocks of output pixels of one image are
 * spread over the threads; each makes its block's im2col rows (KH x KW x C
 * per pixel, the OHWI filter's order) in its own scratch, padding with the
 * input's zero point (the int8 that stands for 0), and multiplies them on
 * its own. A 1x1 convolution with stride 1 and no padding multiplies the
 * input itself.
 *
 * Quantized ConvTranspose2d, on the same products: output pixels are taken
 * a row at a time, in runs of one phase (every stride-th pixel, which take
 * the same taps: xnn_graph.h); a run's im2col rows hold the input pixels
 * its taps read (the zero point where a tap falls outside the input or
 * past the kernel), multiplied by that phase's filter, packed at init, and
 * written stride pixels apart. So each output is one int32 sum of exactly
 * its own taps, requantized once, as XNNPACK computes it, and no thread
 * writes another's pixels.
 */
#include <string.h>

#include "ember/threadpool.h"
#include "xnn_run.h"

/* Output pixels per block of the im2col product. */
#define QCONV_BLOCK 64

typedef struct qconv_geom {
    size_t n, h, w, c, oh, ow, oc;
    size_t kh, kw, sh, sw, dh, dw, pt, pl;
    size_t groups, gin, gout;
    xnn_deconv_axis ay, ax; /* transposed: the phases along H and W */
} qconv_geom;

static qconv_geom geom(xnn_graph *g, const xnn_node *n) {
    const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
    const xnn_conv_params *p = &n->p.conv;
    qconv_geom c = {x->shape[0], x->shape[1], x->shape[2], x->shape[3], y->shape[1], y->shape[2],
                    y->shape[3], p->kernel_h, p->kernel_w, p->stride_h, p->stride_w,
                    p->dilation_h, p->dilation_w, p->pad_top, p->pad_left, p->groups,
                    p->group_in, p->group_out,
                    xnn_deconv_axis_of(p->kernel_h, p->stride_h, p->dilation_h),
                    xnn_deconv_axis_of(p->kernel_w, p->stride_w, p->dilation_w)};
    return c;
}

static bool is_deconv(const xnn_node *n) { return n->type == XNN_NODE_ConvTranspose2d; }

static bool is_direct(const xnn_node *n, const qconv_geom *c) {
    return !is_deconv(n) && c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && c->pt == 0 &&
           c->pl == 0 && c->oh == c->h && c->ow == c->w;
}

/* Bytes of one thread's block of im2col rows of k bytes, with the
 * products' padding. */
static bool block_bytes(size_t k, size_t *bytes) {
    if (ember_mul_overflow(k, QCONV_BLOCK, bytes) ||
        ember_add_overflow(*bytes, EKO_QD8_X_PAD + 63, bytes))
        return false;
    *bytes &= ~(size_t)63;
    return true;
}

/* The im2col row: KH x KW x C, or for a transposed convolution the packed
 * phase filter's depth (slots x GIN, xnn_pack.c). */
static bool row_bytes(const xnn_node *n, const qconv_geom *c, size_t *k) {
    if (is_deconv(n)) {
        *k = n->qw.k; /* as packed (xnn_pack.c checked its size) */
        return true;
    }
    return !ember_mul_overflow(c->kh * c->kw, c->c, k);
}

bool xnn_qconv_scratch(xnn_graph *g, uint32_t ni, size_t *bytes) {
    const xnn_node *n = &g->nodes[ni];
    qconv_geom c = geom(g, n);
    *bytes = 0;
    if (is_direct(n, &c)) return true;
    size_t k, one;
    return row_bytes(n, &c, &k) && block_bytes(k, &one) &&
           !ember_mul_overflow(one, ember_threadpool_size(g->threadpool), bytes);
}

typedef struct qconv_job {
    xnn_graph *g;
    const xnn_node *n;
    qconv_geom c;
    size_t k, pixels, blocks_per_image, block_bytes;
    const int8_t *x;
    const eko_qd8_row *image_q;  /* dynamic: each image's quantization */
    uint8_t x_xor;               /* x's encoding: 0 (static), the Convert's (dynamic) */
} qconv_job;

/* The input quantization of image b, with the static layers' unit scale. */
static eko_qd8_row image_quant(const qconv_job *j, size_t b) {
    if (j->image_q != NULL) return j->image_q[b];
    return (eko_qd8_row){1.0f, xr_in(j->g, j->n, 0)->zero_point};
}

/* Results of `rows` rows x of image b times weights w, written from
 * output element `at` on, rows ld elements apart. */
static void product(const qconv_job *j, size_t b, const eko_qd8_weights *w, size_t at, size_t ld,
                    size_t rows, const int8_t *x, size_t ldx, ember_threadpool *pool) {
    const xnn_node *n = j->n;
    const xnn_value *y = xr_out(j->g, n, 0);
    eko_qd8_out out = {NULL, NULL, ld};
    float min = n->out_min, max = n->out_max;
    if (n->qmode == XNN_QM_STATIC) {
        out.q = (int8_t *)y->data + at;
        min = (float)n->q.qmin, max = (float)n->q.qmax;
    } else {
        out.c = xr_f(y) + at;
    }
    eko_qd8_gemm_uniform(j->g->qd8, pool, rows, x, ldx, j->x_xor, image_quant(j, b), w, out, min,
                         max);
}

/* n bytes: a short run inline (a first layer's 3 channels would otherwise
 * cost a library call per tap), a long one through memcpy. */
static inline void copy_run(int8_t *restrict dst, const int8_t *restrict src, size_t n) {
    if (n >= 64) {
        memcpy(dst, src, n);
        return;
    }
    /* pieces of fixed sizes: each memcpy a plain move, no call */
    size_t at = 0;
    if (n & 32) memcpy(dst + at, src + at, 32), at += 32;
    if (n & 16) memcpy(dst + at, src + at, 16), at += 16;
    if (n & 8) memcpy(dst + at, src + at, 8), at += 8;
    if (n & 4) memcpy(dst + at, src + at, 4), at += 4;
    if (n & 2) memcpy(dst + at, src + at, 2), at += 2;
    if (n & 1) dst[at] = src[at];
}

/* im2col rows for pixels [p0, p0 + rows) of image b into col, padding with
 * zp. A window row whose taps all fall inside the input and lie side by
 * side (dilation 1) is one run of KW x C bytes. */
static void im2col(const qconv_geom *c, const int8_t *x, size_t b, size_t p0, size_t rows,
                   int8_t zp, int8_t *col) {
    const size_t k = c->kh * c->kw * c->c, run = c->kw * c->c;
    for (size_t r = 0; r < rows; r++) {
        const size_t p = p0 + r, ox = p % c->ow, oy = p / c->ow;
        int8_t *dst = col + r * k;
        const size_t ix0 = ox * c->sw; /* minus pl: checked below */
        const bool cols_in = c->dw == 1 && ix0 >= c->pl && ix0 - c->pl + c->kw <= c->w;
        for (size_t ky = 0; ky < c->kh; ky++) {
            const size_t iy = oy * c->sh + ky * c->dh; /* minus pt: checked below */
            const bool row_in = iy >= c->pt && iy - c->pt < c->h;
            const int8_t *src = row_in ? x + (b * c->h + iy - c->pt) * c->w * c->c : x;
            if (row_in && cols_in) {
                copy_run(dst, src + (ix0 - c->pl) * c->c, run);
                dst += run;
                continue;
            }
            for (size_t kx = 0; kx < c->kw; kx++, dst += c->c) {
                const size_t ix = ix0 + kx * c->dw;
                if (row_in && ix >= c->pl && ix - c->pl < c->w)
                    copy_run(dst, src + (ix - c->pl) * c->c, c->c);
                else
                    memset(dst, zp, c->c);
            }
        }
    }
}

static void qconv_blocks(void *ctx, size_t thread, size_t start, size_t count) {
    const qconv_job *j = ctx;
    int8_t *col = (int8_t *)(void *)(j->g->arena + j->n->scratch_offset) + thread * j->block_bytes;
    for (size_t blk = start; blk < start + count; blk++) {
        const size_t b = blk / j->blocks_per_image, p0 = blk % j->blocks_per_image * QCONV_BLOCK;
        const size_t rows = j->pixels - p0 < QCONV_BLOCK ? j->pixels - p0 : QCONV_BLOCK;
        /* the padding: the zero point, in x's encoding */
        const uint8_t pad = (uint8_t)((uint8_t)image_quant(j, b).zero_point ^ j->x_xor);
        im2col(&j->c, j->x, b, p0, rows, (int8_t)pad, col);
        product(j, b, &j->n->qw, (b * j->pixels + p0) * j->c.oc, j->c.oc, rows, col, j->k, NULL);
    }
}

/* ---------------------------------------------------------------------- */
/* Transposed                                                             */
/* ---------------------------------------------------------------------- */

/* The class (xnn_graph.h) of the taps output o takes along one axis:
 * r < classes with r * dilation % stride == (o + pad) % stride, or
 * classes when it takes none. */
static size_t phase_class(const xnn_deconv_axis *a, size_t o_pad, size_t stride,
                          size_t dilation) {
    const uint64_t phase = o_pad % stride;
    for (size_t r = 0; r < a->classes; r++)
        if ((uint64_t)r * dilation % stride == phase) return r;
    return a->classes;
}

/* im2col rows of output pixels (oy, ox + i sw), i < rows, of image b,
 * group grp, whose taps are classes (ry, rx): slot (jy, jx) of a row holds
 * the input pixel that tap (ry + jy period_h, rx + jx period_w) reads, or
 * zp (the tap falls outside the input or past the kernel, or the pixel
 * takes no tap). */
static void deconv_im2col(const qconv_geom *c, const int8_t *x, size_t b, size_t oy, size_t ox,
                          size_t rows, size_t grp, size_t ry, size_t rx, int8_t zp, size_t k,
                          int8_t *col) {
    memset(col, zp, rows * k);
    if (ry >= c->ay.classes || rx >= c->ax.classes) return;
    const size_t t = oy + c->pt; /* input row iy = (t - ky dh) / sh, divisible by the class */
    for (size_t r = 0; r < rows; r++, ox += c->sw) {
        const size_t s = ox + c->pl;
        int8_t *dst = col + r * k;
        for (size_t jy = 0, ky = ry; jy < c->ay.slots && ky < c->kh; jy++, ky += c->ay.period) {
            if (t < ky * c->dh) break;
            const size_t iy = (t - ky * c->dh) / c->sh;
            if (iy >= c->h) continue;
            for (size_t jx = 0, kx = rx; jx < c->ax.slots && kx < c->kw;
                 jx++, kx += c->ax.period) {
                if (s < kx * c->dw) break;
                const size_t ix = (s - kx * c->dw) / c->sw;
                if (ix >= c->w) continue;
                memcpy(dst + (jy * c->ax.slots + jx) * c->gin,
                       x + ((b * c->h + iy) * c->w + ix) * c->c + grp * c->gin, c->gin);
            }
        }
    }
}

/* Output rows (b, oy) [start, start + count): every run of one phase, in
 * blocks of QCONV_BLOCK pixels, one group at a time. */
static void qdeconv_rows(void *ctx, size_t thread, size_t start, size_t count) {
    const qconv_job *j = ctx;
    const qconv_geom *c = &j->c;
    const eko_qd8_weights *packed = &j->n->qw;
    const size_t pack_bytes = packed->panels * packed->panel_bytes; /* one phase's filter */
    int8_t *col = (int8_t *)(void *)(j->g->arena + j->n->scratch_offset) + thread * j->block_bytes;
    const size_t runs = c->sw < c->ow ? c->sw : c->ow;
    for (size_t row = start; row < start + count; row++) {
        const size_t b = row / c->oh, oy = row % c->oh;
        const size_t ry = phase_class(&c->ay, oy + c->pt, c->sh, c->dh);
        const uint8_t pad = (uint8_t)((uint8_t)image_quant(j, b).zero_point ^ j->x_xor);
        for (size_t ox0 = 0; ox0 < runs; ox0++) {
            const size_t rx = phase_class(&c->ax, ox0 + c->pl, c->sw, c->dw);
            const size_t pixels = (c->ow - ox0 - 1) / c->sw + 1;
            /* a pixel that takes no tap gets the bias: any filter times zero points */
            const size_t cls = (ry < c->ay.classes ? ry : 0) * c->ax.classes +
                               (rx < c->ax.classes ? rx : 0);
            for (size_t grp = 0; grp < c->groups; grp++) {
                eko_qd8_weights w = *packed;
                w.data += (grp * c->ay.classes * c->ax.classes + cls) * pack_bytes;
                for (size_t i0 = 0; i0 < pixels; i0 += QCONV_BLOCK) {
                    const size_t rows = pixels - i0 < QCONV_BLOCK ? pixels - i0 : QCONV_BLOCK;
                    const size_t ox = ox0 + i0 * c->sw;
                    deconv_im2col(c, j->x, b, oy, ox, rows, grp, ry, rx, (int8_t)pad, j->k, col);
                    /* more than one pixel: sw < ow, so sw * oc < the output row */
                    product(j, b, &w, (row * c->ow + ox) * c->oc + grp * c->gout,
                            rows > 1 ? c->sw * c->oc : c->oc, rows, col, j->k, NULL);
                }
            }
        }
    }
}

ember_status xnn_run_qconv(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    const xnn_value *x = xr_in(g, n, 0);
    qconv_job j;
    memset(&j, 0, sizeof j);
    j.g = g;
    j.n = n;
    j.c = geom(g, n);
    row_bytes(n, &j.c, &j.k); /* the filter's row: checked at init */
    j.pixels = j.c.oh * j.c.ow;
    j.x = x->data;
    if (n->qmode == XNN_QM_DYNAMIC) {
        size_t data_bytes, rows;
        xnn_qd8_layout(x, x->shape, &data_bytes, &rows); /* rows: one per image (init) */
        j.image_q = (const eko_qd8_row *)(const void *)((const uint8_t *)x->data + data_bytes);
        j.x_xor = g->qd8->x_xor; /* as the Convert wrote it */
    }
    if (j.pixels == 0 || j.c.n == 0 || j.c.oc == 0) return EMBER_OK;
    block_bytes(j.k, &j.block_bytes);
    if (is_deconv(n)) {
        xr_parallel(g, ember_work_mul(ember_work_mul(j.c.n, j.pixels), ember_work_mul(j.c.oc, j.k)),
                    qdeconv_rows, &j, j.c.n * j.c.oh, 1);
        return EMBER_OK;
    }
    if (is_direct(n, &j.c)) {
        for (size_t b = 0; b < j.c.n; b++)
            product(&j, b, &n->qw, b * j.pixels * j.c.oc, j.c.oc, j.pixels,
                    j.x + b * j.pixels * j.c.c, j.c.c, g->threadpool);
        return EMBER_OK;
    }
    j.blocks_per_image = j.pixels / QCONV_BLOCK + (j.pixels % QCONV_BLOCK != 0);
    xr_parallel(g, ember_work_mul(ember_work_mul(j.c.n, j.pixels), ember_work_mul(j.c.oc, j.k)),
                qconv_blocks, &j, j.c.n * j.blocks_per_image, 1);
    return EMBER_OK;
}
