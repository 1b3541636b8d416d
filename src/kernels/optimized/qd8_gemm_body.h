/*
 * qd8_gemm_body.h — the micro-kernel of qd8_gemm.h, written once over a
 * few primitives that each qd8_gemm_<isa>.c defines before including it:
 *
 *   QD8_FN                the kernel's name
 *   QD8_MR                rows per call, at most (optional: 4; 8 at most)
 *   QD8_X_OFFSET          what qd8_dot adds to every activation (0, or 128
 *                         where the instruction takes unsigned activations)
 *   qd8_acc               16 int32 sums (one per column of a panel)
 *   qd8_w                 one 64-byte block of int8 weights (16 columns x 4 k)
 *   qd8_xv                4 activations, ready for qd8_dot
 *   qd8_f                 16 floats
 *   qd8_acc_zero()        qd8_f_zero()
 *   qd8_acc_add(a, b)     a + b
 *   qd8_acc_zc(a, isums, zc)   a[c] - zc * isums[c] (int32)
 *   qd8_w_load(p)         a block of int8 weights
 *   qd8_w_unpack4(p, lo, hi)  an int4 block: low nibbles - 8, high nibbles - 8
 *   qd8_x_load(p)         4 activations from p (any alignment)
 *   qd8_dot(acc, xv, w)   acc[c] += sum_i (x[i] + QD8_X_OFFSET) * w[4 c + i]
 *   qd8_scales_load(p, bf16)   a slice's 16 scales (bfloat16 or float) as floats
 *   qd8_f_slice(f, acc, sc)    f[c] += float(acc[c]) * sc[c]
 *   qd8_store(c, nc, f, zc, sx, tail, min, max)
 *                         c[j] = clamp((f[j] - zc * ksum[j]) * sx + bias[j]), j < nc,
 *                         ksum at tail, bias at tail + 64
 *
 * A kernel may also write int8 results (QD8_STORE_Q defined): it defines
 *
 *   qd8_store_q(q, nc, f, zc, sx, tail, min, max)
 *                         q[j] = the value qd8_store writes, rounded to the
 *                         nearest integer, ties to even (min, max within int8)
 *
 * and the body adds QD8_FN_q, the kernel with int8 results (eko_qd8_ukernel_q).
 *
 * A kernel may read int4 weights another way (their range is small enough
 * for products that int8 weights would saturate): it then defines
 * QD8_X_OFFSET4, qd8_xv4, qd8_x_load4 and qd8_dot4 as above, used for int4
 * blocks; otherwise those are the int8 ones.
 *
 * A kernel whose int4 products fit narrower lanes may sum them there for a
 * few blocks before widening them once: it defines
 *
 *   QD8_NARROW4           int4 blocks a narrow sum holds exactly (the kernel
 *                         proves the bound)
 *   qd8_nacc              the narrow sums of a row
 *   qd8_nacc_zero()
 *   qd8_ndot4(s, xv4, w)  s += the products of qd8_dot4, in the narrow lanes
 *   qd8_nacc_widen(acc, s)  acc[c] += the narrow sums of column c
 *
 * and the int4 blocks of a slice go QD8_NARROW4 at a time through them.
 *
 * The int32 sums of a slice stay exact (qd8_gemm.h bounds the depth); the
 * zero point and the offset come out in int32 through the isums (one
 * slice), or at the store through the ksums (groups). Int4 blocks hold two
 * steps of depth, so tiles of up to QD8_TWO_CHAINS4 rows (optional: 4) sum
 * them in two accumulators a row: two chains of dependent products instead
 * of one, which a single row (decode) needs to keep up with memory. A kernel
 * with 16 vector registers sets it lower: its taller tiles would spill the
 * second accumulators, and have chains enough in their rows.
 *
 * A file may include this twice, for a second kernel (QD8_FN redefined) on
 * activations loaded another way: QD8_X_LOAD and QD8_X_LOAD4 name the
 * loads (default qd8_x_load, qd8_x_load4).
 */
