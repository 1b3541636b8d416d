/*
 * gemm.h — f32 matrix products on weights packed once (fully connected
 * layers, convolutions as matrix products, batch matmul with a constant
 * operand), for the CPU backend and the optimized portable-path kernels.
 *
 *     C[m][n] = clamp(bias[n] + sum_k A[m][k] * W[n][k], min, max)
 *
 * W is packed into panels of NR output columns: each panel holds its NR
 * biases, then for every k the NR weights W[n0..n0+NR)[k] (zero past n).
 * One packed copy serves every M: a product of one row (decode) streams each
 * panel once, front to back; larger M reuse a panel for MR rows at a time.
 * NR and MR depend on the instruction set in use when packing (cpu.h):
 * pack and multiply under the same one.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_GEMM_H
#define EMBER_KERNELS_OPTIMIZED_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "cpu.h"

/* Fully unrolls a loop over a compile-time row count, so that accumulator
 * arrays live in registers (compilers stop short of that at -O2). */
#define EKO_PRAGMA(x) _Pragma(#x)
#define EKO_UNROLL EKO_PRAGMA(GCC unroll 16)

/* Bodies instantiated for constant counts (rows, pixels, taps) must inline
 * for those counts to become registers. Sanitizer builds (EMBER_SANITIZED)
 * keep them calls: instrumented and forced inline, they take clang minutes
 * a file to compile, and speed does not matter there. */
#if defined(EMBER_SANITIZED)
#define EKO_BODY static inline
#else
#define EKO_BODY static inline __attribute__((always_inline))
#endif

struct ember_threadpool;

/*
 * A micro-kernel: C[0..mr)[0..nc) from mr (<= MR) rows of A (a_stride floats
 * apart), one packed panel w (bias, then kc * NR weights) and nc (<= NR)
 * valid columns; c rows are c_stride floats apart.
 */
typedef void (*eko_f32_gemm_ukernel)(size_t mr, size_t nc, size_t kc, const float *a,
                                     size_t a_stride, const float *w, float *c, size_t c_stride,
                                     float min, float max);

/*
 * The indirect form (convolutions without an im2col copy): row i's k
 * floats are read in ks pieces of kc, piece t at a[t * mr + i] + a_off (a
 * pointer per row and tap, into the input or to a row of zeros for padding,
 * and an offset in floats added to every one: a group's channels, so that
 * the groups of a convolution share one table); the panel w has ks * kc
 * weights per column, in the same order.
 */
typedef void (*eko_f32_igemm_ukernel)(size_t mr, size_t nc, size_t kc, size_t ks,
                                      const float *const *a, size_t a_off, const float *w, float *c,
                                      size_t c_stride, float min, float max);

typedef struct eko_f32_gemm_config {
    eko_isa isa;
    size_t mr, nr;
    eko_f32_gemm_ukernel ukernel;
    eko_f32_igemm_ukernel iukernel;
} eko_f32_gemm_config;

/** The configuration of an instruction set (NULL if this build lacks it). */
const eko_f32_gemm_config *eko_f32_gemm_config_for(eko_isa isa);

/**
 * The configuration a grouped convolution with gout output channels a
 * group runs on at cfg's level: cfg itself, or one with narrower panels
 * where most of cfg's panel would be zero columns (AVX2 and AVX-512 with 8
 * or 16 channels a group). Pack and multiply with the same one.
 */
const eko_f32_gemm_config *eko_f32_gemm_config_grouped(const eko_f32_gemm_config *cfg,
                                                       size_t gout);

/** The configuration of the level in use. */
const eko_f32_gemm_config *eko_f32_gemm_config_active(void);

/** Floats of a packed (n, k) weight; false on overflow. */
bool eko_f32_packed_size(const eko_f32_gemm_config *cfg, size_t n, size_t k, size_t *floats);

/**
 * Packs W for cfg into out (eko_f32_packed_size floats). W[n][k] is
 * w[n * k_total + k] (rows of k: PyTorch's Linear weight) or, when
 * k_major, w[k * n_total + n] (columns: a weight stored transposed).
 * bias (n floats) may be NULL for zeros.
 */
void eko_f32_pack(const eko_f32_gemm_config *cfg, size_t n, size_t k, const float *w, bool k_major,
                  const float *bias, float *out);

/** eko_f32_pack split by panels across the pool's threads (weights packed at
 * init: the first touch of a large packed copy costs as much as the copy). */
void eko_f32_pack_parallel(const eko_f32_gemm_config *cfg, struct ember_threadpool *pool,
                           size_t n, size_t k, const float *w, bool k_major, const float *bias,
                           float *out);

/**
 * C = clamp(A x W^T + bias) over packed W, split across the pool's threads.
 * a: m rows of k floats, a_stride apart; c: m rows of n floats, c_stride apart.
 */
void eko_f32_gemm(const eko_f32_gemm_config *cfg, struct ember_threadpool *pool, size_t m,
                  size_t n, size_t k, const float *a, size_t a_stride, const float *packed,
                  float *c, size_t c_stride, float min, float max);

/** eko_f32_gemm on the calling thread only (for callers that split work
 * themselves, e.g. by rows of an im2col block or by batch). */
void eko_f32_gemm_serial(const eko_f32_gemm_config *cfg, size_t m, size_t n, size_t k,
                         const float *a, size_t a_stride, const float *packed, float *c,
                         size_t c_stride, float min, float max);

/* The micro-kernels, by instruction set (one file each, both forms). */
void eko_f32_gemm_4x8_scalar(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                             const float *w, float *c, size_t c_stride, float min, float max);
void eko_f32_gemm_6x16_avx2(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                            const float *w, float *c, size_t c_stride, float min, float max);
void eko_f32_gemm_8x8_avx2(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                           const float *w, float *c, size_t c_stride, float min, float max);
void eko_f32_gemm_8x32_avx512(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                              const float *w, float *c, size_t c_stride, float min, float max);
void eko_f32_gemm_8x8_neon(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                           const float *w, float *c, size_t c_stride, float min, float max);

void eko_f32_igemm_4x8_scalar(size_t mr, size_t nc, size_t kc, size_t ks,
                              const float *const *a, size_t a_off, const float *w,
                              float *c, size_t c_stride, float min, float max);
void eko_f32_igemm_6x16_avx2(size_t mr, size_t nc, size_t kc, size_t ks,
                             const float *const *a, size_t a_off, const float *w,
                             float *c, size_t c_stride, float min, float max);
void eko_f32_igemm_8x8_avx2(size_t mr, size_t nc, size_t kc, size_t ks,
                            const float *const *a, size_t a_off, const float *w,
                            float *c, size_t c_stride, float min, float max);
void eko_f32_igemm_8x32_avx512(size_t mr, size_t nc, size_t kc, size_t ks,
                               const float *const *a, size_t a_off, const float *w,
                               float *c, size_t c_stride,
                               float min, float max);
void eko_f32_igemm_8x8_neon(size_t mr, size_t nc, size_t kc, size_t ks,
                            const float *const *a, size_t a_off, const float *w,
                            float *c, size_t c_stride, float min, float max);

#endif /* EMBER_KERNELS_OPTIMIZED_GEMM_H */
