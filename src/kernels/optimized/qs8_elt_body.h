/*
 * qs8_elt_body.h — the loops of qs8_elt.h in plain C, included once per
 * level by a file that defines QS8_ELT_TABLE (the table's name) and
 * QS8_ELT_ISA (its eko_isa) and is compiled with the level's flags. Runs go
 * in blocks of a fixed count with restrict pointers, so the compiler
 * vectorizes each block without alias checks. A file may define
 * QS8_ELT_LUT (its own table lookup) before including it.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_QS8_ELT_BODY_H
#define EMBER_KERNELS_OPTIMIZED_QS8_ELT_BODY_H

#include "qs8_elt.h"
#include "qs8_ops.h"

#define QS8_ELT_BLOCK 64

static inline void quant_block(const size_t n, const float *restrict x, int8_t *restrict q,
                               float mult, int32_t zp) {
    for (size_t i = 0; i < n; i++) q[i] = eko_qs8_round(x[i] * mult, zp, -128, 127);
}

static void elt_quantize(size_t n, const float *x, int8_t *q, float mult, int32_t zp) {
    size_t i = 0;
    for (; i + QS8_ELT_BLOCK <= n; i += QS8_ELT_BLOCK)
        quant_block(QS8_ELT_BLOCK, x + i, q + i, mult, zp);
    quant_block(n - i, x + i, q + i, mult, zp);
}

static inline void dequant_block(const size_t n, const int8_t *restrict q, float *restrict x,
                                 float scale, int32_t zp) {
    for (size_t i = 0; i < n; i++) x[i] = scale * (float)((int32_t)q[i] - zp);
}

static void elt_dequantize(size_t n, const int8_t *q, float *x, float scale, int32_t zp) {
    size_t i = 0;
    for (; i + QS8_ELT_BLOCK <= n; i += QS8_ELT_BLOCK)
        dequant_block(QS8_ELT_BLOCK, q + i, x + i, scale, zp);
    dequant_block(n - i, q + i, x + i, scale, zp);
}

static inline void add_block(const size_t n, const int8_t *restrict a, float ma, int32_t za,
                             const int8_t *restrict b, float mb, int32_t zb, int8_t *restrict y,
                             int32_t zy, int32_t qmin, int32_t qmax) {
    for (size_t i = 0; i < n; i++)
        y[i] = eko_qs8_round(ma * (float)((int32_t)a[i] - za) + mb * (float)((int32_t)b[i] - zb),
                             zy, qmin, qmax);
}

static void elt_add(size_t n, const int8_t *a, float ma, int32_t za, const int8_t *b, float mb,
                    int32_t zb, int8_t *y, int32_t zy, int32_t qmin, int32_t qmax) {
    size_t i = 0;
    for (; i + QS8_ELT_BLOCK <= n; i += QS8_ELT_BLOCK)
        add_block(QS8_ELT_BLOCK, a + i, ma, za, b + i, mb, zb, y + i, zy, qmin, qmax);
    add_block(n - i, a + i, ma, za, b + i, mb, zb, y + i, zy, qmin, qmax);
}

/* the product of two int8 differences is below 2^16: exact in int32 and in float */
static inline void mul_block(const size_t n, const int8_t *restrict a, int32_t za,
                             const int8_t *restrict b, int32_t zb, float m, int8_t *restrict y,
                             int32_t zy, int32_t qmin, int32_t qmax) {
    for (size_t i = 0; i < n; i++)
        y[i] = eko_qs8_round(m * (float)(((int32_t)a[i] - za) * ((int32_t)b[i] - zb)), zy, qmin,
                             qmax);
}

static void elt_mul(size_t n, const int8_t *a, int32_t za, const int8_t *b, int32_t zb, float m,
                    int8_t *y, int32_t zy, int32_t qmin, int32_t qmax) {
    size_t i = 0;
    for (; i + QS8_ELT_BLOCK <= n; i += QS8_ELT_BLOCK)
        mul_block(QS8_ELT_BLOCK, a + i, za, b + i, zb, m, y + i, zy, qmin, qmax);
    mul_block(n - i, a + i, za, b + i, zb, m, y + i, zy, qmin, qmax);
}

#ifndef QS8_ELT_LUT
static void elt_lut(size_t n, const int8_t *x, const int8_t *table, int8_t *y) {
    for (size_t i = 0; i < n; i++) y[i] = table[(uint8_t)x[i]];
}
#define QS8_ELT_LUT elt_lut
#endif

const eko_qs8_elt QS8_ELT_TABLE = {QS8_ELT_ISA,    elt_quantize, elt_dequantize, elt_add, elt_mul,
                                   QS8_ELT_LUT};

#endif /* EMBER_KERNELS_OPTIMIZED_QS8_ELT_BODY_H */
