/*
 * qd8_gemm.h — matrix products of dynamically quantized activations (int8,
 * one scale and zero point per row, chosen at run time) with int8 or int4
 * weights quantized per output channel or per group of the depth:
 *
 *     C[m][n] = clamp(bias[n] + sx[m] * sum_s ws[s][n] * sum_{k in s} (x[m][k] - zx[m]) * W[n][k])
 *
 * where the slices s cover k: one slice of all k (per-channel weights), or
 * slices of the group size (groupwise weights, ws one scale per group).
 * Products run in int32; each slice's sum turns into float once. With one
 * slice the zero point comes out exactly, in int32, through the column's
 * weight sum; with groups it comes out at the end through one float per
 * column, the weight sums times their scales (sum_s ws[s][n] * sum_{k in s}
 * W[n][k]), so a group costs only its weights and its scale in memory:
 * decode streams the weights once per token and reads nothing it can do
 * without.
 *
 * Weights are packed once (eko_qd8_pack) in a layout every instruction set
 * reads (so packing does not depend on the level): panels of EKO_QD8_NR
 * output channels; in a panel, the slices in groups of as many as one
 * 64-byte line of scales holds (two with bfloat16 scales, one with float):
 * the group's line of scales, then the blocks of each of its slices; after
 * the last group the zero-point sums, the biases and the isums, a line
 * each. So a panel is read front to back without a gap, and one row
 * (decode) streams the whole weight as one sequence of lines: a stream the
 * hardware prefetchers follow, where a separate run of scales at each
 * panel's end (the former layout) cost a third of the bandwidth on a Zen 4
 * core. The parts:
 *
 *     int8 block:  16 columns x 4 k   byte 4 c + i = W[n0 + c][k0 + i]
 *     int4 block:  16 columns x 8 k   byte 4 c + i: low nibble W[n0 + c][k0 + i] + 8,
 *                                     high nibble W[n0 + c][k0 + 4 + i] + 8
 *     scales:      float [16] a slice, or bfloat16 [16] where the source's are
 *                                     (a group's last line padded with zeros)
 *     ksums:       float [16]         sum_s ws[s][c] * sum_{k in s} W[n0 + c][k]
 *                                     (groups; zero with one slice)
 *     biases:      float [16]
 *     isums:       int32 [16]         sum_k W[n0 + c][k] (one slice; else zero)
 *
 * A slice is padded with zero weights to whole blocks, so a group need not
 * be a multiple of the block depth; columns past n are zero. A product of
 * one row (decode) streams every panel once, front to back; more rows reuse
 * it from cache, a kernel's MR rows (at most EKO_QD8_MAX_MR) at a time.
 *
 * Activations are read 4 bytes at a time from each slice's start, so the
 * last row of x must be followed by EKO_QD8_X_PAD readable bytes (they are
 * multiplied by zero weights). Int8 weights must lie in [-127, 127] (the
 * AVX2 kernels' sign trick needs it; symmetric quantizers never use -128).
 * Slices are at most EKO_QD8_MAX_K deep, so int32 sums cannot overflow.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_QD8_GEMM_H
#define EMBER_KERNELS_OPTIMIZED_QD8_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu.h"

#define EKO_QD8_NR 16
#define EKO_QD8_MAX_MR 8
#define EKO_QD8_BLOCK_BYTES 64
#define EKO_QD8_X_PAD 8
#define EKO_QD8_MAX_K 65536

struct ember_threadpool;

/* Quantization of one activation row: x = scale * (q - zero_point). */
typedef struct eko_qd8_row {
    float scale;
    int32_t zero_point;
} eko_qd8_row;

