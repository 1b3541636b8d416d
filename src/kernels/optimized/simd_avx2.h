/*
 * simd_avx2.h — the SIMD layer on AVX2 + FMA: 8 floats per vector.
 * Same names and semantics as simd_scalar.h (read its header); only for
 * files named *_avx2.c, which are compiled with these instructions.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_SIMD_AVX2_H
#define EMBER_KERNELS_OPTIMIZED_SIMD_AVX2_H

#ifdef EKO_SIMD_ISA
#error "include one simd_<isa>.h per file"
#endif
#define EKO_SIMD_ISA avx2
#define EKO_SIMD_ISA_ID EKO_ISA_AVX2 /* the eko_isa of this layer (cpu.h) */
#define EKO_VLEN 8

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

typedef __m256 eko_v;
typedef __m256i eko_vi;
typedef __m256 eko_vm;

static inline eko_v eko_v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void eko_v_store(float *p, eko_v v) { _mm256_storeu_ps(p, v); }
static inline eko_v eko_v_set1(float x) { return _mm256_set1_ps(x); }

/* Lanes [0, n) set. */
static inline __m256i eko_avx2_head_mask(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline eko_v eko_v_load_part(const float *p, size_t n, float fill) {
    const __m256i m = eko_avx2_head_mask(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
static inline void eko_v_store_part(float *p, eko_v v, size_t n) {
    _mm256_maskstore_ps(p, eko_avx2_head_mask(n), v);
}
static inline eko_v eko_v_load_i8(const int8_t *p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)));
}

static inline eko_v eko_v_add(eko_v a, eko_v b) { return _mm256_add_ps(a, b); }
static inline eko_v eko_v_sub(eko_v a, eko_v b) { return _mm256_sub_ps(a, b); }
static inline eko_v eko_v_mul(eko_v a, eko_v b) { return _mm256_mul_ps(a, b); }
static inline eko_v eko_v_div(eko_v a, eko_v b) { return _mm256_div_ps(a, b); }
static inline eko_v eko_v_fma(eko_v a, eko_v b, eko_v c) { return _mm256_fmadd_ps(a, b, c); }
static inline eko_v eko_v_fnma(eko_v a, eko_v b, eko_v c) { return _mm256_fnmadd_ps(a, b, c); }
static inline eko_v eko_v_sqrt(eko_v a) { return _mm256_sqrt_ps(a); }
/* vminps / vmaxps return the second operand when either is NaN: exactly
 * a < b ? a : b and a > b ? a : b. */
static inline eko_v eko_v_min(eko_v a, eko_v b) { return _mm256_min_ps(a, b); }
static inline eko_v eko_v_max(eko_v a, eko_v b) { return _mm256_max_ps(a, b); }

static inline eko_vi eko_v_bits(eko_v a) { return _mm256_castps_si256(a); }
static inline eko_v eko_vi_float(eko_vi i) { return _mm256_castsi256_ps(i); }
static inline eko_v eko_v_and(eko_v a, eko_v b) { return _mm256_and_ps(a, b); }
static inline eko_v eko_v_or(eko_v a, eko_v b) { return _mm256_or_ps(a, b); }
static inline eko_v eko_v_xor(eko_v a, eko_v b) { return _mm256_xor_ps(a, b); }

static inline eko_vm eko_v_lt(eko_v a, eko_v b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline eko_vm eko_v_le(eko_v a, eko_v b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
static inline eko_vm eko_v_eq(eko_v a, eko_v b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
static inline eko_vm eko_v_isnan(eko_v a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
static inline eko_vm eko_vm_or(eko_vm a, eko_vm b) { return _mm256_or_ps(a, b); }
static inline eko_v eko_v_select(eko_vm m, eko_v a, eko_v b) { return _mm256_blendv_ps(b, a, m); }

static inline eko_vi eko_vi_set1(uint32_t x) { return _mm256_set1_epi32((int)x); }
static inline eko_vi eko_vi_add(eko_vi a, eko_vi b) { return _mm256_add_epi32(a, b); }
static inline eko_vi eko_vi_sub(eko_vi a, eko_vi b) { return _mm256_sub_epi32(a, b); }
#define eko_vi_srl(a, n) _mm256_srli_epi32((a), (n))
#define eko_vi_sll(a, n) _mm256_slli_epi32((a), (n))
static inline eko_v eko_vi_to_v(eko_vi a) { return _mm256_cvtepi32_ps(a); }

static inline float eko_v_hsum(eko_v a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline float eko_v_hmax(eko_v a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#endif /* EMBER_KERNELS_OPTIMIZED_SIMD_AVX2_H */