#ifndef EMBER_KERNELS_OPTIMIZED_QD8_GEMM_BODY_H
#define EMBER_KERNELS_OPTIMIZED_QD8_GEMM_BODY_H

#include <string.h>

#include "gemm.h" /* EKO_UNROLL */
#include "qd8_gemm.h"

#ifndef QD8_MR
#define QD8_MR 4
#endif
#if QD8_MR > EKO_QD8_MAX_MR
#error "QD8_MR above EKO_QD8_MAX_MR"
#endif

#ifndef QD8_TWO_CHAINS4
#define QD8_TWO_CHAINS4 4
#endif

#ifndef QD8_X_OFFSET4
#define QD8_X_OFFSET4 QD8_X_OFFSET
typedef qd8_xv qd8_xv4;
static inline qd8_xv4 qd8_x_load4(const int8_t *p) { return qd8_x_load(p); }
static inline qd8_acc qd8_dot4(qd8_acc acc, qd8_xv4 x, qd8_w w) { return qd8_dot(acc, x, w); }
#endif

/* A decode step streams each weight matrix once, from memory. The panels
 * lie front to back without a gap (qd8_gemm.h), and besides the hardware
 * prefetchers a tile asks for the panel at least QD8_PREFETCH_BYTES ahead
 * (a whole number of panels): each weight block for its twin there, each
 * group for its line of scales and the tile for its tail (ksums, biases),
 * so every line of the panel is asked for once, in time. With the scales
 * in a run at each panel's end (the former layout), the weights' line took
 * a GPT-2-sized int4 stream of 450 MB on an Intel core from about 65% to
 * 90% of the plain read bandwidth (14 -> 20 GB/s on 2 threads), and whole
 * panels ahead a 1B model's int4 stream on one Zen 4 core from 55% to 70%
 * (bench/kernels/bench_qd8.c, "stream"). With the gapless layout that
 * Zen 4 core reads 85-95% with or without the prefetches.
 * A prefetch never faults, so running past the weights' end is harmless;
 * the address is formed as an integer, not as a pointer past the array. */
#define QD8_PREFETCH_BYTES 16384
static inline void qd8_prefetch(const uint8_t *p, size_t ahead) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch((const void *)((uintptr_t)p + ahead));
#else
    (void)p;
    (void)ahead;
#endif
}

#define QD8_CAT2(a, b) a##_##b
#define QD8_CAT(a, b) QD8_CAT2(a, b)

#endif /* EMBER_KERNELS_OPTIMIZED_QD8_GEMM_BODY_H */

/* ---- once per kernel ---------------------------------------------------- */

#ifndef QD8_X_LOAD
#define QD8_X_LOAD qd8_x_load
#endif
#ifndef QD8_X_LOAD4
#define QD8_X_LOAD4 qd8_x_load4
#endif
#define QD8_TILE QD8_CAT(QD8_FN, tile)

