/*
 * f32_dwconv_body.h — the kernel of f32_dwconv.h, written once on the SIMD
 * layer. A f32_dwconv_<isa>.c includes its simd_<isa>.h and then this
 * file, which defines that level's table eko_f32_dwconv_<isa>.
 *
 * Output pixels whose every tap lies inside the row (the interior) take a
 * path without bounds checks that keeps a run of pixels' accumulators in
 * registers (run_block), for every kernel size, stride and dilation. Edge
 * pixels find the taps inside the row once, then loop over those only.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_F32_DWCONV_BODY_H
#define EMBER_KERNELS_OPTIMIZED_F32_DWCONV_BODY_H

#include <stdbool.h>

#include "f32_dwconv.h"
#include "gemm.h" /* EKO_UNROLL */
#include "window.h"

#define V EKO_VLEN
#define EKO_DW_CAT2(a, b) a##_##b
#define EKO_DW_CAT(a, b) EKO_DW_CAT2(a, b)

/* Pixels of a run of the interior: its accumulators in registers. */
#define RUN 8

/* min(max(v, lo), hi) with NaN passing through (eko_v_max and eko_v_min
 * return their second operand when either is NaN). */
static inline eko_v clamp_v(eko_v v, eko_v lo, eko_v hi) {
    return eko_v_min(hi, eko_v_max(lo, v));
}

/* Channels [c0, c0 + n) of pixel ox (n <= V), taps kx in [kx0, kx1) only:
 * those inside the row (eko_window_taps). */
static inline __attribute__((always_inline)) void pixel_checked(
    const eko_dwconv_geom *g, const float *const *rows, const float *w, const float *bias,
    eko_v lo, eko_v hi, size_t ox, size_t kx0, size_t kx1, size_t c0, size_t n, float *out) {
    const bool whole = n == V; /* a whole vector: plain loads, no masks */
    eko_v acc = bias == NULL ? eko_v_set1(0.0f)
                : whole      ? eko_v_load(bias + c0)
                             : eko_v_load_part(bias + c0, n, 0.0f);
    for (size_t ky = 0; ky < g->kh; ky++) {
        if (rows[ky] == NULL) continue;
        for (size_t kx = kx0; kx < kx1; kx++) {
            const float *in = rows[ky] + (ox * g->sw + kx * g->dw - g->pl) * g->c + c0;
            const float *tap = w + (ky * g->kw + kx) * g->c + c0;
            acc = whole ? eko_v_fma(eko_v_load(in), eko_v_load(tap), acc)
                        : eko_v_fma(eko_v_load_part(in, n, 0.0f), eko_v_load_part(tap, n, 0.0f),
                                    acc);
        }
    }
    if (whole)
        eko_v_store(out + ox * g->c + c0, clamp_v(acc, lo, hi));
    else
        eko_v_store_part(out + ox * g->c + c0, clamp_v(acc, lo, hi), n);
}

/* Every channel of pixel ox, its taps inside the row found once. */
static void pixel_edge(const eko_dwconv_geom *g, const float *const *rows, const float *w,
                       const float *bias, eko_v lo, eko_v hi, size_t ox, float *out) {
    size_t kx0, kx1, c0 = 0;
    eko_window_taps(ox, g->sw, g->dw, g->pl, g->w, g->kw, &kx0, &kx1);
    for (; c0 + V <= g->c; c0 += V)
        pixel_checked(g, rows, w, bias, lo, hi, ox, kx0, kx1, c0, V, out);
    if (c0 < g->c) pixel_checked(g, rows, w, bias, lo, hi, ox, kx0, kx1, c0, g->c - c0, out);
}

/* N pixels from ox (all interior), channels [c0, c0 + V): N accumulators
 * stay in registers across the taps, each tap's weight vector is loaded
 * once for the N pixels, so a multiply-add costs about one load (of its
 * input) for any kernel size (AVX2 at N = 8: 8 accumulators + 1 weight +
 * 1 input of 16 registers). */
