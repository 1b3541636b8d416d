/*
 * Nodes that move data without arithmetic, or nearly (xnn_run.h):
 * transpose (out.shape[i] = in.shape[perm[i]]), reshape and copy, slice,
 * constant pad, concatenation, and bilinear resize of NHWC images.
 * Transpose, slice, concatenation, reshape and copy move elements of any
 * size (float32, or qint8 quantized alike in and out); pad and resize are
 * float32.
 */
#include <math.h>
#include <string.h>

#include "xnn_run.h"

/* Copies elements of es bytes of a strided view (shape, strides in
 * elements) of src, in row-major order of the view, to contiguous dst. */
static void gather(uint8_t *dst, const uint8_t *src, size_t es, const size_t *shape,
                   const size_t *strides, size_t rank) {
    if (rank == 0) {
        memcpy(dst, src, es);
        return;
    }
    size_t total = 1;
    for (size_t d = 0; d < rank; d++) total *= shape[d];
    if (total == 0) return;
    const size_t len = shape[rank - 1], inner = strides[rank - 1];
    size_t coord[XNN_MAX_DIMS] = {0}, off = 0;
    for (size_t done = 0; done < total; done += len, dst += len * es) {
        if (inner == 1) {
            memcpy(dst, src + off * es, len * es);
        } else if (es == sizeof(float)) {
            for (size_t j = 0; j < len; j++) memcpy(dst + j * 4, src + (off + j * inner) * 4, 4);
        } else {
            for (size_t j = 0; j < len; j++) memcpy(dst + j * es, src + (off + j * inner) * es, es);
        }
        for (size_t d = rank - 1; d-- > 0;) {
            off += strides[d];
            if (++coord[d] < shape[d]) break;
            off -= strides[d] * coord[d];
            coord[d] = 0;
        }
    }
}

static void row_major_strides(const size_t *shape, size_t rank, size_t *strides) {
    size_t step = 1;
    for (size_t d = rank; d-- > 0;) {
        strides[d] = step;
        step *= shape[d];
    }
}

/* Bytes of one element of v (float32, or qint8 in quantized graphs). */
static size_t esize(const xnn_value *v) { return xnn_dtype_size(v->dtype); }

/* A transpose, simplified: dims of size 1 dropped and output dims that are
 * also neighbours in the input merged, so a channel shuffle or an NCHW <->
 * NHWC change of any rank becomes a batch of 2-D transposes. Output dim a
 * is the input's innermost (input stride 1) and b the output's innermost;
 * each plane copies A x B elements in TR_TILE x TR_TILE tiles, so the lines
 * a tile reads across input rows are still cached when the next element of
 * each row is read. */
enum { TR_TILE = 32 };

typedef struct transpose_job {
    const uint8_t *src;
    uint8_t *dst;
    size_t es, rank, a, b, a_blocks;
    size_t shape[XNN_MAX_DIMS], istride[XNN_MAX_DIMS], ostride[XNN_MAX_DIMS];
} transpose_job;

/* dst[i * dsa + j] = src[i + j * ssb] for i < na, j < nb (elements of ES
 * bytes; fixed-size memcpy compiles to one load and store). */
#define TRANSPOSE_TILE(ES)                                                                       \
    static void transpose_tile_##ES(uint8_t *dst, size_t dsa, const uint8_t *src, size_t ssb,  \
                                    size_t na, size_t nb) {                                    \
        for (size_t j0 = 0; j0 < nb; j0 += TR_TILE) {                                          \
            const size_t jn = nb - j0 < TR_TILE ? nb - j0 : TR_TILE;                           \
            for (size_t i = 0; i < na; i++) {                                                  \
                uint8_t *d = dst + (i * dsa + j0) * (ES);                                      \
                const uint8_t *s = src + (i + j0 * ssb) * (ES);                                \
                for (size_t j = 0; j < jn; j++) memcpy(d + j * (ES), s + j * ssb * (ES), (ES)); \
            }                                                                                  \
        }                                                                                      \
    }
TRANSPOSE_TILE(1)
TRANSPOSE_TILE(2)
TRANSPOSE_TILE(4)
TRANSPOSE_TILE(8)

static void transpose_tile(uint8_t *dst, size_t dsa, const uint8_t *src, size_t ssb, size_t na,
                           size_t nb, size_t es) {
    switch (es) {
    case 1: transpose_tile_1(dst, dsa, src, ssb, na, nb); return;
    case 2: transpose_tile_2(dst, dsa, src, ssb, na, nb); return;
    case 4: transpose_tile_4(dst, dsa, src, ssb, na, nb); return;
    case 8: transpose_tile_8(dst, dsa, src, ssb, na, nb); return;
    default:
        for (size_t i = 0; i < na; i++)
            for (size_t j = 0; j < nb; j++)
                memcpy(dst + (i * dsa + j) * es, src + (i + j * ssb) * es, es);
    }
}

