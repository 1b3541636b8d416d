/*
 * simd_avx512.h — the SIMD layer on AVX-512 F/DQ: 16 floats per vector,
 * masks in opmask registers. Same names and semantics as simd_scalar.h
 * (read its header); only for files named *_avx512.c.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_SIMD_AVX512_H
#define EMBER_KERNELS_OPTIMIZED_SIMD_AVX512_H

#ifdef EKO_SIMD_ISA
#error "include one simd_<isa>.h per file"
#endif
#define EKO_SIMD_ISA avx512
#define EKO_SIMD_ISA_ID EKO_ISA_AVX512 /* the eko_isa of this layer (cpu.h) */
#define EKO_VLEN 16

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

typedef __m512 eko_v;
typedef __m512i eko_vi;
typedef __mmask16 eko_vm;

static inline eko_v eko_v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void eko_v_store(float *p, eko_v v) { _mm512_storeu_ps(p, v); }
static inline eko_v eko_v_set1(float x) { return _mm512_set1_ps(x); }

static inline eko_v eko_v_load_part(const float *p, size_t n, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), (__mmask16)((1u << n) - 1u), p);
}
static inline void eko_v_store_part(float *p, eko_v v, size_t n) {
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1u), v);
}
static inline eko_v eko_v_load_i8(const int8_t *p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)));
}

static inline eko_v eko_v_add(eko_v a, eko_v b) { return _mm512_add_ps(a, b); }
static inline eko_v eko_v_sub(eko_v a, eko_v b) { return _mm512_sub_ps(a, b); }
static inline eko_v eko_v_mul(eko_v a, eko_v b) { return _mm512_mul_ps(a, b); }
static inline eko_v eko_v_div(eko_v a, eko_v b) { return _mm512_div_ps(a, b); }
static inline eko_v eko_v_fma(eko_v a, eko_v b, eko_v c) { return _mm512_fmadd_ps(a, b, c); }
static inline eko_v eko_v_fnma(eko_v a, eko_v b, eko_v c) { return _mm512_fnmadd_ps(a, b, c); }
static inline eko_v eko_v_sqrt(eko_v a) { return _mm512_sqrt_ps(a); }
/* As vminps / vmaxps: the second operand when either is NaN. */
static inline eko_v eko_v_min(eko_v a, eko_v b) { return _mm512_min_ps(a, b); }
static inline eko_v eko_v_max(eko_v a, eko_v b) { return _mm512_max_ps(a, b); }

static inline eko_vi eko_v_bits(eko_v a) { return _mm512_castps_si512(a); }
static inline eko_v eko_vi_float(eko_vi i) { return _mm512_castsi512_ps(i); }
static inline eko_v eko_v_and(eko_v a, eko_v b) { return _mm512_and_ps(a, b); }
static inline eko_v eko_v_or(eko_v a, eko_v b) { return _mm512_or_ps(a, b); }
static inline eko_v eko_v_xor(eko_v a, eko_v b) { return _mm512_xor_ps(a, b); }

static inline eko_vm eko_v_lt(eko_v a, eko_v b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline eko_vm eko_v_le(eko_v a, eko_v b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
static inline eko_vm eko_v_eq(eko_v a, eko_v b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
static inline eko_vm eko_v_isnan(eko_v a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
static inline eko_vm eko_vm_or(eko_vm a, eko_vm b) { return (eko_vm)(a | b); }
static inline eko_v eko_v_select(eko_vm m, eko_v a, eko_v b) { return _mm512_mask_blend_ps(m, b, a); }

static inline eko_vi eko_vi_set1(uint32_t x) { return _mm512_set1_epi32((int)x); }
static inline eko_vi eko_vi_add(eko_vi a, eko_vi b) { return _mm512_add_epi32(a, b); }
static inline eko_vi eko_vi_sub(eko_vi a, eko_vi b) { return _mm512_sub_epi32(a, b); }
#define eko_vi_srl(a, n) _mm512_srli_epi32((a), (n))
#define eko_vi_sll(a, n) _mm512_slli_epi32((a), (n))
static inline eko_v eko_vi_to_v(eko_vi a) { return _mm512_cvtepi32_ps(a); }

static inline float eko_v_hsum(eko_v a) { return _mm512_reduce_add_ps(a); }
static inline float eko_v_hmax(eko_v a) { return _mm512_reduce_max_ps(a); }

#endif /* EMBER_KERNELS_OPTIMIZED_SIMD_AVX512_H */
