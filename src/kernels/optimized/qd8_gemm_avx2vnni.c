/*
 * qd8_gemm.h micro-kernel on AVX2 with AVX-VNNI (the VEX-encoded vpdpbusd
 * of recent x86 cores): a panel's 16 columns in two vectors of 8 int32;
 * vpdpbusd adds four products of unsigned activation bytes and signed
 * weight bytes into each lane, so activations are stored offset by 128
 * (x_xor 0x80) and the packed ksums take the offset back out. Picked for the
 * AVX2 level where the CPU has AVX-VNNI (cpu.c). Int4 blocks go through one
 * chain of sums a row but for a single row: two a row in tiles of four would
 * take all 16 vector registers for sums (measured: GPT-2's 64 x 768 x 3072
 * product with 4-bit weights in groups of 32 in about half the time).
 */
#include "qd8_gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__AVXVNNI__)
#include "qd8_avx2.h"

#define QD8_FN eko_qd8_gemm_avx2vnni
#define QD8_X_OFFSET 128
#define QD8_TWO_CHAINS4 1 /* above */

typedef __m256i qd8_xv; /* x + 128 as unsigned bytes, four repeated */

/* the activations come offset (x_xor 0x80): a broadcast straight from memory */
static inline qd8_xv qd8_x_load(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

static inline qd8_acc qd8_dot(qd8_acc acc, qd8_xv x, qd8_w w) {
    return (qd8_acc){_mm256_dpbusd_avx_epi32(acc.a, x, w.a), _mm256_dpbusd_avx_epi32(acc.b, x, w.b)};
}

#include "qd8_gemm_body.h"

/* The same kernel on plain int8 activations (a statically quantized
 * tensor): each four offset as they are loaded. */
static inline qd8_xv qd8_x_load_s8(const int8_t *p) {
    return _mm256_xor_si256(qd8_x_load(p), _mm256_set1_epi8((char)0x80));
}
#undef QD8_FN
#define QD8_FN eko_qd8_gemm_avx2vnni_s8
#define QD8_X_LOAD qd8_x_load_s8
#define QD8_X_LOAD4 qd8_x_load_s8
#include "qd8_gemm_body.h"
#else
typedef int eko_no_avx2vnni_qd8_gemm; /* this build has no AVX-VNNI kernels */
#endif
