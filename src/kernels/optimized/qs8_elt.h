/*
 * qs8_elt.h — the elementwise loops of the statically quantized int8
 * operators (qs8_ops.h) on contiguous runs, one table per level: the same
 * portable body (qs8_elt_body.h) compiled with each level's flags, so the
 * compiler's vectors run them (qs8_elt_<isa>.c), picked in config.c. Each
 * level gives the scalar level's results bitwise (the same float steps, no
 * contraction). No allocation; thread-safe.
 *
 *   quantize     q[i] = clamp(rint(x[i] * mult) + zp), NaN: zp
 *   dequantize   x[i] = scale * (q[i] - zp)
 *   add          y[i] = clamp(rint(ma (a[i] - za) + mb (b[i] - zb)) + zy, qmin, qmax)
 *   mul          y[i] = clamp(rint(m (a[i] - za) (b[i] - zb)) + zy, qmin, qmax)
 *   lut          y[i] = table[(uint8_t)x[i]] (256 bytes)
 *
 * A level may replace a loop with its own code (the AVX-512 table lookup:
 * sixteen 16-byte shuffles), tested against the scalar level's.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_QS8_ELT_H
#define EMBER_KERNELS_OPTIMIZED_QS8_ELT_H

#include <stddef.h>
#include <stdint.h>

#include "cpu.h"

typedef struct eko_qs8_elt {
    eko_isa isa;
    void (*quantize)(size_t n, const float *x, int8_t *q, float mult, int32_t zp);
    void (*dequantize)(size_t n, const int8_t *q, float *x, float scale, int32_t zp);
    void (*add)(size_t n, const int8_t *a, float ma, int32_t za, const int8_t *b, float mb,
                int32_t zb, int8_t *y, int32_t zy, int32_t qmin, int32_t qmax);
    void (*mul)(size_t n, const int8_t *a, int32_t za, const int8_t *b, int32_t zb, float m,
                int8_t *y, int32_t zy, int32_t qmin, int32_t qmax);
    void (*lut)(size_t n, const int8_t *x, const int8_t *table, int8_t *y);
} eko_qs8_elt;

/** The table of an instruction set; NULL if this build lacks it. */
const eko_qs8_elt *eko_qs8_elt_for(eko_isa isa);

/** The table of the level in use (never NULL). */
const eko_qs8_elt *eko_qs8_elt_active(void);

extern const eko_qs8_elt eko_qs8_elt_scalar;
extern const eko_qs8_elt eko_qs8_elt_avx2;
extern const eko_qs8_elt eko_qs8_elt_avx512;
extern const eko_qs8_elt eko_qs8_elt_neon;

#endif /* EMBER_KERNELS_OPTIMIZED_QS8_ELT_H */
