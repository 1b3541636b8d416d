/*
 * matmul.h — float32 matrix products for the optimized mm, bmm, addmm and
 * linear kernels, split over the method's thread pool:
 *
 *     C[b][i][j] = bias[j] + sum_k A[b][i][k] * W[b](j, k)
 *
 * W is read in the layout it is stored in: as rows of k (a Linear weight
 * [N, K]: w_sk == 1, w_sn == K) or as rows of n (mm's mat2 [K, N]: w_sn ==
 * 1, w_sk == N). A product of few rows (decode: m <= EKO_GEMV_MAX_ROWS)
 * streams W once through f32_gemv.h, the threads owning whole cache lines
 * of output columns. More rows pack blocks of W into panels in scratch
 * (gemm.h's layout) and run the packed GEMM on tiles of rows x panels; when
 * the scratch cannot hold one panel per thread, the streaming path runs
 * four rows at a time instead.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_MATMUL_H
#define EMBER_KERNELS_OPTIMIZED_MATMUL_H

#include <stddef.h>

#include "ember/kernel.h"

typedef struct eko_f32_mm {
    size_t batch, m, n, k;
    const float *a; /* (batch, m, k): rows lda apart, batches a_batch apart */
    size_t lda, a_batch;
    const float *w; /* element (j, k) of batch b at w[b * w_batch + j * w_sn + k * w_sk] */
    size_t w_sn, w_sk, w_batch;
    const float *bias; /* (n), shared by every batch, or NULL */
    float *c;          /* (batch, m, n): rows ldc apart, batches c_batch apart */
    size_t ldc, c_batch;
} eko_f32_mm;

/**
 * Computes p on ctx's thread pool, packing into ctx's scratch when that
 * pays. W must have w_sk == 1 or w_sn == 1; C must not overlap A, W or
 * bias. Sizes are the caller's tensors' (products fit in size_t).
 */
void eko_f32_matmul(ember_kernel_ctx *ctx, const eko_f32_mm *p);

#endif /* EMBER_KERNELS_OPTIMIZED_MATMUL_H */