static inline __attribute__((always_inline)) void run_block(
    const size_t N, const eko_dwconv_geom *g, const float *const *rows, const float *w,
    const float *bias, eko_v lo, eko_v hi, size_t ox, size_t c0, float *out) {
    const size_t c = g->c, step = g->sw * c, dx = g->dw * c;
    const size_t at = (ox * g->sw - g->pl) * c + c0;
    eko_v acc[RUN];
    const eko_v b = bias != NULL ? eko_v_load(bias + c0) : eko_v_set1(0.0f);
    EKO_UNROLL
    for (size_t p = 0; p < N; p++) acc[p] = b;
    for (size_t ky = 0; ky < g->kh; ky++) {
        if (rows[ky] == NULL) continue;
        const float *in = rows[ky] + at, *tap = w + ky * g->kw * c + c0;
        for (size_t kx = 0; kx < g->kw; kx++, in += dx, tap += c) {
            const eko_v k = eko_v_load(tap);
            EKO_UNROLL
            for (size_t p = 0; p < N; p++) acc[p] = eko_v_fma(eko_v_load(in + p * step), k, acc[p]);
        }
    }
    EKO_UNROLL
    for (size_t p = 0; p < N; p++) eko_v_store(out + (ox + p) * c + c0, clamp_v(acc[p], lo, hi));
}

/* Interior pixels [ox0, ox1), any kernel size, whole vectors of channels
 * [0, cv): runs of RUN pixels, channel blocks inside, so the run's inputs
 * stay in L1 across channel blocks. */
static void interior(const eko_dwconv_geom *g, const float *const *rows, const float *w,
                     const float *bias, eko_v lo, eko_v hi, size_t ox0, size_t ox1, size_t cv,
                     float *out) {
    size_t ox = ox0;
    for (; ox + RUN <= ox1; ox += RUN)
        for (size_t c0 = 0; c0 < cv; c0 += V) run_block(RUN, g, rows, w, bias, lo, hi, ox, c0, out);
    for (; ox < ox1; ox++)
        for (size_t c0 = 0; c0 < cv; c0 += V) run_block(1, g, rows, w, bias, lo, hi, ox, c0, out);
}

static void dw_row(const eko_dwconv_geom *g, const float *const *rows, const float *w,
                   const float *bias, float min, float max, float *out) {
    const eko_v lo = eko_v_set1(min), hi = eko_v_set1(max);
    /* interior: ox * sw >= pl and ox * sw + (kw - 1) * dw - pl < w */
    const size_t reach = (g->kw - 1) * g->dw;
    size_t ox0 = (g->pl + g->sw - 1) / g->sw, ox1 = 0;
    if (g->w + g->pl > reach) {
        ox1 = (g->w + g->pl - reach - 1) / g->sw + 1;
        if (ox1 > g->ow) ox1 = g->ow;
    }
    if (ox0 > ox1) ox0 = ox1;
    const size_t cv = g->c - g->c % V;
    for (size_t ox = 0; ox < ox0; ox++) pixel_edge(g, rows, w, bias, lo, hi, ox, out);
    interior(g, rows, w, bias, lo, hi, ox0, ox1, cv, out);
    if (cv < g->c)
        for (size_t ox = ox0; ox < ox1; ox++)
            pixel_checked(g, rows, w, bias, lo, hi, ox, 0, g->kw, cv, g->c - cv, out);
    for (size_t ox = ox1; ox < g->ow; ox++) pixel_edge(g, rows, w, bias, lo, hi, ox, out);
}

const eko_f32_dwconv EKO_DW_CAT(eko_f32_dwconv, EKO_SIMD_ISA) = {EKO_SIMD_ISA_ID, dw_row};

#undef RUN
#undef V
#endif /* EMBER_KERNELS_OPTIMIZED_F32_DWCONV_BODY_H */