/* Tasks: (plane, block of TR_TILE rows along a), planes in row-major order
 * of the dims other than a and b. */
static void transpose_blocks(void *ctx, size_t thread, size_t start, size_t count) {
    (void)thread;
    const transpose_job *j = ctx;
    for (size_t t = start; t < start + count; t++) {
        size_t plane = t / j->a_blocks, a0 = (t % j->a_blocks) * TR_TILE;
        size_t ioff = a0 * j->istride[j->a], ooff = a0 * j->ostride[j->a];
        for (size_t d = j->rank; d-- > 0;) {
            if (d == j->a || d == j->b) continue;
            size_t c = plane % j->shape[d];
            plane /= j->shape[d];
            ioff += c * j->istride[d];
            ooff += c * j->ostride[d];
        }
        const size_t na = j->shape[j->a] - a0 < TR_TILE ? j->shape[j->a] - a0 : TR_TILE;
        transpose_tile(j->dst + ooff * j->es, j->ostride[j->a], j->src + ioff * j->es,
                       j->istride[j->b], na, j->shape[j->b], j->es);
    }
}

static ember_status run_transpose(xnn_graph *g, const xnn_node *n) {
    const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
    size_t in_strides[XNN_MAX_DIMS];
    row_major_strides(x->shape, x->rank, in_strides);
    transpose_job j = {.src = x->data, .dst = y->data, .es = esize(x)};
    for (size_t i = 0; i < y->rank; i++) {
        const size_t size = y->shape[i], stride = in_strides[n->p.perm.v[i]];
        if (size == 0) return EMBER_OK;
        if (size == 1) continue;
        if (j.rank > 0 && j.istride[j.rank - 1] == stride * size) {
            j.shape[j.rank - 1] *= size; /* the previous dim continues into this one */
            j.istride[j.rank - 1] = stride;
            continue;
        }
        j.shape[j.rank] = size;
        j.istride[j.rank++] = stride;
    }
    if (j.rank <= 1) { /* the same order: one copy */
        memcpy(y->data, x->data, xr_numel(y) * j.es);
        return EMBER_OK;
    }
    if (j.istride[j.rank - 1] == 1) { /* whole rows move */
        gather(y->data, x->data, j.es, j.shape, j.istride, j.rank);
        return EMBER_OK;
    }
    row_major_strides(j.shape, j.rank, j.ostride);
    j.b = j.rank - 1;
    j.a = 0;
    while (j.istride[j.a] != 1) j.a++; /* the input's innermost dim of size > 1 is here */
    j.a_blocks = (j.shape[j.a] + TR_TILE - 1) / TR_TILE;
    const size_t planes = xr_numel(y) / (j.shape[j.a] * j.shape[j.b]);
    xr_parallel(g, ember_work_mul(xr_numel(y), 2 * j.es), transpose_blocks, &j,
                planes * j.a_blocks, 1);
    return EMBER_OK;
}

static ember_status run_slice(xnn_graph *g, const xnn_node *n) {
    const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
    size_t strides[XNN_MAX_DIMS], start = 0;
    row_major_strides(x->shape, x->rank, strides);
    for (size_t d = 0; d < x->rank; d++) {
        size_t begin = n->p.slice.offsets[d];
        start += (begin < x->shape[d] ? begin : x->shape[d]) * strides[d];
    }
    if (xr_numel(y) > 0)
        gather(y->data, (const uint8_t *)x->data + start * esize(x), esize(x), y->shape, strides,
               y->rank);
    return EMBER_OK;
}

static ember_status run_pad(xnn_graph *g, const xnn_node *n) {
    const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
    float *out = xr_f(y);
    const size_t total = xr_numel(y), count = xr_numel(x);
    for (size_t i = 0; i < total; i++) out[i] = n->p.pad.value;
    if (count == 0) return EMBER_OK;
    /* the input lands at offset sum(pre[d] * out_stride[d]), row by row */
    size_t ostrides[XNN_MAX_DIMS], base = 0;
    row_major_strides(y->shape, y->rank, ostrides);
    for (size_t d = 0; d < y->rank; d++) base += n->p.pad.pre[d] * ostrides[d];
    if (x->rank == 0) {
        out[base] = xr_f(x)[0];
        return EMBER_OK;
    }
    const size_t len = x->shape[x->rank - 1];
    const float *in = xr_f(x);
    size_t coord[XNN_MAX_DIMS] = {0}, off = base;
    for (size_t done = 0; done < count; done += len) {
        memcpy(out + off, in + done, len * sizeof(float));
        for (size_t d = x->rank - 1; d-- > 0;) {
            off += ostrides[d];
            if (++coord[d] < x->shape[d]) break;
            off -= ostrides[d] * coord[d];
            coord[d] = 0;
        }
    }
    return EMBER_OK;
}

