/*
 * f32 convolution as an indirect matrix product (conv.h).
 */
#include "conv.h"
#include "tiles.h"

#include <string.h>

#include "core/internal.h"
#include "ember/threadpool.h"

/* The most output pixels of a task (eko_tiles_plan's block). */
#define BLOCK 64

static size_t round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* Scratch: a row of c zeros (the padding's taps, for every group), then one
 * slice per thread: the pointer table of a block (BLOCK x taps). */
static bool slice_bytes(const eko_conv_geom *g, size_t *bytes) {
    size_t taps, n;
    if (ember_mul_overflow(g->kh, g->kw, &taps) || ember_mul_overflow(taps, BLOCK, &n) ||
        ember_mul_overflow(n, sizeof(const float *), &n) || n > SIZE_MAX - 64)
        return false;
    *bytes = round64(n);
    return true;
}

bool eko_f32_conv_scratch_bytes(const eko_conv_geom *g, size_t threads, size_t *bytes) {
    size_t slice, zeros, all;
    if (!slice_bytes(g, &slice) || ember_mul_overflow(g->c, sizeof(float), &zeros) ||
        zeros > SIZE_MAX - 64 || ember_mul_overflow(slice, threads > 0 ? threads : 1, &all))
        return false;
    return !ember_add_overflow(all, round64(zeros), bytes);
}

typedef struct conv_job {
    const eko_f32_gemm_config *cfg;
    const eko_conv_geom *g;
    const float *x, *packed;
    float *y;
    float min, max;
    size_t taps, slice_floats, panel_floats;
    size_t group_panels;   /* panels of one group's product */
    const float *zeros;
    unsigned char *slices; /* per thread, slice bytes apart */
    size_t slice;
    eko_tiles tiles;       /* over the panels of every group, group by group */
} conv_job;

/* The row pointers of pixels [m0, m1), to their first channel (a group's
 * are at an offset the micro-kernel adds), by micro-tiles of mr pixels:
 * tile r (pixels r..r + rows) holds taps x rows pointers, tap t's at
 * [t * rows + i], as the indirect micro-kernel reads them. */
static void make_table(const conv_job *j, size_t m0, size_t m1, const float **tbl) {
    const eko_conv_geom *g = j->g;
    const size_t mr = j->cfg->mr;
    const float *x = j->x;
    /* pixel m0's coordinates, then stepped along the row (no division per
     * pixel: an RGB stem has 3 channels a tap, so this is much of its work) */
    size_t ox = m0 % g->ow, oy = m0 / g->ow % g->oh, b = m0 / (g->ow * g->oh);
    for (size_t r = m0; r < m1; r += mr) {
        const size_t rows = m1 - r < mr ? m1 - r : mr;
        const float **tile = tbl + (r - m0) * j->taps;
        for (size_t i = 0; i < rows; i++) {
            const float *image = x + b * g->h * g->w * g->c;
            const size_t ix0 = ox * g->sw; /* minus pl: checked below */
            const float **at = tile + i;
            for (size_t ky = 0; ky < g->kh; ky++) {
                const size_t iy = oy * g->sh + ky * g->dh; /* minus pt: checked below */
                if (iy < g->pt || iy - g->pt >= g->h) {
                    for (size_t kx = 0; kx < g->kw; kx++, at += rows) *at = j->zeros;
                    continue;
                }
                const float *row = image + (iy - g->pt) * g->w * g->c;
                if (ix0 >= g->pl && ix0 - g->pl + (g->kw - 1) * g->dw < g->w) {
                    /* every tap of the row inside the image (most pixels) */
                    const float *tap = row + (ix0 - g->pl) * g->c;
                    const size_t step = g->dw * g->c;
                    for (size_t kx = 0; kx < g->kw; kx++, at += rows, tap += step) *at = tap;
                    continue;
                }
                for (size_t kx = 0; kx < g->kw; kx++, at += rows) {
                    const size_t ix = ix0 + kx * g->dw;
                    *at = ix >= g->pl && ix - g->pl < g->w ? row + (ix - g->pl) * g->c : j->zeros;
                }
            }
            if (++ox == g->ow) {
                ox = 0;
                if (++oy == g->oh) oy = 0, b++;
            }
        }
    }
}

static void conv_tasks(void *ctx, size_t thread, size_t start, size_t count) {
    const conv_job *j = ctx;
    const eko_conv_geom *g = j->g;
    const size_t mr = j->cfg->mr, nr = j->cfg->nr;
    const float **tbl = (const float **)(void *)(j->slices + thread * j->slice);
    for (size_t t = start; t < start + count; t++) {
        size_t m0, m1, p0, p1;
        eko_tiles_bounds(&j->tiles, t, &m0, &m1, &p0, &p1);
        /* one table for the block, whichever groups the task covers (many
         * narrow groups would otherwise remake it once a group) */
        make_table(j, m0, m1, tbl);
        /* panels outside, pixels inside: a panel comes from memory once per
         * task, the block's input rows stay in cache across panels */
        for (size_t q = p0; q < p1; q++) {
            const size_t grp = q / j->group_panels, p = q % j->group_panels;
            const size_t n0 = p * nr, nc = g->gout - n0 < nr ? g->gout - n0 : nr;
            const float *w = j->packed + grp * j->slice_floats + p * j->panel_floats;
            for (size_t r = m0; r < m1; r += mr) {
                const size_t rows = m1 - r < mr ? m1 - r : mr;
                j->cfg->iukernel(rows, nc, g->gin, j->taps, tbl + (r - m0) * j->taps,
                                 grp * g->gin, w, j->y + r * g->oc + grp * g->gout + n0, g->oc,
                                 j->min, j->max);
            }
        }
    }
}

void eko_f32_conv(const eko_f32_gemm_config *cfg, struct ember_threadpool *pool,
                  const eko_conv_geom *g, const float *x, const float *packed, float *y,
                  float min, float max, void *scratch) {
    conv_job j = {cfg, g, x, packed, y, min, max, g->kh * g->kw, 0, 0, 0, scratch, NULL, 0, {0}};
    const size_t pixels = g->n * g->oh * g->ow;
    if (pixels == 0 || g->gout == 0) return;
    const size_t k = j.taps * g->gin;
    j.panel_floats = (k + 1) * cfg->nr;
    /* sizes were checked by eko_f32_conv_scratch_bytes and the packing */
    eko_f32_packed_size(cfg, g->gout, k, &j.slice_floats);
    slice_bytes(g, &j.slice);
    j.slices = (unsigned char *)scratch + round64(g->c * sizeof(float));
    memset(scratch, 0, g->c * sizeof(float));
    /* multiply-adds: every output times its taps' input channels */
    const size_t threads = ember_parallel_threads(
        pool, ember_work_mul(ember_work_mul(pixels, g->oc), k));
    j.group_panels = g->gout / cfg->nr + (g->gout % cfg->nr != 0);
    j.tiles = eko_tiles_plan(pixels, j.group_panels * g->groups, threads);
    ember_parallel_1d_on(pool, threads, conv_tasks, &j, j.tiles.count, 1);
}
