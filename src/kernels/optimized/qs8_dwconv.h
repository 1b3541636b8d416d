/*
 * qs8_dwconv.h — depthwise 2-d convolution of statically quantized int8
 * NHWC images (channel multiplier 1), int32 sums, requantized as
 * qs8_ops.h says:
 *
 *   y[b][oy][ox][c] = clamp(rint(mult[c] * (bias[c] + sum_{ky, kx}
 *                     (x[b][iy][ix][c] - x_zero_point) * w[ky][kx][c])) + y_zero_point)
 *   with iy = oy * sh + ky * dh - pt, ix = ox * sw + kx * dw - pl
 *
 * Padding stands for the input zero point, so its taps add nothing and are
 * skipped. One table per level, the same portable body compiled with each
 * level's flags (qs8_dwconv_<isa>.c: the compiler's vectors over channels),
 * picked in config.c. A call runs output rows [row0, row0 + rows) (row =
 * image * oh + oy) on the calling thread; no allocation; thread-safe.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_QS8_DWCONV_H
#define EMBER_KERNELS_OPTIMIZED_QS8_DWCONV_H

#include <stddef.h>
#include <stdint.h>

#include "cpu.h"
#include "qs8_ops.h"

typedef void (*eko_qs8_dwconv_fn)(const eko_qs8_window *win, const eko_qs8_dw *dw,
                                  const int8_t *x, int8_t *y, size_t row0, size_t rows);

typedef struct eko_qs8_dwconv {
    eko_isa isa;
    eko_qs8_dwconv_fn run;
} eko_qs8_dwconv;

/** The table of an instruction set; NULL if this build lacks it. */
const eko_qs8_dwconv *eko_qs8_dwconv_for(eko_isa isa);

/** The table of the level in use (never NULL). */
const eko_qs8_dwconv *eko_qs8_dwconv_active(void);

extern const eko_qs8_dwconv eko_qs8_dwconv_scalar;
extern const eko_qs8_dwconv eko_qs8_dwconv_avx2;
extern const eko_qs8_dwconv eko_qs8_dwconv_avx512;
extern const eko_qs8_dwconv eko_qs8_dwconv_neon;

#endif /* EMBER_KERNELS_OPTIMIZED_QS8_DWCONV_H */