/* A packed weight: its geometry (set by eko_qd8_weights_init) and bytes. */
typedef struct eko_qd8_weights {
    size_t n, k;          /* output channels, depth */
    size_t slice_k;       /* depth per scale slice (k, or the group size) */
    size_t slices;        /* k / slice_k */
    size_t slice_blocks;  /* 64-byte weight blocks per slice */
    bool int4;
    bool scales_bf16;     /* scales packed as bfloat16 (else float) */
    size_t scale_bytes;   /* one slice's scales: 32 or 64 */
    size_t group_slices;  /* slices whose scales share a line: 64 / scale_bytes */
    size_t group_bytes;   /* a whole group: its line of scales and its slices' blocks */
    size_t tail_at;       /* offset of the ksums, then the biases, the isums */
    size_t panel_bytes;   /* groups + ksums + biases + isums */
    size_t panels;
    const uint8_t *data;  /* panels * panel_bytes, 64-byte aligned */
} eko_qd8_weights;

/* Where slice s of a panel keeps its scales and its first block. */
static inline size_t eko_qd8_scales_at(const eko_qd8_weights *w, size_t s) {
    return s / w->group_slices * w->group_bytes + s % w->group_slices * w->scale_bytes;
}
static inline size_t eko_qd8_blocks_at(const eko_qd8_weights *w, size_t s) {
    return s / w->group_slices * w->group_bytes + EKO_QD8_BLOCK_BYTES +
           s % w->group_slices * w->slice_blocks * EKO_QD8_BLOCK_BYTES;
}

/**
 * Sets the geometry of an (n, k) weight, int8 or int4, whose scales change
 * every slice_k along k (slice_k == k: per channel), given as float or as
 * bfloat16 (scales_bf16; they are packed as given). *bytes: what
 * eko_qd8_pack writes. False if slice_k is 0, does not divide k, exceeds
 * EKO_QD8_MAX_K, or a size overflows.
 */
bool eko_qd8_weights_init(eko_qd8_weights *w, size_t n, size_t k, size_t slice_k, bool int4,
                          bool scales_bf16, size_t *bytes);

/**
 * Packs a weight into out (the bytes eko_qd8_weights_init gave, 64-byte
 * aligned) and points w->data at it. src: int8 [n][k], or for int4 rows of
 * (k + 1) / 2 bytes, element 2j in the low nibble and 2j + 1 in the high one,
 * each stored plus 8 (0..15 for -8..7). scales: float32, or bfloat16 when
 * the geometry says so, [n] (per channel) or [n][slices]. bias: n floats or
 * NULL. Returns false (out partly written) if an int8 weight is -128.
 */
bool eko_qd8_pack(eko_qd8_weights *w, const void *src, const void *scales, const float *bias,
                  uint8_t *out);

/** eko_qd8_pack split by panels across the pool's threads (NULL: the caller's). */
bool eko_qd8_pack_parallel(eko_qd8_weights *w, struct ember_threadpool *pool, const void *src,
                           const void *scales, const float *bias, uint8_t *out);

/*
 * Rows of k floats are quantized as XNNPACK's dynamic quantization does: the
 * row's range widened to hold 0, scale (max - min) / 255, zero point rounded
 * into [-128, 127], q = clamp(round(x / scale) + zero point). An all-zero
 * row gets scale 1 (its values quantize to its zero point). Infinities
 * saturate (the range is that of the finite values); a row with a NaN gets
 * a NaN scale (its products are NaN, as in float) and NaN elements quantize
 * to the zero point. Stored q ^ x_xor: the encoding the micro-kernels read
 * (x_xor 0x80 stores q + 128 as an unsigned byte). A quantizer runs in two
 * passes: the range of the finite values (lo, hi widened; nan set if one is
 * NaN), then the values with the row's parameters.
 */
typedef void (*eko_qd8_range_fn)(size_t k, const float *x, float *lo, float *hi, bool *nan);
typedef void (*eko_qd8_values_fn)(size_t k, const float *x, int8_t *q, eko_qd8_row r,
                                  uint8_t x_xor);

/*
 * A micro-kernel: mr (<= its config's mr) rows of x (ldx bytes apart, in
 * its config's encoding, their quantization in rows) times one packed
 * panel, nc (<= EKO_QD8_NR) columns of c (rows ldc floats apart) written.
 */
typedef void (*eko_qd8_ukernel)(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                                const eko_qd8_row *rows, const eko_qd8_weights *w,
                                const uint8_t *panel, float *c, size_t ldc, float min, float max);