static inline __attribute__((always_inline)) void QD8_TILE(const size_t MR, size_t nc,
                                                           const int8_t *x, size_t ldx,
                                                           const eko_qd8_row *rows,
                                                           const eko_qd8_weights *w,
                                                           const uint8_t *p, float *c, int8_t *q,
                                                           size_t ldc, float min, float max) {
    qd8_f accf[QD8_MR];
    EKO_UNROLL
    for (size_t r = 0; r < MR; r++) accf[r] = qd8_f_zero();
    const uint8_t *panel = p, *line = p;
    const int32_t offset = w->int4 ? QD8_X_OFFSET4 : QD8_X_OFFSET;
    const size_t ahead = w->panel_bytes * (1 + (QD8_PREFETCH_BYTES - 1) / w->panel_bytes);
    for (size_t t = 0; t < 3; t++) qd8_prefetch(panel + w->tail_at + 64 * t, ahead);
    for (size_t s = 0, j = w->group_slices; s < w->slices; s++, j++) {
        if (j == w->group_slices) { /* a group's line of scales, then its slices' blocks */
            qd8_prefetch(p, ahead);
            line = p;
            p += EKO_QD8_BLOCK_BYTES;
            j = 0;
        }
        qd8_acc acc[QD8_MR];
        EKO_UNROLL
        for (size_t r = 0; r < MR; r++) acc[r] = qd8_acc_zero();
        const int8_t *xs = x + s * w->slice_k;
        if (!w->int4) {
            for (size_t b = 0; b < w->slice_blocks; b++, p += EKO_QD8_BLOCK_BYTES) {
                qd8_prefetch(p, ahead);
                const qd8_w wv = qd8_w_load(p);
                EKO_UNROLL
                for (size_t r = 0; r < MR; r++)
                    acc[r] = qd8_dot(acc[r], QD8_X_LOAD(xs + r * ldx + 4 * b), wv);
            }
        } else {
#ifdef QD8_NARROW4
            for (size_t b = 0; b < w->slice_blocks;) {
                const size_t end = w->slice_blocks - b < QD8_NARROW4 ? w->slice_blocks
                                                                     : b + QD8_NARROW4;
                qd8_nacc sum[QD8_MR];
                EKO_UNROLL
                for (size_t r = 0; r < MR; r++) sum[r] = qd8_nacc_zero();
                for (; b < end; b++, p += EKO_QD8_BLOCK_BYTES) {
                    qd8_w lo, hi;
                    qd8_prefetch(p, ahead);
                    qd8_w_unpack4(p, &lo, &hi);
                    EKO_UNROLL
                    for (size_t r = 0; r < MR; r++) {
                        sum[r] = qd8_ndot4(sum[r], QD8_X_LOAD4(xs + r * ldx + 8 * b), lo);
                        sum[r] = qd8_ndot4(sum[r], QD8_X_LOAD4(xs + r * ldx + 8 * b + 4), hi);
                    }
                }
                EKO_UNROLL
                for (size_t r = 0; r < MR; r++) acc[r] = qd8_nacc_widen(acc[r], sum[r]);
            }
#else
            if (MR <= QD8_TWO_CHAINS4) {
                qd8_acc acc2[QD8_MR];
                EKO_UNROLL
                for (size_t r = 0; r < MR; r++) acc2[r] = qd8_acc_zero();
                for (size_t b = 0; b < w->slice_blocks; b++, p += EKO_QD8_BLOCK_BYTES) {
                    qd8_w lo, hi;
                    qd8_prefetch(p, ahead);
                    qd8_w_unpack4(p, &lo, &hi);
                    EKO_UNROLL
                    for (size_t r = 0; r < MR; r++) {
                        acc[r] = qd8_dot4(acc[r], QD8_X_LOAD4(xs + r * ldx + 8 * b), lo);
                        acc2[r] = qd8_dot4(acc2[r], QD8_X_LOAD4(xs + r * ldx + 8 * b + 4), hi);
                    }
                }
                EKO_UNROLL
                for (size_t r = 0; r < MR; r++) acc[r] = qd8_acc_add(acc[r], acc2[r]);
            } else {
                for (size_t b = 0; b < w->slice_blocks; b++, p += EKO_QD8_BLOCK_BYTES) {
                    qd8_w lo, hi;
                    qd8_prefetch(p, ahead);
                    qd8_w_unpack4(p, &lo, &hi);
                    EKO_UNROLL
                    for (size_t r = 0; r < MR; r++) {
                        acc[r] = qd8_dot4(acc[r], QD8_X_LOAD4(xs + r * ldx + 8 * b), lo);
                        acc[r] = qd8_dot4(acc[r], QD8_X_LOAD4(xs + r * ldx + 8 * b + 4), hi);
                    }
                }
            }
#endif
        }
        if (w->slices == 1) /* the zero points (and the offset) exactly */
            EKO_UNROLL
            for (size_t r = 0; r < MR; r++)
                acc[r] = qd8_acc_zc(acc[r], panel + w->tail_at + 128, rows[r].zero_point + offset);
        const qd8_f sc = qd8_scales_load(line + j * w->scale_bytes, w->scales_bf16);
        EKO_UNROLL
        for (size_t r = 0; r < MR; r++) accf[r] = qd8_f_slice(accf[r], acc[r], sc);
    }
    /* with groups, the zero points (and the offset) through the ksums */
#ifdef QD8_STORE_Q
    if (q != NULL) { /* int8 results, rounded here */
        EKO_UNROLL
        for (size_t r = 0; r < MR; r++)
            qd8_store_q(q + r * ldc, nc, accf[r], (float)(rows[r].zero_point + offset),
                        rows[r].scale, panel + w->tail_at, min, max);
        return;
    }
#else
    (void)q;
#endif
    EKO_UNROLL
    for (size_t r = 0; r < MR; r++)
        qd8_store(c + r * ldc, nc, accf[r], (float)(rows[r].zero_point + offset), rows[r].scale,
                  panel + w->tail_at, min, max);
}

