/*
 * simd_neon.h — the SIMD layer on AArch64 Advanced SIMD: 4 floats per
 * vector. Same names and semantics as simd_scalar.h (read its header); only
 * for files named *_neon.c. NEON's own fmin/fmax propagate NaN, so min and
 * max are a compare and a select here, to keep the x86 semantics.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_SIMD_NEON_H
#define EMBER_KERNELS_OPTIMIZED_SIMD_NEON_H

#ifdef EKO_SIMD_ISA
#error "include one simd_<isa>.h per file"
#endif
#define EKO_SIMD_ISA neon
#define EKO_SIMD_ISA_ID EKO_ISA_NEON /* the eko_isa of this layer (cpu.h) */
#define EKO_VLEN 4

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef float32x4_t eko_v;
typedef uint32x4_t eko_vi;
typedef uint32x4_t eko_vm;

static inline eko_v eko_v_load(const float *p) { return vld1q_f32(p); }
static inline void eko_v_store(float *p, eko_v v) { vst1q_f32(p, v); }
static inline eko_v eko_v_set1(float x) { return vdupq_n_f32(x); }

/* Partial vectors go through a stack buffer: no lane outside [0, n) is touched. */
static inline eko_v eko_v_load_part(const float *p, size_t n, float fill) {
    float buf[4] = {fill, fill, fill, fill};
    for (size_t i = 0; i < n; i++) buf[i] = p[i];
    return vld1q_f32(buf);
}
static inline void eko_v_store_part(float *p, eko_v v, size_t n) {
    float buf[4];
    vst1q_f32(buf, v);
    for (size_t i = 0; i < n; i++) p[i] = buf[i];
}
static inline eko_v eko_v_load_i8(const int8_t *p) {
    int32_t w;
    memcpy(&w, p, sizeof w);
    const int16x8_t h = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(w)));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
}

static inline eko_v eko_v_add(eko_v a, eko_v b) { return vaddq_f32(a, b); }
static inline eko_v eko_v_sub(eko_v a, eko_v b) { return vsubq_f32(a, b); }
static inline eko_v eko_v_mul(eko_v a, eko_v b) { return vmulq_f32(a, b); }
static inline eko_v eko_v_div(eko_v a, eko_v b) { return vdivq_f32(a, b); }
static inline eko_v eko_v_fma(eko_v a, eko_v b, eko_v c) { return vfmaq_f32(c, a, b); }
static inline eko_v eko_v_fnma(eko_v a, eko_v b, eko_v c) { return vfmsq_f32(c, a, b); }
static inline eko_v eko_v_sqrt(eko_v a) { return vsqrtq_f32(a); }
static inline eko_v eko_v_min(eko_v a, eko_v b) { return vbslq_f32(vcltq_f32(a, b), a, b); }
static inline eko_v eko_v_max(eko_v a, eko_v b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }

static inline eko_vi eko_v_bits(eko_v a) { return vreinterpretq_u32_f32(a); }
static inline eko_v eko_vi_float(eko_vi i) { return vreinterpretq_f32_u32(i); }
static inline eko_v eko_v_and(eko_v a, eko_v b) {
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)));
}
static inline eko_v eko_v_or(eko_v a, eko_v b) {
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)));
}
static inline eko_v eko_v_xor(eko_v a, eko_v b) {
    return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)));
}

static inline eko_vm eko_v_lt(eko_v a, eko_v b) { return vcltq_f32(a, b); }
static inline eko_vm eko_v_le(eko_v a, eko_v b) { return vcleq_f32(a, b); }
static inline eko_vm eko_v_eq(eko_v a, eko_v b) { return vceqq_f32(a, b); }
static inline eko_vm eko_v_isnan(eko_v a) { return vmvnq_u32(vceqq_f32(a, a)); }
static inline eko_vm eko_vm_or(eko_vm a, eko_vm b) { return vorrq_u32(a, b); }
static inline eko_v eko_v_select(eko_vm m, eko_v a, eko_v b) { return vbslq_f32(m, a, b); }

static inline eko_vi eko_vi_set1(uint32_t x) { return vdupq_n_u32(x); }
static inline eko_vi eko_vi_add(eko_vi a, eko_vi b) { return vaddq_u32(a, b); }
static inline eko_vi eko_vi_sub(eko_vi a, eko_vi b) { return vsubq_u32(a, b); }
#define eko_vi_srl(a, n) vshrq_n_u32((a), (n))
#define eko_vi_sll(a, n) vshlq_n_u32((a), (n))
static inline eko_v eko_vi_to_v(eko_vi a) { return vcvtq_f32_u32(a); }

static inline float eko_v_hsum(eko_v a) { return vaddvq_f32(a); }
static inline float eko_v_hmax(eko_v a) { return vmaxvq_f32(a); }

#endif /* EMBER_KERNELS_OPTIMIZED_SIMD_NEON_H */