/* The same with int8 results (eko_qd8_out's q, rows ldq bytes apart). */
typedef void (*eko_qd8_ukernel_q)(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                                  const eko_qd8_row *rows, const eko_qd8_weights *w,
                                  const uint8_t *panel, int8_t *q, size_t ldq, float min,
                                  float max);

typedef struct eko_qd8_gemm_config {
    const char *name;     /* "scalar", "avx2", "avx2vnni", "avx512vnni", "neon", "neondot" */
    eko_isa isa;          /* the level it needs */
    size_t mr;            /* rows per call, at most */
    bool dot_ext;         /* needs the level's int8 dot-product extension on top
                           * (AVX-VNNI, AVX-512 VNNI, AArch64 DOTPROD) */
    uint8_t x_xor;        /* the activations as the kernel reads them: q ^ x_xor
                           * (0x80 where its product takes unsigned bytes, so
                           * the offset is paid once, at quantization) */
    eko_qd8_ukernel ukernel;
    eko_qd8_ukernel ukernel_s8;  /* the same on plain int8 activations (x_xor 0) */
    eko_qd8_range_fn range;      /* the row quantizer's passes */
    eko_qd8_values_fn values;
    eko_qd8_ukernel_q ukernel_s8_q; /* ukernel_s8 with int8 results, or NULL (then the
                                     * float results are rounded after it) */
} eko_qd8_gemm_config;

/** The kernels for the level in use (config.c; never NULL). */
const eko_qd8_gemm_config *eko_qd8_gemm_config_active(void);

/** Every kernel set of this build, i = 0, 1, ... (NULL past the last), for tests. */
const eko_qd8_gemm_config *eko_qd8_gemm_config_at(size_t i);

/** Whether this CPU runs cfg. */
bool eko_qd8_gemm_config_supported(const eko_qd8_gemm_config *cfg);

/**
 * Quantizes rows of floats (eko_qd8_quantize_row_fn) for cfg's kernels, q
 * in its encoding, split over the pool's threads by rows. x: rows of k
 * floats, ldx apart; q: rows of k bytes, ldq apart; params: one per row.
 */
void eko_qd8_quantize(const eko_qd8_gemm_config *cfg, struct ember_threadpool *pool, size_t rows,
                      size_t k, const float *x, size_t ldx, int8_t *q, size_t ldq,
                      eko_qd8_row *params);

/**
 * C = the product above for m rows of quantized x (ldx bytes apart, as
 * eko_qd8_quantize wrote them for cfg; see the padding rule), split over the
 * pool's threads by rows and panels. c: m rows of w->n floats, ldc apart.
 * No allocation.
 */
void eko_qd8_gemm(const eko_qd8_gemm_config *cfg, struct ember_threadpool *pool, size_t m,
                  const int8_t *x, size_t ldx, const eko_qd8_row *rows, const eko_qd8_weights *w,
                  float *c, size_t ldc, float min, float max);

/*
 * Where a product of rows that share one quantization writes: float32 c
 * (rows ld floats apart), or, when q is set instead, int8 q (rows ld bytes
 * apart) holding each result rounded to the nearest integer, ties to even
 * (then min and max, which clamp before rounding, must lie in [-128, 127]).
 */
typedef struct eko_qd8_out {
    float *c;
    int8_t *q;
    size_t ld;
} eko_qd8_out;

/**
 * The product above for m rows of x that share one quantization xq (a
 * statically quantized tensor, or one image of a dynamically quantized
 * one), with the same micro-kernels and padding rule. x_xor: the encoding
 * of x (x holds q ^ x_xor): 0 for plain int8 values (a statically quantized
 * tensor), cfg->x_xor for rows eko_qd8_quantize wrote. Static int8 layers
 * use it with weights packed with scales in_scale * w_scale[n] / out_scale,
 * biases in output steps plus the output zero point, and xq.scale 1: the
 * results are then output int8 values ("fp32 requantization"). pool NULL:
 * on the caller. No allocation.
 */