/* mr rows (1 to QD8_MR), each count a constant for the tile: float results
 * into c, or int8 ones into q (the other NULL), rows ld apart. */
#define QD8_ROWS QD8_CAT(QD8_FN, rows)
static inline __attribute__((always_inline)) void QD8_ROWS(
    size_t mr, size_t nc, const int8_t *x, size_t ldx, const eko_qd8_row *rows,
    const eko_qd8_weights *w, const uint8_t *panel, float *c, int8_t *q, size_t ld, float min,
    float max) {
    switch (mr) {
#if QD8_MR >= 8
    case 8: QD8_TILE(8, nc, x, ldx, rows, w, panel, c, q, ld, min, max); break;
#endif
#if QD8_MR >= 7
    case 7: QD8_TILE(7, nc, x, ldx, rows, w, panel, c, q, ld, min, max); break;
#endif
#if QD8_MR >= 6
    case 6: QD8_TILE(6, nc, x, ldx, rows, w, panel, c, q, ld, min, max); break;
#endif
#if QD8_MR >= 5
    case 5: QD8_TILE(5, nc, x, ldx, rows, w, panel, c, q, ld, min, max); break;
#endif
#if QD8_MR >= 4
    case 4: QD8_TILE(4, nc, x, ldx, rows, w, panel, c, q, ld, min, max); break;
#endif
#if QD8_MR >= 3
    case 3: QD8_TILE(3, nc, x, ldx, rows, w, panel, c, q, ld, min, max); break;
#endif
#if QD8_MR >= 2
    case 2: QD8_TILE(2, nc, x, ldx, rows, w, panel, c, q, ld, min, max); break;
#endif
    default: QD8_TILE(1, nc, x, ldx, rows, w, panel, c, q, ld, min, max); break;
    }
}

void QD8_FN(size_t mr, size_t nc, const int8_t *x, size_t ldx, const eko_qd8_row *rows,
            const eko_qd8_weights *w, const uint8_t *panel, float *c, size_t ldc, float min,
            float max) {
    QD8_ROWS(mr, nc, x, ldx, rows, w, panel, c, NULL, ldc, min, max);
}

#ifdef QD8_STORE_Q
/* The same with int8 results (eko_qd8_out's q): rows ldq bytes apart. */
void QD8_CAT(QD8_FN, q)(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                        const eko_qd8_row *rows, const eko_qd8_weights *w, const uint8_t *panel,
                        int8_t *q, size_t ldq, float min, float max) {
    QD8_ROWS(mr, nc, x, ldx, rows, w, panel, NULL, q, ldq, min, max);
}
#endif

#undef QD8_ROWS
#undef QD8_TILE
#undef QD8_X_LOAD
#undef QD8_X_LOAD4
