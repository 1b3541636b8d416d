/*
 * qs8_dwconv.h on AVX-512: 16 channels of int32 sums per vector, channels in
 * the lanes (NHWC), each tap one sign-extending load of 16 input bytes, a
 * 32-bit multiply by the tap's widened weights and an add.
 *
 * The weights of a 16-channel chunk are widened once per output row and
 * stay in registers (windows of up to EKO_DW_TAPS taps; 3x3 and 5x5 are
 * compiled with their tap count fixed, so the taps unroll). The input zero
 * point is folded into the bias: bias - zx * sum_t w[t]. Then a pixel whose
 * window lies inside the input adds x * w over its taps with no
 * subtraction; a pixel on the border adds zx * w for each tap that falls
 * in the padding (padding stands for the zero point), so every output is
 * the same int32 sum as the portable body's (exact, wrapping alike), and
 * one requantization: float multiply, clamp, round to nearest even.
 * Windows of more taps run the portable body compiled for this level.
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>

#define QS8_DW_TABLE eko_qs8_dwconv_avx512_body
#define QS8_DW_ISA EKO_ISA_AVX512
#include "qs8_dwconv_body.h"

extern const eko_qs8_dwconv eko_qs8_dwconv_avx512_body;

/* Taps of the widest window kept in registers (or on the stack). */
#define EKO_DW_TAPS 25

static inline __attribute__((always_inline)) __m512i widen16(const int8_t *p, __mmask16 m,
                                                             bool full) {
    if (full) return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p));
}

typedef struct dw_req {
    __m512 mult, flo, fhi;
    __m512i zy;
} dw_req;

/* 16 int32 sums into int8 outputs, as eko_qs8_round. */
static inline __attribute__((always_inline)) void store16(int8_t *out, __m512i acc,
                                                          const dw_req *r, __mmask16 m) {
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), r->mult);
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v); /* NaN: 0 */
    v = _mm512_min_ps(_mm512_max_ps(v, r->flo), r->fhi);
    const __m512i q = _mm512_add_epi32(
        _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), r->zy);
    _mm_mask_storeu_epi8(out, m, _mm512_cvtepi32_epi8(q));
}

/* Output rows [row0, row0 + rows) of one 16-channel chunk at c0 (m: its
 * lanes; full: all 16), with taps == kh * kw (fixed where it is known). */
static inline __attribute__((always_inline)) void dw_chunk_rows(
    const eko_qs8_window *win, const eko_qs8_dw *dw, const int8_t *x, int8_t *y, size_t row,
    size_t c0, __mmask16 m, bool full, const size_t taps, const size_t *off, size_t ox_lo,
    size_t ox_hi) {
    const size_t c = win->c;
    __m512i wv[EKO_DW_TAPS];
    const __m512i zx = _mm512_set1_epi32(dw->x_zero_point);
    __m512i wsum = _mm512_setzero_si512();
    for (size_t t = 0; t < taps; t++) {
        wv[t] = widen16(dw->w + t * c + c0, m, full);
        wsum = _mm512_add_epi32(wsum, wv[t]);
    }
    const __m512i bias = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(m, dw->bias + c0),
                                          _mm512_mullo_epi32(zx, wsum));
    dw_req r;
    r.mult = _mm512_maskz_loadu_ps(m, dw->mult + c0);
    r.flo = _mm512_set1_ps((float)(dw->qmin - dw->y_zero_point));
    r.fhi = _mm512_set1_ps((float)(dw->qmax - dw->y_zero_point));
    r.zy = _mm512_set1_epi32(dw->y_zero_point);

    const size_t b = row / win->oh, oy = row % win->oh;
    size_t ky0, ky1;
    eko_window_taps(oy, win->sh, win->dh, win->pt, win->h, win->kh, &ky0, &ky1);
    const bool rows_in = ky0 == 0 && ky1 == win->kh;
    int8_t *out = y + row * win->ow * c + c0;
    size_t ox = 0;
    for (;;) {
        /* border pixels: [ox, ox_lo), or all of them where rows fall outside */
        const size_t border_end = rows_in ? (ox < ox_lo ? ox_lo : win->ow) : win->ow;
        for (; ox < border_end; ox++) {
            size_t kx0, kx1;
            eko_window_taps(ox, win->sw, win->dw, win->pl, win->w, win->kw, &kx0, &kx1);
            __m512i acc = bias;
            for (size_t ky = 0; ky < win->kh; ky++) {
                const bool yin = ky >= ky0 && ky < ky1;
                const size_t iy = oy * win->sh + ky * win->dh - win->pt; /* if yin */
                for (size_t kx = 0; kx < win->kw; kx++) {
                    const size_t t = ky * win->kw + kx;
                    __m512i xv = zx;
                    if (yin && kx >= kx0 && kx < kx1) {
                        const size_t ix = ox * win->sw + kx * win->dw - win->pl;
                        xv = widen16(x + ((b * win->h + iy) * win->w + ix) * c + c0, m, full);
                    }
                    acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(xv, wv[t]));
                }
            }
            store16(out + ox * c, acc, &r, m);
        }
        if (ox >= win->ow) break;
        /* interior pixels [ox_lo, ox_hi): every tap inside */
        const int8_t *base =
            x + ((b * win->h + oy * win->sh - win->pt) * win->w + ox * win->sw - win->pl) * c + c0;
        const size_t step = win->sw * c;
        for (; ox < ox_hi; ox++, base += step) {
            __m512i acc = bias;
            for (size_t t = 0; t < taps; t++)
                acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(widen16(base + off[t], m, full),
                                                                wv[t]));
            store16(out + ox * c, acc, &r, m);
        }
        ox_lo = win->ow; /* the rest is border */
    }
}

