/*
 * Statically quantized int8 operators (qs8_ops.h), in plain C.
 */
#include "qs8_ops.h"
#include "qs8_elt.h"

#include <math.h>
#include <string.h>

/* Channels a depthwise or pooling loop keeps in registers / on the stack at a time. */
#define QS8_CHUNK 64

void eko_qs8_range(eko_qs8_params p, float min, float max, int32_t *qmin, int32_t *qmax) {
    float lo = min / p.scale + (float)p.zero_point, hi = max / p.scale + (float)p.zero_point;
    lo = lo > -128.0f ? lo : -128.0f; /* -inf and NaN: the type's end */
    lo = lo < 127.0f ? lo : 127.0f;
    hi = hi < 127.0f ? hi : 127.0f;
    hi = hi > -128.0f ? hi : -128.0f;
    *qmin = (int32_t)lrintf(lo);
    *qmax = (int32_t)lrintf(hi);
}

void eko_qs8_quantize(size_t n, const float *x, int8_t *q, eko_qs8_params p) {
    eko_qs8_elt_active()->quantize(n, x, q, 1.0f / p.scale, p.zero_point);
}

void eko_qs8_dequantize(size_t n, const int8_t *q, float *x, eko_qs8_params p) {
    eko_qs8_elt_active()->dequantize(n, q, x, p.scale, p.zero_point);
}

void eko_qs8_add(size_t n, const int8_t *a, size_t inc_a, eko_qs8_params pa, const int8_t *b,
                 size_t inc_b, eko_qs8_params pb, int8_t *y, eko_qs8_params py, int32_t qmin,
                 int32_t qmax) {
    const float ma = pa.scale / py.scale, mb = pb.scale / py.scale;
    if (inc_a == 1 && inc_b == 1) {
        eko_qs8_elt_active()->add(n, a, ma, pa.zero_point, b, mb, pb.zero_point, y,
                                  py.zero_point, qmin, qmax);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const float v = ma * (float)((int32_t)a[i * inc_a] - pa.zero_point) +
                        mb * (float)((int32_t)b[i * inc_b] - pb.zero_point);
        y[i] = eko_qs8_round(v, py.zero_point, qmin, qmax);
    }
}

void eko_qs8_mul(size_t n, const int8_t *a, size_t inc_a, eko_qs8_params pa, const int8_t *b,
                 size_t inc_b, eko_qs8_params pb, int8_t *y, eko_qs8_params py, int32_t qmin,
                 int32_t qmax) {
    /* the product of two int8 differences is below 2^16: exact in int32 and in float */
    const float m = pa.scale * pb.scale / py.scale;
    const int32_t za = pa.zero_point, zb = pb.zero_point, zy = py.zero_point;
    if (inc_a == 1 && inc_b == 1) {
        eko_qs8_elt_active()->mul(n, a, za, b, zb, m, y, zy, qmin, qmax);
        return;
    }
    for (size_t i = 0; i < n; i++)
        y[i] = eko_qs8_round(
            m * (float)(((int32_t)a[i * inc_a] - za) * ((int32_t)b[i * inc_b] - zb)), zy, qmin,
            qmax);
}

void eko_qs8_maxpool(const eko_qs8_window *win, const int8_t *x, int8_t *y, size_t row0,
                     size_t rows, int32_t qmin, int32_t qmax) {
    const size_t c = win->c;
    for (size_t row = row0; row < row0 + rows; row++) {
        const size_t b = row / win->oh, oy = row % win->oh;
        size_t ky0, ky1, kx0, kx1;
        eko_window_taps(oy, win->sh, win->dh, win->pt, win->h, win->kh, &ky0, &ky1);
        for (size_t ox = 0; ox < win->ow; ox++) {
            int8_t *out = y + (row * win->ow + ox) * c;
            eko_window_taps(ox, win->sw, win->dw, win->pl, win->w, win->kw, &kx0, &kx1);
            for (size_t ch = 0; ch < c; ch++) out[ch] = (int8_t)qmin;
            for (size_t ky = ky0; ky < ky1; ky++) {
                const size_t iy = oy * win->sh + ky * win->dh;
                for (size_t kx = kx0; kx < kx1; kx++) {
                    const size_t ix = ox * win->sw + kx * win->dw;
                    const int8_t *in =
                        x + ((b * win->h + iy - win->pt) * win->w + ix - win->pl) * c;
                    for (size_t ch = 0; ch < c; ch++) out[ch] = in[ch] > out[ch] ? in[ch] : out[ch];
                }
            }
            for (size_t ch = 0; ch < c; ch++) out[ch] = out[ch] < qmax ? out[ch] : (int8_t)qmax;
        }
    }
}

void eko_qs8_global_avgpool(size_t images, size_t hw, size_t c, const int8_t *x,
                            eko_qs8_params px, int8_t *y, eko_qs8_params py, int32_t qmin,
                            int32_t qmax) {
    const float mult = hw > 0 ? px.scale / ((float)hw * py.scale) : 0.0f;
    const int32_t bias = -(int32_t)hw * px.zero_point;
    for (size_t img = 0; img < images; img++)
        for (size_t c0 = 0; c0 < c; c0 += QS8_CHUNK) {
            const size_t cn = c - c0 < QS8_CHUNK ? c - c0 : QS8_CHUNK;
            int32_t acc[QS8_CHUNK];
            for (size_t ch = 0; ch < cn; ch++) acc[ch] = bias;
            const int8_t *in = x + img * hw * c + c0;
            for (size_t p = 0; p < hw; p++, in += c)
                for (size_t ch = 0; ch < cn; ch++) acc[ch] += in[ch];
            /* the zero point is added before rounding, as XNNPACK's mean
             * does: a mean of 4 pixels lands on ties (x.5) often, and an odd
             * zero point then decides which way they round */
            for (size_t ch = 0; ch < cn; ch++)
                y[img * c + c0 + ch] =
                    eko_qs8_round((float)acc[ch] * mult + (float)py.zero_point, 0, qmin, qmax);
        }
}