void eko_qd8_gemm_uniform(const eko_qd8_gemm_config *cfg, struct ember_threadpool *pool,
                          size_t m, const int8_t *x, size_t ldx, uint8_t x_xor, eko_qd8_row xq,
                          const eko_qd8_weights *w, eko_qd8_out out, float min, float max);

/* The row quantizers' passes: portable C (qd8_gemm.c), AVX2, AVX-512; the
 * same results on every level. */
void eko_qd8_range_scalar(size_t k, const float *x, float *lo, float *hi, bool *nan);
void eko_qd8_values_scalar(size_t k, const float *x, int8_t *q, eko_qd8_row r, uint8_t x_xor);
void eko_qd8_range_avx2(size_t k, const float *x, float *lo, float *hi, bool *nan);
void eko_qd8_values_avx2(size_t k, const float *x, int8_t *q, eko_qd8_row r, uint8_t x_xor);
void eko_qd8_range_avx512(size_t k, const float *x, float *lo, float *hi, bool *nan);
void eko_qd8_values_avx512(size_t k, const float *x, int8_t *q, eko_qd8_row r, uint8_t x_xor);
/* The range's parameters (shared by the quantizers): lo <= 0 <= hi finite. */
eko_qd8_row eko_qd8_row_params(float lo, float hi);
/* One row quantized the portable way (a reference for tests). */
void eko_qd8_quantize_row_scalar(size_t k, const float *x, int8_t *q, uint8_t x_xor,
                                 eko_qd8_row *out);

/* The micro-kernels (one file per instruction set). */
void eko_qd8_gemm_scalar(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                         const eko_qd8_row *rows, const eko_qd8_weights *w, const uint8_t *panel,
                         float *c, size_t ldc, float min, float max);
void eko_qd8_gemm_avx2(size_t mr, size_t nc, const int8_t *x, size_t ldx, const eko_qd8_row *rows,
                       const eko_qd8_weights *w, const uint8_t *panel, float *c, size_t ldc,
                       float min, float max);
void eko_qd8_gemm_avx2_s8(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                          const eko_qd8_row *rows, const eko_qd8_weights *w, const uint8_t *panel,
                          float *c, size_t ldc, float min, float max);
void eko_qd8_gemm_avx2vnni(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                           const eko_qd8_row *rows, const eko_qd8_weights *w, const uint8_t *panel,
                           float *c, size_t ldc, float min, float max);
void eko_qd8_gemm_avx2vnni_s8(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                              const eko_qd8_row *rows, const eko_qd8_weights *w,
                              const uint8_t *panel, float *c, size_t ldc, float min, float max);
void eko_qd8_gemm_avx512vnni(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                             const eko_qd8_row *rows, const eko_qd8_weights *w,
                             const uint8_t *panel, float *c, size_t ldc, float min, float max);
void eko_qd8_gemm_avx512vnni_s8(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                                const eko_qd8_row *rows, const eko_qd8_weights *w,
                                const uint8_t *panel, float *c, size_t ldc, float min, float max);
void eko_qd8_gemm_avx512vnni_q(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                               const eko_qd8_row *rows, const eko_qd8_weights *w,
                               const uint8_t *panel, int8_t *q, size_t ldq, float min, float max);
void eko_qd8_gemm_avx512vnni_s8_q(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                                  const eko_qd8_row *rows, const eko_qd8_weights *w,
                                  const uint8_t *panel, int8_t *q, size_t ldq, float min,
                                  float max);
void eko_qd8_gemm_neon(size_t mr, size_t nc, const int8_t *x, size_t ldx, const eko_qd8_row *rows,
                       const eko_qd8_weights *w, const uint8_t *panel, float *c, size_t ldc,
                       float min, float max);
void eko_qd8_gemm_neondot(size_t mr, size_t nc, const int8_t *x, size_t ldx,
                          const eko_qd8_row *rows, const eko_qd8_weights *w, const uint8_t *panel,
                          float *c, size_t ldc, float min, float max);

#endif /* EMBER_KERNELS_OPTIMIZED_QD8_GEMM_H */
