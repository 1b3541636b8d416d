/*
 * qd8_gemm.h micro-kernel in portable C: the body's primitives on arrays
 * (the compiler's baseline vectors, where it finds them).
 */
#include <stdint.h>
#include <string.h>

#include "qd8_gemm.h"

#define QD8_FN eko_qd8_gemm_scalar
#define QD8_X_OFFSET 0

typedef struct qd8_acc {
    int32_t v[EKO_QD8_NR];
} qd8_acc;
typedef struct qd8_w {
    int8_t v[EKO_QD8_BLOCK_BYTES];
} qd8_w;
typedef struct qd8_xv {
    int32_t v[4];
} qd8_xv;
typedef struct qd8_f {
    float v[EKO_QD8_NR];
} qd8_f;

static inline qd8_acc qd8_acc_zero(void) {
    qd8_acc a;
    memset(&a, 0, sizeof a);
    return a;
}

static inline qd8_f qd8_f_zero(void) {
    qd8_f f;
    for (int j = 0; j < EKO_QD8_NR; j++) f.v[j] = 0.0f;
    return f;
}

static inline qd8_w qd8_w_load(const uint8_t *p) {
    qd8_w w;
    memcpy(w.v, p, sizeof w.v);
    return w;
}

static inline void qd8_w_unpack4(const uint8_t *p, qd8_w *lo, qd8_w *hi) {
    for (int i = 0; i < EKO_QD8_BLOCK_BYTES; i++) {
        lo->v[i] = (int8_t)((p[i] & 0x0f) - 8);
        hi->v[i] = (int8_t)((p[i] >> 4) - 8);
    }
}

static inline qd8_xv qd8_x_load(const int8_t *p) {
    qd8_xv x;
    for (int i = 0; i < 4; i++) x.v[i] = p[i];
    return x;
}

/* |x w| <= 2^14 and a slice is at most 2^16 deep: int32 holds the sum. */
static inline qd8_acc qd8_dot(qd8_acc acc, qd8_xv x, qd8_w w) {
    for (int c = 0; c < EKO_QD8_NR; c++)
        acc.v[c] += x.v[0] * w.v[4 * c] + x.v[1] * w.v[4 * c + 1] + x.v[2] * w.v[4 * c + 2] +
                    x.v[3] * w.v[4 * c + 3];
    return acc;
}

static inline qd8_acc qd8_acc_add(qd8_acc a, qd8_acc b) {
    for (int c = 0; c < EKO_QD8_NR; c++) a.v[c] += b.v[c];
    return a;
}

/* |acc|, |zc * isum| < 2^31 (qd8_gemm.h bounds the depth): no overflow */
static inline qd8_acc qd8_acc_zc(qd8_acc a, const uint8_t *isums, int32_t zc) {
    int32_t s[EKO_QD8_NR];
    memcpy(s, isums, sizeof s);
    for (int c = 0; c < EKO_QD8_NR; c++) a.v[c] -= zc * s[c];
    return a;
}

static inline qd8_f qd8_scales_load(const uint8_t *p, bool bf16) {
    qd8_f f;
    for (int c = 0; c < EKO_QD8_NR; c++) {
        if (bf16) {
            const uint32_t bits = (uint32_t)(p[2 * c] | p[2 * c + 1] << 8) << 16;
            memcpy(&f.v[c], &bits, sizeof bits);
        } else {
            memcpy(&f.v[c], p + 4 * c, sizeof f.v[c]);
        }
    }
    return f;
}

static inline qd8_f qd8_f_slice(qd8_f f, qd8_acc acc, qd8_f sc) {
    for (int c = 0; c < EKO_QD8_NR; c++) f.v[c] += (float)acc.v[c] * sc.v[c];
    return f;
}

static inline void qd8_store(float *c, size_t nc, qd8_f f, float zc, float sx, const uint8_t *tail,
                             float min, float max) {
    float ks[EKO_QD8_NR], b[EKO_QD8_NR];
    memcpy(ks, tail, sizeof ks);
    memcpy(b, tail + 64, sizeof b);
    for (size_t j = 0; j < nc; j++) {
        float v = (f.v[j] - zc * ks[j]) * sx + b[j];
        v = v < min ? min : v; /* NaN stays NaN */
        c[j] = v > max ? max : v;
    }
}

#include "qd8_gemm_body.h"