static ember_status run_concat(xnn_graph *g, const xnn_node *n) {
    const xnn_value *y = xr_out(g, n, 0);
    const uint32_t axis = n->p.axis;
    size_t outer = 1, inner = 1;
    for (uint32_t d = 0; d < axis; d++) outer *= y->shape[d];
    for (uint32_t d = axis + 1; d < y->rank; d++) inner *= y->shape[d];
    uint8_t *out = y->data;
    const size_t es = esize(y), row = y->shape[axis] * inner * es;
    size_t at = 0;
    for (uint32_t k = 0; k < n->nin; k++) {
        const xnn_value *x = xr_in(g, n, (int)k);
        const size_t block = x->shape[axis] * inner * es;
        for (size_t o = 0; o < outer; o++)
            memcpy(out + o * row + at, (const uint8_t *)x->data + o * block, block);
        at += block;
    }
    return EMBER_OK;
}

/* Source coordinate of output index i along an axis of in -> out. */
static float resize_src(size_t i, size_t in, size_t out, uint32_t flags) {
    if (flags & XNN_FLAG_ALIGN_CORNERS) {
        float scale = out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
        float s = (float)i * scale;
        return s < (float)(in - 1) ? s : (float)(in - 1);
    }
    float scale = (float)in / (float)out;
    float s = (flags & XNN_FLAG_TENSORFLOW_LEGACY) ? (float)i * scale
                                                   : ((float)i + 0.5f) * scale - 0.5f;
    s = s > 0.0f ? s : 0.0f;
    return s < (float)(in - 1) ? s : (float)(in - 1);
}

static ember_status run_resize(xnn_graph *g, const xnn_node *n) {
    const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
    const size_t b = x->shape[0], h = x->shape[1], w = x->shape[2], c = x->shape[3];
    const size_t oh = y->shape[1], ow = y->shape[2];
    const float *in = xr_f(x);
    float *out = xr_f(y);
    if (h == 0 || w == 0) return EMBER_OK;
    for (size_t bi = 0; bi < b; bi++)
        for (size_t oy = 0; oy < oh; oy++) {
            float sy = resize_src(oy, h, oh, n->flags);
            size_t y0 = (size_t)sy, y1 = y0 + 1 < h ? y0 + 1 : h - 1;
            float ay = sy - (float)y0;
            for (size_t ox = 0; ox < ow; ox++) {
                float sx = resize_src(ox, w, ow, n->flags);
                size_t x0 = (size_t)sx, x1 = x0 + 1 < w ? x0 + 1 : w - 1;
                float ax = sx - (float)x0;
                const float *tl = in + ((bi * h + y0) * w + x0) * c, *tr = in + ((bi * h + y0) * w + x1) * c;
                const float *bl = in + ((bi * h + y1) * w + x0) * c, *br = in + ((bi * h + y1) * w + x1) * c;
                float *o = out + ((bi * oh + oy) * ow + ox) * c;
                for (size_t ch = 0; ch < c; ch++) {
                    float top = tl[ch] + ax * (tr[ch] - tl[ch]);
                    float bot = bl[ch] + ax * (br[ch] - bl[ch]);
                    o[ch] = top + ay * (bot - top);
                }
            }
        }
    return EMBER_OK;
}

ember_status xnn_run_layout(xnn_graph *g, uint32_t ni) {
    const xnn_node *n = &g->nodes[ni];
    switch (n->type) {
    case XNN_NODE_StaticTranspose: return run_transpose(g, n);
    case XNN_NODE_StaticSlice: return run_slice(g, n);
    case XNN_NODE_StaticConstantPad: return run_pad(g, n);
    case XNN_NODE_Concatenate2: case XNN_NODE_Concatenate3: case XNN_NODE_Concatenate4:
    case XNN_NODE_Concatenate5:
        return run_concat(g, n);
    case XNN_NODE_StaticResizeBilinear2D: return run_resize(g, n);
    default: { /* reshape, copy: the same elements in the same order */
        const xnn_value *x = xr_in(g, n, 0), *y = xr_out(g, n, 0);
        const size_t bytes = xr_numel(y) * esize(y); /* checked by xnn_shape.c */
        if (y->data != x->data && bytes > 0) memmove(y->data, x->data, bytes);
        return EMBER_OK;
    }
    }
}
