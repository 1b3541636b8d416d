/*
 * matmul_util.c — the portable float matrix multiply in register tiles
 * (declared in kernel_util.h).
 */
#include "kernel_util.h"

#include <string.h>

/* ------------------------------------------------------------------------ */
/* Matrix multiply                                                           */
/* ------------------------------------------------------------------------ */

/*
 * Float matmul in register tiles: EK_MM_MR rows by EK_MM_NR columns of out
 * are accumulated over the whole of k in a local array, then written once.
 * The column loop is long enough (32) that the compiler vectorizes it rather
 * than unrolling it first, and short enough that the tile's accumulators
 * stay in vector registers (or close by) while each loaded row segment of w
 * serves EK_MM_MR rows. Each output element sums over p in order.
 */
#define EK_MM_NR 32
#define EK_MM_MR 4
/* Columns of the remainder (m % EK_MM_NR) loop, on the stack. */
#define EK_MM_TAIL EK_MM_NR

/* What the tiles do with a finished accumulator: out = alpha * acc (+ beta * bias). */
#define EK_DEF_MATMUL(SFX, T, CT, LOAD, STORE)                                                     \
    typedef struct mm_epi_##SFX {                                                                  \
        CT alpha, beta;                                                                            \
        const T *bias; /* NULL: none; element (i, j) at bias[i * si + j * sj] */                   \
        int64_t si, sj;                                                                            \
    } mm_epi_##SFX;                                                                                \
                                                                                                   \
    static inline CT mm_final_##SFX(const mm_epi_##SFX *e, CT acc, int64_t i, int64_t j) {         \
        CT v = e->alpha * acc;                                                                     \
        if (e->bias != NULL) v += e->beta * LOAD(e->bias[i * e->si + j * e->sj]);                  \
        return v;                                                                                  \
    }                                                                                              \
                                                                                                   \
    /* rows i0..i0+MR, columns j0..j0+NR of out; A, W, O point at (i0, 0), (0, j0), (i0, j0) */    \
    static void mm_tile4_##SFX(T *O, int64_t ldo, const T *A, int64_t lda, const T *W,             \
                               int64_t ldw, int64_t k, const mm_epi_##SFX *e, int64_t i0,          \
                               int64_t j0) {                                                       \
        CT c[EK_MM_MR][EK_MM_NR];                                                                  \
        for (int r = 0; r < EK_MM_MR; r++)                                                         \
            for (int j = 0; j < EK_MM_NR; j++) c[r][j] = 0;                                        \
        for (int64_t p = 0; p < k; p++) {                                                          \
            const T *wrow = W + p * ldw;                                                           \
            for (int r = 0; r < EK_MM_MR; r++) {                                                   \
                const CT av = LOAD(A[r * lda + p]);                                                \
                for (int j = 0; j < EK_MM_NR; j++) c[r][j] += av * LOAD(wrow[j]);                  \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < EK_MM_MR; r++)                                                         \
            for (int j = 0; j < EK_MM_NR; j++)                                                     \
                O[r * ldo + j] = STORE(mm_final_##SFX(e, c[r][j], i0 + r, j0 + j));                \
    }                                                                                              \
                                                                                                   \
    /* one row i0, columns j0..j0+NR */                                                            \
    static void mm_tile1_##SFX(T *O, const T *A, const T *W, int64_t ldw, int64_t k,               \
                               const mm_epi_##SFX *e, int64_t i0, int64_t j0) {                    \
        CT c[EK_MM_NR];                                                                            \
        for (int j = 0; j < EK_MM_NR; j++) c[j] = 0;                                               \
        for (int64_t p = 0; p < k; p++) {                                                          \
            const T *wrow = W + p * ldw;                                                           \
            const CT av = LOAD(A[p]);                                                              \
            for (int j = 0; j < EK_MM_NR; j++) c[j] += av * LOAD(wrow[j]);                         \
        }                                                                                          \
        for (int j = 0; j < EK_MM_NR; j++) O[j] = STORE(mm_final_##SFX(e, c[j], i0, j0 + j));      \
    }                                                                                              \
                                                                                                   \
    static void matmul_##SFX(T *O, int64_t ldo, const T *A, int64_t lda, const T *W, int64_t ldw,  \
                             int64_t n, int64_t k, int64_t m, double alpha,                        \
                             const ek_mm_bias *bias) {                                             \
        mm_epi_##SFX e = {(CT)alpha, 0, NULL, 0, 0};                                               \
        if (bias != NULL && bias->beta != 0) {                                                     \
            e.beta = (CT)bias->beta;                                                               \
            e.bias = (const T *)bias->data;                                                        \
            e.si = bias->si;                                                                       \
            e.sj = bias->sj;                                                                       \
        }                                                                                          \
        if (k == 0) { /* no products (a and w may be NULL): out is the epilogue of 0 */            \
            for (int64_t i = 0; i < n; i++)                                                        \
                for (int64_t j = 0; j < m; j++)                                                    \
                    O[i * ldo + j] = STORE(mm_final_##SFX(&e, 0, i, j));                           \
            return;                                                                                \
        }                                                                                          \
        const int64_t mfull = m - m % EK_MM_NR;                                                    \
        /* column panels outside: a panel of w (k, NR) stays in cache across row tiles */          \
        for (int64_t j0 = 0; j0 < mfull; j0 += EK_MM_NR) {                                         \
            int64_t i0 = 0;                                                                        \
            for (; i0 + EK_MM_MR <= n; i0 += EK_MM_MR)                                             \
                mm_tile4_##SFX(O + i0 * ldo + j0, ldo, A + i0 * lda, lda, W + j0, ldw, k, &e, i0,  \
                               j0);                                                                \
            for (; i0 < n; i0++)                                                                   \
                mm_tile1_##SFX(O + i0 * ldo + j0, A + i0 * lda, W + j0, ldw, k, &e, i0, j0);       \
        }                                                                                          \
        if (mfull == m) return;                                                                    \
        /* the last m % NR columns, one row at a time */                                           \
        const int64_t jn = m - mfull;                                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            CT c[EK_MM_TAIL];                                                                      \
            for (int64_t j = 0; j < jn; j++) c[j] = 0;                                             \
            for (int64_t p = 0; p < k; p++) {                                                      \
                const CT av = LOAD(A[i * lda + p]);                                                \
                const T *wrow = W + p * ldw + mfull;                                               \
                for (int64_t j = 0; j < jn; j++) c[j] += av * LOAD(wrow[j]);                       \
            }                                                                                      \
            for (int64_t j = 0; j < jn; j++)                                                       \
                O[i * ldo + mfull + j] = STORE(mm_final_##SFX(&e, c[j], i, mfull + j));            \
        }                                                                                          \
    }

EK_FOR_EACH_FLOAT(EK_DEF_MATMUL)

/*
 * Integer matmul, i-k-j order: products and sums in uint64, so that overflow
 * wraps (two's complement) as in PyTorch instead of being undefined. alpha
 * and beta are integers here (PyTorch takes no fractional ones).
 */
#define EK_MM_IBLOCK 64
#define EK_DEF_MATMUL_INT(SFX, T)                                                                  \
    static void matmul_##SFX(T *O, int64_t ldo, const T *A, int64_t lda, const T *W, int64_t ldw,  \
                             int64_t n, int64_t k, int64_t m, double alpha_d,                      \
                             const ek_mm_bias *bias) {                                             \
        const uint64_t alpha = (uint64_t)ek_f64_to_i64(alpha_d);                                   \
        const T *bias_data = bias != NULL && bias->beta != 0 ? (const T *)bias->data : NULL;       \
        const uint64_t beta = bias != NULL ? (uint64_t)ek_f64_to_i64(bias->beta) : 0;              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            for (int64_t j0 = 0; j0 < m; j0 += EK_MM_IBLOCK) {                                     \
                int64_t jn = m - j0 < EK_MM_IBLOCK ? m - j0 : EK_MM_IBLOCK;                        \
                uint64_t acc[EK_MM_IBLOCK];                                                        \
                for (int64_t j = 0; j < jn; j++) acc[j] = 0;                                       \
                for (int64_t p = 0; p < k; p++) {                                                  \
                    const uint64_t av = (uint64_t)(int64_t)A[i * lda + p];                         \
                    const T *wrow = W + p * ldw + j0;                                              \
                    for (int64_t j = 0; j < jn; j++) acc[j] += av * (uint64_t)(int64_t)wrow[j];    \
                }                                                                                  \
                for (int64_t j = 0; j < jn; j++) {                                                 \
                    uint64_t v = alpha * acc[j];                                                   \
                    if (bias_data != NULL)                                                         \
                        v += beta *                                                                \
                             (uint64_t)(int64_t)bias_data[i * bias->si + (j0 + j) * bias->sj];     \
                    O[i * ldo + j0 + j] = (T)(int64_t)v;                                           \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

EK_DEF_MATMUL_INT(u8, uint8_t)
EK_DEF_MATMUL_INT(i8, int8_t)
EK_DEF_MATMUL_INT(i16, int16_t)
EK_DEF_MATMUL_INT(i32, int32_t)
EK_DEF_MATMUL_INT(i64, int64_t)

void ek_gemm(int dtype, void *out, int64_t ldo, const void *a, int64_t lda, const void *w,
             int64_t ldw, int64_t n, int64_t k, int64_t m, double alpha, const ek_mm_bias *bias) {
    /* With k == 0 nothing is read from a or w, which may then be NULL: the
     * float loops form no pointer into them then, the integer loops none
     * outside their loop over k. */
    if (n == 0 || m == 0) return;
#define EK_GEMM_CASE(CODE, SFX, T)                                                                 \
    case CODE:                                                                                     \
        matmul_##SFX((T *)out, ldo, (const T *)a, lda, (const T *)w, ldw, n, k, m, alpha, bias);   \
        break;
    switch (dtype) {
        EK_GEMM_CASE(EMBER_FLOAT32, f32, float)
        EK_GEMM_CASE(EMBER_FLOAT64, f64, double)
        EK_GEMM_CASE(EMBER_FLOAT16, f16, uint16_t)
        EK_GEMM_CASE(EMBER_BFLOAT16, bf16, uint16_t)
        EK_GEMM_CASE(EMBER_UINT8, u8, uint8_t)
        EK_GEMM_CASE(EMBER_INT8, i8, int8_t)
        EK_GEMM_CASE(EMBER_INT16, i16, int16_t)
        EK_GEMM_CASE(EMBER_INT32, i32, int32_t)
        EK_GEMM_CASE(EMBER_INT64, i64, int64_t)
    default: break;
    }
#undef EK_GEMM_CASE
}

void ek_matmul(int dtype, void *out, const void *a, const void *w, int64_t batch, int64_t n,
               int64_t k, int64_t m, double alpha, const ek_mm_bias *bias) {
    size_t es = ember_dtype_size(dtype);
    for (int64_t bt = 0; bt < batch; bt++) {
        /* batch bt: a (n, k), w (k, m), out (n, m) */
        char *o = (char *)out + (size_t)(bt * n * m) * es;
        const char *ab = a != NULL ? (const char *)a + (size_t)(bt * n * k) * es : NULL;
        const char *wb = w != NULL ? (const char *)w + (size_t)(bt * k * m) * es : NULL;
        ek_gemm(dtype, o, m, ab, k, wb, m, n, k, m, alpha, bias);
    }
}
