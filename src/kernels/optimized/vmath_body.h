/*
 * vmath_body.h — the array loops of vmath.h, written once on the SIMD
 * layer. A vmath_<isa>.c (AVX2, AVX-512, NEON) includes its simd_<isa>.h and
 * then this file, which defines that level's table eko_vmath_<isa>.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_VMATH_BODY_H
#define EMBER_KERNELS_OPTIMIZED_VMATH_BODY_H

#include "vmath.h"
#include "vmath_simd.h"

#define EKO_VM_CAT2(a, b) a##_##b
#define EKO_VM_CAT(a, b) EKO_VM_CAT2(a, b)

/* Whole vectors, then one partial vector (its other lanes computed on 0). */
#define EKO_VMATH_ARRAY(NAME, VFN)                                                                 \
    static void NAME(size_t n, const float *x, float *y) {                                         \
        size_t i = 0;                                                                              \
        for (; i + EKO_VLEN <= n; i += EKO_VLEN) eko_v_store(y + i, VFN(eko_v_load(x + i)));      \
        if (i < n) eko_v_store_part(y + i, VFN(eko_v_load_part(x + i, n - i, 0.0f)), n - i);       \
    }

EKO_VMATH_ARRAY(vm_exp, eko_v_exp)
EKO_VMATH_ARRAY(vm_log, eko_v_log)
EKO_VMATH_ARRAY(vm_tanh, eko_v_tanh)
EKO_VMATH_ARRAY(vm_erf, eko_v_erf)
EKO_VMATH_ARRAY(vm_sigmoid, eko_v_sigmoid)
EKO_VMATH_ARRAY(vm_silu, eko_v_silu)
EKO_VMATH_ARRAY(vm_hardswish, eko_v_hardswish)
EKO_VMATH_ARRAY(vm_gelu, eko_v_gelu)
EKO_VMATH_ARRAY(vm_gelu_tanh, eko_v_gelu_tanh)

const eko_vmath EKO_VM_CAT(eko_vmath, EKO_SIMD_ISA) = {
    .isa = EKO_SIMD_ISA_ID,
    .exp = vm_exp,
    .log = vm_log,
    .tanh = vm_tanh,
    .erf = vm_erf,
    .sigmoid = vm_sigmoid,
    .silu = vm_silu,
    .hardswish = vm_hardswish,
    .gelu = vm_gelu,
    .gelu_tanh = vm_gelu_tanh,
};

#endif /* EMBER_KERNELS_OPTIMIZED_VMATH_BODY_H */
