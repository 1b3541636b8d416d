/*
 * simd_scalar.h — the SIMD layer in portable C: a "vector" of one float.
 *
 * Every simd_<isa>.h defines the same names (eko_v, eko_v_add, ...), so
 * that a body written once on them (vmath_simd.h, the *_body.h files)
 * compiles once per instruction set. Include exactly one per file.
 *
 *   eko_v   EKO_VLEN floats          eko_vi  EKO_VLEN 32-bit integers
 *   eko_vm  a lane mask (from a comparison), consumed by eko_v_select
 *
 * Semantics every layer keeps (the bodies rely on them):
 *   eko_v_min(a, b) = a < b ? a : b,  eko_v_max(a, b) = a > b ? a : b
 *     (the second operand when either is NaN);
 *   comparisons are false when either operand is NaN;
 *   eko_v_fma(a, b, c) = a * b + c (fused where the ISA has it);
 *   eko_v_load_part / eko_v_store_part touch only lanes [0, n), n < EKO_VLEN,
 *     and loads fill the other lanes with `fill`;
 *   eko_v_load_i8 reads EKO_VLEN int8 values, each an exact float;
 *   integer lanes wrap on overflow; shifts are logical.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_SIMD_SCALAR_H
#define EMBER_KERNELS_OPTIMIZED_SIMD_SCALAR_H

#ifdef EKO_SIMD_ISA
#error "include one simd_<isa>.h per file"
#endif
#define EKO_SIMD_ISA scalar
#define EKO_SIMD_ISA_ID EKO_ISA_SCALAR /* the eko_isa of this layer (cpu.h) */
#define EKO_VLEN 1

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef float eko_v;
typedef uint32_t eko_vi;
typedef int eko_vm;

static inline eko_v eko_v_load(const float *p) { return *p; }
static inline void eko_v_store(float *p, eko_v v) { *p = v; }
static inline eko_v eko_v_set1(float x) { return x; }
/* A vector of one lane is never partial. */
static inline eko_v eko_v_load_part(const float *p, size_t n, float fill) {
    return n > 0 ? *p : fill;
}
static inline void eko_v_store_part(float *p, eko_v v, size_t n) {
    if (n > 0) *p = v;
}
/* EKO_VLEN int8 values as floats (exact). */
static inline eko_v eko_v_load_i8(const int8_t *p) { return (float)*p; }

static inline eko_v eko_v_add(eko_v a, eko_v b) { return a + b; }
static inline eko_v eko_v_sub(eko_v a, eko_v b) { return a - b; }
static inline eko_v eko_v_mul(eko_v a, eko_v b) { return a * b; }
static inline eko_v eko_v_div(eko_v a, eko_v b) { return a / b; }
/* Two roundings: the baseline has no fused multiply-add (fmaf would be a
 * library call). */
static inline eko_v eko_v_fma(eko_v a, eko_v b, eko_v c) { return a * b + c; }
static inline eko_v eko_v_fnma(eko_v a, eko_v b, eko_v c) { return c - a * b; }
static inline eko_v eko_v_sqrt(eko_v a) { return sqrtf(a); }
static inline eko_v eko_v_min(eko_v a, eko_v b) { return a < b ? a : b; }
static inline eko_v eko_v_max(eko_v a, eko_v b) { return a > b ? a : b; }

static inline eko_vi eko_v_bits(eko_v a) {
    eko_vi i;
    memcpy(&i, &a, sizeof i);
    return i;
}
static inline eko_v eko_vi_float(eko_vi i) {
    eko_v a;
    memcpy(&a, &i, sizeof a);
    return a;
}
static inline eko_v eko_v_and(eko_v a, eko_v b) { return eko_vi_float(eko_v_bits(a) & eko_v_bits(b)); }
static inline eko_v eko_v_or(eko_v a, eko_v b) { return eko_vi_float(eko_v_bits(a) | eko_v_bits(b)); }
static inline eko_v eko_v_xor(eko_v a, eko_v b) { return eko_vi_float(eko_v_bits(a) ^ eko_v_bits(b)); }

static inline eko_vm eko_v_lt(eko_v a, eko_v b) { return a < b; }
static inline eko_vm eko_v_le(eko_v a, eko_v b) { return a <= b; }
static inline eko_vm eko_v_eq(eko_v a, eko_v b) { return a == b; }
static inline eko_vm eko_v_isnan(eko_v a) { return a != a; }
static inline eko_vm eko_vm_or(eko_vm a, eko_vm b) { return a | b; }
/* m ? a : b, lane by lane. */
static inline eko_v eko_v_select(eko_vm m, eko_v a, eko_v b) { return m ? a : b; }

static inline eko_vi eko_vi_set1(uint32_t x) { return x; }
static inline eko_vi eko_vi_add(eko_vi a, eko_vi b) { return a + b; }
static inline eko_vi eko_vi_sub(eko_vi a, eko_vi b) { return a - b; }
#define eko_vi_srl(a, n) ((eko_vi)(a) >> (n))
#define eko_vi_sll(a, n) ((eko_vi)(a) << (n))
/* Lanes holding non-negative ints below 2^24, as floats. */
static inline eko_v eko_vi_to_v(eko_vi a) { return (float)a; }

static inline float eko_v_hsum(eko_v a) { return a; }
static inline float eko_v_hmax(eko_v a) { return a; }

#endif /* EMBER_KERNELS_OPTIMIZED_SIMD_SCALAR_H */
