/*
 * f32_gemv_body.h — the kernels of f32_gemv.h, written once on the SIMD
 * layer. A f32_gemv_<isa>.c includes its simd_<isa>.h and then this file,
 * which defines that level's table eko_f32_gemv_<isa>.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_F32_GEMV_BODY_H
#define EMBER_KERNELS_OPTIMIZED_F32_GEMV_BODY_H

#include "f32_gemv.h"
#include "gemm.h" /* EKO_UNROLL */

#define V EKO_VLEN
#define EKO_GEMV_CAT2(a, b) a##_##b
#define EKO_GEMV_CAT(a, b) EKO_GEMV_CAT2(a, b)

/*
 * rows: four rows of w at a time, MR (1 or 2) rows of x against them:
 * 4 * MR independent sums of V lanes (AVX2, MR = 2: 8 sums + 4 weight
 * vectors + 1 x vector = 13 of 16 registers), one horizontal sum each at
 * the end. The four weight rows stream side by side, each front to back;
 * rows of x beyond the first pair read the same weights again from cache.
 */
static inline __attribute__((always_inline)) void dot_block(const size_t MR, size_t k,
                                                            const float *x, size_t ldx,
                                                            const float *const *wr, float *sums) {
    eko_v acc[2][4];
    EKO_UNROLL
    for (size_t m = 0; m < MR; m++)
        for (size_t r = 0; r < 4; r++) acc[m][r] = eko_v_set1(0.0f);
    size_t i = 0;
    for (; i + V <= k; i += V) {
        const eko_v w0 = eko_v_load(wr[0] + i), w1 = eko_v_load(wr[1] + i);
        const eko_v w2 = eko_v_load(wr[2] + i), w3 = eko_v_load(wr[3] + i);
        EKO_UNROLL
        for (size_t m = 0; m < MR; m++) {
            const eko_v xv = eko_v_load(x + m * ldx + i);
            acc[m][0] = eko_v_fma(xv, w0, acc[m][0]);
            acc[m][1] = eko_v_fma(xv, w1, acc[m][1]);
            acc[m][2] = eko_v_fma(xv, w2, acc[m][2]);
            acc[m][3] = eko_v_fma(xv, w3, acc[m][3]);
        }
    }
    if (i < k) { /* spare lanes read as 0 */
        const size_t r = k - i;
        const eko_v w0 = eko_v_load_part(wr[0] + i, r, 0.0f), w1 = eko_v_load_part(wr[1] + i, r, 0.0f);
        const eko_v w2 = eko_v_load_part(wr[2] + i, r, 0.0f), w3 = eko_v_load_part(wr[3] + i, r, 0.0f);
        EKO_UNROLL
        for (size_t m = 0; m < MR; m++) {
            const eko_v xv = eko_v_load_part(x + m * ldx + i, r, 0.0f);
            acc[m][0] = eko_v_fma(xv, w0, acc[m][0]);
            acc[m][1] = eko_v_fma(xv, w1, acc[m][1]);
            acc[m][2] = eko_v_fma(xv, w2, acc[m][2]);
            acc[m][3] = eko_v_fma(xv, w3, acc[m][3]);
        }
    }
    EKO_UNROLL
    for (size_t m = 0; m < MR; m++)
        for (size_t r = 0; r < 4; r++) sums[m * 4 + r] = eko_v_hsum(acc[m][r]);
}

static void gemv_rows(size_t mr, size_t n, size_t k, const float *x, size_t ldx, const float *w,
                      size_t ldw, const float *bias, float *y, size_t ldy) {
    for (size_t j = 0; j < n; j += 4) {
        const size_t nw = n - j < 4 ? n - j : 4;
        /* a group of fewer than four rows repeats its last row (results dropped) */
        const float *wr[4];
        for (size_t r = 0; r < 4; r++) wr[r] = w + (j + (r < nw ? r : nw - 1)) * ldw;
        for (size_t m = 0; m < mr; m += 2) {
            float sums[8];
            if (mr - m >= 2)
                dot_block(2, k, x + m * ldx, ldx, wr, sums);
            else
                dot_block(1, k, x + m * ldx, ldx, wr, sums);
            const size_t rows = mr - m >= 2 ? 2 : 1;
            for (size_t q = 0; q < rows; q++)
                for (size_t r = 0; r < nw; r++)
                    y[(m + q) * ldy + j + r] = sums[q * 4 + r] + (bias != NULL ? bias[j + r] : 0.0f);
        }
    }
}

