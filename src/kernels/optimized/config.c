/*
 * config.c — the one place that turns the instruction-set level in use
 * (cpu.h) into kernel tables. Kernels ask for a table, never for the level.
 */
#include "vmath.h"

const eko_vmath *eko_vmath_for(eko_isa isa) {
    switch (isa) {
    case EKO_ISA_SCALAR: return &eko_vmath_scalar;
#ifdef EMBER_HAVE_AVX2_KERNELS
    case EKO_ISA_AVX2: return &eko_vmath_avx2;
#endif
#ifdef EMBER_HAVE_AVX512_KERNELS
    case EKO_ISA_AVX512: return &eko_vmath_avx512;
#endif
#ifdef EMBER_HAVE_NEON_KERNELS
    case EKO_ISA_NEON: return &eko_vmath_neon;
#endif
    default: return NULL;
    }
}

const eko_vmath *eko_vmath_active(void) {
    const eko_vmath *t = eko_vmath_for(eko_isa_active());
    return t != NULL ? t : &eko_vmath_scalar;
}
