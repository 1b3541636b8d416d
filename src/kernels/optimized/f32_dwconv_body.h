/*
 * f32_dwconv_body.h — the kernel of f32_dwconv.h, written once on the SIMD
 * layer. A f32_dwconv_<isa>.c includes its simd_<isa>.h and then this
 * file, which defines that level's table eko_f32_dwconv_<isa>.
 *
 * Output pixels whose every tap lies inside the row (the interior) take a
 * path without bounds checks: a 3x3 kernel keeps its weights in registers
 * across a run of pixels (interior_3x3); other sizes, and 3x3 rows at the
 * padding, keep a run of pixels' accumulators in registers instead
 * (run_block), for every kernel size, stride and dilation. Edge
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
EKO_BODY void pixel_checked(
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
 * 1 input of 16 registers). KH and KW are the kernel's size when the
 * caller names it (3 or 5: the tap loops unroll), 0 to read it from g. */
EKO_BODY void run_block(
    const size_t N, const size_t KH, const size_t KW, const eko_dwconv_geom *g,
    const float *const *rows, const float *w, const float *bias, eko_v lo, eko_v hi, size_t ox,
    size_t c0, float *out) {
    const size_t c = g->c, step = g->sw * c, dx = g->dw * c;
    const size_t kh = KH != 0 ? KH : g->kh, kw = KW != 0 ? KW : g->kw;
    const size_t at = (ox * g->sw - g->pl) * c + c0;
    eko_v acc[RUN];
    const eko_v b = bias != NULL ? eko_v_load(bias + c0) : eko_v_set1(0.0f);
    EKO_UNROLL
    for (size_t p = 0; p < N; p++) acc[p] = b;
    EKO_UNROLL
    for (size_t ky = 0; ky < kh; ky++) {
        if (rows[ky] == NULL) continue;
        const float *in = rows[ky] + at, *tap = w + ky * kw * c + c0;
        EKO_UNROLL
        for (size_t kx = 0; kx < kw; kx++) {
            const eko_v k = eko_v_load(tap + kx * c);
            EKO_UNROLL
            for (size_t p = 0; p < N; p++)
                acc[p] = eko_v_fma(eko_v_load(in + kx * dx + p * step), k, acc[p]);
        }
    }
    EKO_UNROLL
    for (size_t p = 0; p < N; p++) eko_v_store(out + (ox + p) * c + c0, clamp_v(acc[p], lo, hi));
}

/* Interior pixels [ox0, ox1) of a KH x KW kernel (0: g's), whole vectors of
 * channels [0, cv): runs of up to RUN pixels (a shorter last run keeps its
 * accumulators in registers too), channel blocks inside, so the run's
 * inputs stay in L1 across channel blocks. */
EKO_BODY void interior_k(
    const size_t KH, const size_t KW, const eko_dwconv_geom *g, const float *const *rows,
    const float *w, const float *bias, eko_v lo, eko_v hi, size_t ox0, size_t ox1, size_t cv,
    float *out) {
    for (size_t ox = ox0; ox < ox1; ox += RUN) {
        const size_t n = ox1 - ox < RUN ? ox1 - ox : RUN;
        for (size_t c0 = 0; c0 < cv; c0 += V) {
#define EKO_DW_RUN(N) run_block(N, KH, KW, g, rows, w, bias, lo, hi, ox, c0, out); break;
            switch (n) {
            case 1: EKO_DW_RUN(1)
            case 2: EKO_DW_RUN(2)
            case 3: EKO_DW_RUN(3)
            case 4: EKO_DW_RUN(4)
            case 5: EKO_DW_RUN(5)
            case 6: EKO_DW_RUN(6)
            case 7: EKO_DW_RUN(7)
            default: EKO_DW_RUN(RUN)
            }
#undef EKO_DW_RUN
        }
    }
}

/* Interior pixels [ox0, ox1) of a 3x3 kernel whose three rows all exist,
 * whole vectors of channels [0, cv): the nine weight vectors of a channel
 * block stay in registers across a run of pixels (AVX2: 9 weights + 1 bias
 * + 1 accumulator + 1 input = 12 of 16), each pixel's nine taps read
 * through three row pointers (5-11% faster than run_block at 3x3, whose
 * per-tap addressing costs more there). */
static void interior_3x3(const eko_dwconv_geom *g, const float *const *rows, const float *w,
                         const float *bias, eko_v lo, eko_v hi, size_t ox0, size_t ox1,
                         size_t cv, float *out) {
    const size_t c = g->c, step = g->sw * c, dx = g->dw * c;
    for (size_t r0 = ox0; r0 < ox1; r0 += RUN) {
        const size_t r1 = r0 + RUN < ox1 ? r0 + RUN : ox1;
        for (size_t c0 = 0; c0 < cv; c0 += V) {
            eko_v k[9];
            EKO_UNROLL
            for (size_t t = 0; t < 9; t++) k[t] = eko_v_load(w + t * c + c0);
            const eko_v b = bias != NULL ? eko_v_load(bias + c0) : eko_v_set1(0.0f);
            const size_t at = (r0 * g->sw - g->pl) * c + c0;
            const float *i0 = rows[0] + at, *i1 = rows[1] + at, *i2 = rows[2] + at;
            float *o = out + r0 * c + c0;
            for (size_t ox = r0; ox < r1; ox++, i0 += step, i1 += step, i2 += step, o += c) {
                eko_v acc = eko_v_fma(eko_v_load(i0), k[0], b);
                acc = eko_v_fma(eko_v_load(i0 + dx), k[1], acc);
                acc = eko_v_fma(eko_v_load(i0 + 2 * dx), k[2], acc);
                acc = eko_v_fma(eko_v_load(i1), k[3], acc);
                acc = eko_v_fma(eko_v_load(i1 + dx), k[4], acc);
                acc = eko_v_fma(eko_v_load(i1 + 2 * dx), k[5], acc);
                acc = eko_v_fma(eko_v_load(i2), k[6], acc);
                acc = eko_v_fma(eko_v_load(i2 + dx), k[7], acc);
                acc = eko_v_fma(eko_v_load(i2 + 2 * dx), k[8], acc);
                eko_v_store(o, clamp_v(acc, lo, hi));
            }
        }
    }
}

static void interior(const eko_dwconv_geom *g, const float *const *rows, const float *w,
                     const float *bias, eko_v lo, eko_v hi, size_t ox0, size_t ox1, size_t cv,
                     float *out) {
    if (g->kh == 3 && g->kw == 3 && rows[0] != NULL && rows[1] != NULL && rows[2] != NULL)
        interior_3x3(g, rows, w, bias, lo, hi, ox0, ox1, cv, out);
    else if (g->kh == 3 && g->kw == 3)
        interior_k(3, 3, g, rows, w, bias, lo, hi, ox0, ox1, cv, out);
    else if (g->kh == 5 && g->kw == 5)
        interior_k(5, 5, g, rows, w, bias, lo, hi, ox0, ox1, cv, out);
    else
        interior_k(0, 0, g, rows, w, bias, lo, hi, ox0, ox1, cv, out);
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
