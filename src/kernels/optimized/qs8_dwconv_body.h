/*
 * qs8_dwconv_body.h — the depthwise int8 convolution of qs8_dwconv.h in
 * plain C, included once per level by a file that defines QS8_DW_TABLE
 * (the table's name) and QS8_DW_ISA (its eko_isa) and is compiled with the
 * level's flags. Channels run innermost in chunks of a fixed width, so the
 * compiler keeps a chunk's int32 sums in vector registers.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_QS8_DWCONV_BODY_H
#define EMBER_KERNELS_OPTIMIZED_QS8_DWCONV_BODY_H

#include <string.h>

#include "qs8_dwconv.h"
#include "window.h"

/* Channels of one chunk: 32 int32 sums (4 AVX2 or 2 AVX-512 registers). */
#define QS8_DW_CHUNK 32

/* The int32 sums of n channels into int8 outputs (restrict: the stores
 * alias nothing, so the loop vectorizes without runtime checks). */
static inline void requant(size_t n, const int32_t *restrict acc, const float *restrict mult,
                           int8_t *restrict out, int32_t zy, int32_t qmin, int32_t qmax) {
    for (size_t ch = 0; ch < n; ch++)
        out[ch] = eko_qs8_round((float)acc[ch] * mult[ch], zy, qmin, qmax);
}

/* One output pixel's channels [c0, c0 + cn), taps [ky0, ky1) x [kx0, kx1). */
static inline __attribute__((always_inline)) void dw_chunk(
    const eko_qs8_window *win, const eko_qs8_dw *dw, const int8_t *x, int8_t *out, size_t b,
    size_t oy, size_t ox, size_t ky0, size_t ky1, size_t kx0, size_t kx1, size_t c0,
    const size_t cn) {
    const size_t c = win->c;
    const int32_t zx = dw->x_zero_point;
    int32_t acc[QS8_DW_CHUNK];
    for (size_t ch = 0; ch < cn; ch++) acc[ch] = dw->bias[c0 + ch];
    for (size_t ky = ky0; ky < ky1; ky++) {
        const size_t iy = oy * win->sh + ky * win->dh - win->pt; /* >= 0: from the range */
        for (size_t kx = kx0; kx < kx1; kx++) {
            const size_t ix = ox * win->sw + kx * win->dw - win->pl;
            const int8_t *in = x + ((b * win->h + iy) * win->w + ix) * c + c0;
            const int8_t *wt = dw->w + (ky * win->kw + kx) * c + c0;
            for (size_t ch = 0; ch < cn; ch++)
                acc[ch] += ((int32_t)in[ch] - zx) * (int32_t)wt[ch];
        }
    }
    requant(cn, acc, dw->mult + c0, out + c0, dw->y_zero_point, dw->qmin, dw->qmax);
}

static void dw_rows(const eko_qs8_window *win, const eko_qs8_dw *dw, const int8_t *x, int8_t *y,
                    size_t row0, size_t rows) {
    const size_t c = win->c, full = c - c % QS8_DW_CHUNK;
    for (size_t row = row0; row < row0 + rows; row++) {
        const size_t b = row / win->oh, oy = row % win->oh;
        size_t ky0, ky1, kx0, kx1;
        eko_window_taps(oy, win->sh, win->dh, win->pt, win->h, win->kh, &ky0, &ky1);
        for (size_t ox = 0; ox < win->ow; ox++) {
            int8_t *out = y + (row * win->ow + ox) * c;
            eko_window_taps(ox, win->sw, win->dw, win->pl, win->w, win->kw, &kx0, &kx1);
            for (size_t c0 = 0; c0 < full; c0 += QS8_DW_CHUNK)
                dw_chunk(win, dw, x, out, b, oy, ox, ky0, ky1, kx0, kx1, c0, QS8_DW_CHUNK);
            if (full < c)
                dw_chunk(win, dw, x, out, b, oy, ox, ky0, ky1, kx0, kx1, full, c - full);
        }
    }
}

const eko_qs8_dwconv QS8_DW_TABLE = {QS8_DW_ISA, dw_rows};

#endif /* EMBER_KERNELS_OPTIMIZED_QS8_DWCONV_BODY_H */