static inline __attribute__((always_inline)) void dw_rows_taps(
    const eko_qs8_window *win, const eko_qs8_dw *dw, const int8_t *x, int8_t *y, size_t row0,
    size_t rows, const size_t taps) {
    const size_t c = win->c, full = c - c % 16;
    size_t off[EKO_DW_TAPS];
    for (size_t ky = 0; ky < win->kh; ky++)
        for (size_t kx = 0; kx < win->kw; kx++)
            off[ky * win->kw + kx] = (ky * win->dh * win->w + kx * win->dw) * c;
    /* pixels whose taps all fall inside along W: ox * sw >= pl and
     * ox * sw - pl + (kw - 1) dw < w */
    const size_t span = (win->kw - 1) * win->dw;
    size_t ox_hi = 0, ox_lo = (win->pl + win->sw - 1) / win->sw;
    if (win->w + win->pl > span) ox_hi = (win->w + win->pl - span + win->sw - 1) / win->sw;
    ox_hi = ox_hi < win->ow ? ox_hi : win->ow;
    ox_lo = ox_lo < ox_hi ? ox_lo : ox_hi;
    for (size_t row = row0; row < row0 + rows; row++) {
        for (size_t c0 = 0; c0 < full; c0 += 16)
            dw_chunk_rows(win, dw, x, y, row, c0, (__mmask16)0xffff, true, taps, off, ox_lo,
                          ox_hi);
        if (full < c)
            dw_chunk_rows(win, dw, x, y, row, full, (__mmask16)((1u << (c - full)) - 1u), false,
                          taps, off, ox_lo, ox_hi);
    }
}

static void dw_rows_3x3(const eko_qs8_window *win, const eko_qs8_dw *dw, const int8_t *x,
                        int8_t *y, size_t row0, size_t rows) {
    dw_rows_taps(win, dw, x, y, row0, rows, 9);
}

static void dw_rows_5x5(const eko_qs8_window *win, const eko_qs8_dw *dw, const int8_t *x,
                        int8_t *y, size_t row0, size_t rows) {
    dw_rows_taps(win, dw, x, y, row0, rows, 25);
}

static void dw_rows_any(const eko_qs8_window *win, const eko_qs8_dw *dw, const int8_t *x,
                        int8_t *y, size_t row0, size_t rows) {
    dw_rows_taps(win, dw, x, y, row0, rows, win->kh * win->kw);
}

static void dw_rows_avx512(const eko_qs8_window *win, const eko_qs8_dw *dw, const int8_t *x,
                           int8_t *y, size_t row0, size_t rows) {
    if (win->c == 0 || win->ow == 0) return;
    if (win->kh == 3 && win->kw == 3)
        dw_rows_3x3(win, dw, x, y, row0, rows);
    else if (win->kh == 5 && win->kw == 5)
        dw_rows_5x5(win, dw, x, y, row0, rows);
    else if (win->kh != 0 && win->kw != 0 && win->kh <= EKO_DW_TAPS &&
             win->kw <= EKO_DW_TAPS / win->kh)
        dw_rows_any(win, dw, x, y, row0, rows);
    else
        eko_qs8_dwconv_avx512_body.run(win, dw, x, y, row0, rows);
}

const eko_qs8_dwconv eko_qs8_dwconv_avx512 = {EKO_ISA_AVX512, dw_rows_avx512};
#else
typedef int eko_no_avx512_qs8_dwconv; /* this build has no AVX512 kernels */
#endif