/*
 * cols: y starts as the bias, then each group of four rows of w (k to k +
 * 3) is added in one pass over the columns: four weight vectors loaded,
 * and for every row of x, y += the four products (its x values broadcast
 * once per group). y stays in cache (the caller passes blocks of columns);
 * w is read once, row by row, front to back.
 */
static inline __attribute__((always_inline)) void cols_body(const size_t MR, size_t n, size_t k,
                                                            const float *x, size_t ldx,
                                                            const float *w, size_t ldw,
                                                            const float *bias, float *y,
                                                            size_t ldy) {
    const size_t nv = n - n % V, tail = n % V;
    EKO_UNROLL
    for (size_t m = 0; m < MR; m++) {
        float *ym = y + m * ldy;
        for (size_t j = 0; j < n; j++) ym[j] = bias != NULL ? bias[j] : 0.0f;
    }
    size_t kk = 0;
    for (; kk + 4 <= k; kk += 4) {
        const float *w0 = w + kk * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
        eko_v xb[EKO_GEMV_MAX_ROWS][4];
        EKO_UNROLL
        for (size_t m = 0; m < MR; m++)
            for (size_t q = 0; q < 4; q++) xb[m][q] = eko_v_set1(x[m * ldx + kk + q]);
        for (size_t j = 0; j < nv; j += V) {
            const eko_v b0 = eko_v_load(w0 + j), b1 = eko_v_load(w1 + j);
            const eko_v b2 = eko_v_load(w2 + j), b3 = eko_v_load(w3 + j);
            EKO_UNROLL
            for (size_t m = 0; m < MR; m++) {
                float *ym = y + m * ldy + j;
                eko_v acc = eko_v_fma(xb[m][0], b0, eko_v_load(ym));
                acc = eko_v_fma(xb[m][1], b1, acc);
                acc = eko_v_fma(xb[m][2], b2, acc);
                eko_v_store(ym, eko_v_fma(xb[m][3], b3, acc));
            }
        }
        if (tail != 0) {
            const eko_v b0 = eko_v_load_part(w0 + nv, tail, 0.0f);
            const eko_v b1 = eko_v_load_part(w1 + nv, tail, 0.0f);
            const eko_v b2 = eko_v_load_part(w2 + nv, tail, 0.0f);
            const eko_v b3 = eko_v_load_part(w3 + nv, tail, 0.0f);
            EKO_UNROLL
            for (size_t m = 0; m < MR; m++) {
                float *ym = y + m * ldy + nv;
                eko_v acc = eko_v_fma(xb[m][0], b0, eko_v_load_part(ym, tail, 0.0f));
                acc = eko_v_fma(xb[m][1], b1, acc);
                acc = eko_v_fma(xb[m][2], b2, acc);
                eko_v_store_part(ym, eko_v_fma(xb[m][3], b3, acc), tail);
            }
        }
    }
    for (; kk < k; kk++) {
        const float *w0 = w + kk * ldw;
        EKO_UNROLL
        for (size_t m = 0; m < MR; m++) {
            const eko_v xv = eko_v_set1(x[m * ldx + kk]);
            float *ym = y + m * ldy;
            size_t j = 0;
            for (; j < nv; j += V) eko_v_store(ym + j, eko_v_fma(xv, eko_v_load(w0 + j), eko_v_load(ym + j)));
            if (tail != 0)
                eko_v_store_part(ym + j,
                                 eko_v_fma(xv, eko_v_load_part(w0 + j, tail, 0.0f),
                                           eko_v_load_part(ym + j, tail, 0.0f)),
                                 tail);
        }
    }
}

static void gemv_cols(size_t mr, size_t n, size_t k, const float *x, size_t ldx, const float *w,
                      size_t ldw, const float *bias, float *y, size_t ldy) {
    switch (mr) {
    case 0: break;
    case 1: cols_body(1, n, k, x, ldx, w, ldw, bias, y, ldy); break;
    case 2: cols_body(2, n, k, x, ldx, w, ldw, bias, y, ldy); break;
    case 3: cols_body(3, n, k, x, ldx, w, ldw, bias, y, ldy); break;
    default: cols_body(4, n, k, x, ldx, w, ldw, bias, y, ldy); break;
    }
}

const eko_f32_gemv EKO_GEMV_CAT(eko_f32_gemv, EKO_SIMD_ISA) = {
    .isa = EKO_SIMD_ISA_ID,
    .rows = gemv_rows,
    .cols = gemv_cols,
};

#undef V

#endif /* EMBER_KERNELS_OPTIMIZED_F32_GEMV_BODY_H */
