/*
 * config.c — the one place that turns the instruction-set level in use
 * (cpu.h) into kernel tables. Kernels ask for a table, never for the level.
 */
#include <stddef.h>

#include "attention.h"
#include "f32_dwconv.h"
#include "f32_gemv.h"
#include "f32_rows.h"
#include "qd8_gemm.h"
#include "qs8_dwconv.h"
#include "qs8_elt.h"
#include "vmath.h"

/* Each table by level; NULL where this build has no kernels of the level. */
#ifdef EMBER_HAVE_AVX2_KERNELS
#define IF_AVX2(x) (&(x))
#else
#define IF_AVX2(x) NULL
#endif
#ifdef EMBER_HAVE_AVX512_KERNELS
#define IF_AVX512(x) (&(x))
#else
#define IF_AVX512(x) NULL
#endif
#ifdef EMBER_HAVE_NEON_KERNELS
#define IF_NEON(x) (&(x))
#else
#define IF_NEON(x) NULL
#endif

#define TABLES(T, PREFIX)                                                                          \
    static const T *const PREFIX##_tables[EKO_ISA_COUNT] = {                                       \
        [EKO_ISA_SCALAR] = &PREFIX##_scalar,                                                       \
        [EKO_ISA_AVX2] = IF_AVX2(PREFIX##_avx2),                                                   \
        [EKO_ISA_AVX512] = IF_AVX512(PREFIX##_avx512),                                             \
        [EKO_ISA_NEON] = IF_NEON(PREFIX##_neon),                                                   \
    };                                                                                             \
    const T *PREFIX##_for(eko_isa isa) {                                                           \
        return (unsigned)isa < EKO_ISA_COUNT ? PREFIX##_tables[isa] : NULL;                        \
    }                                                                                              \
    const T *PREFIX##_active(void) {                                                               \
        const T *t = PREFIX##_for(eko_isa_active());                                               \
        return t != NULL ? t : &PREFIX##_scalar;                                                   \
    }

TABLES(eko_vmath, eko_vmath)
TABLES(eko_f32_rows, eko_f32_rows)
TABLES(eko_f32_gemv, eko_f32_gemv)
TABLES(eko_f32_attn, eko_f32_attn)
TABLES(eko_f32_dwconv, eko_f32_dwconv)
TABLES(eko_qs8_dwconv, eko_qs8_dwconv)
TABLES(eko_qs8_elt, eko_qs8_elt)

/* Dynamically quantized products (qd8_gemm.h): one kernel per level, and
 * where the CPU has the level's int8 dot-product extension, the kernel on
 * it: AVX-VNNI for AVX2, AVX-512 VNNI for AVX-512 (which otherwise takes
 * the best AVX2 kernel), DOTPROD for AArch64. Later rows are preferred. */
static const eko_qd8_gemm_config g_qd8[] = {
    {"scalar", EKO_ISA_SCALAR, 4, false, 0, eko_qd8_gemm_scalar, eko_qd8_gemm_scalar,
     eko_qd8_range_scalar, eko_qd8_values_scalar, NULL},
#ifdef EMBER_HAVE_AVX2_KERNELS
    {"avx2", EKO_ISA_AVX2, 4, false, 0x80, eko_qd8_gemm_avx2, eko_qd8_gemm_avx2_s8,
     eko_qd8_range_avx2, eko_qd8_values_avx2, NULL},
#endif
#ifdef EMBER_HAVE_AVX2VNNI_KERNELS
    {"avx2vnni", EKO_ISA_AVX2, 4, true, 0x80, eko_qd8_gemm_avx2vnni, eko_qd8_gemm_avx2vnni_s8,
     eko_qd8_range_avx2, eko_qd8_values_avx2, NULL},
#endif
#ifdef EMBER_HAVE_AVX512VNNI_KERNELS
    {"avx512vnni", EKO_ISA_AVX512, 8, true, 0x80, eko_qd8_gemm_avx512vnni,
     eko_qd8_gemm_avx512vnni_s8, eko_qd8_range_avx512, eko_qd8_values_avx512,
     eko_qd8_gemm_avx512vnni_s8_q},
#endif
#ifdef EMBER_HAVE_NEON_KERNELS
    {"neon", EKO_ISA_NEON, 4, false, 0, eko_qd8_gemm_neon, eko_qd8_gemm_neon, eko_qd8_range_scalar,
     eko_qd8_values_scalar, NULL},
#endif
#ifdef EMBER_HAVE_NEONDOT_KERNELS
    {"neondot", EKO_ISA_NEON, 4, true, 0, eko_qd8_gemm_neondot, eko_qd8_gemm_neondot,
     eko_qd8_range_scalar, eko_qd8_values_scalar, NULL},
#endif
};

const eko_qd8_gemm_config *eko_qd8_gemm_config_at(size_t i) {
    return i < sizeof g_qd8 / sizeof g_qd8[0] ? &g_qd8[i] : NULL;
}

bool eko_qd8_gemm_config_supported(const eko_qd8_gemm_config *cfg) {
    if (!eko_isa_supported(cfg->isa)) return false;
    if (!cfg->dot_ext) return true;
    switch (cfg->isa) {
    case EKO_ISA_AVX2: return eko_cpu_has_avxvnni();
    case EKO_ISA_AVX512: return eko_cpu_has_vnni();
    case EKO_ISA_NEON: return eko_cpu_has_dotprod();
    default: return false;
    }
}

const eko_qd8_gemm_config *eko_qd8_gemm_config_active(void) {
    const eko_isa level = eko_isa_active();
    const eko_qd8_gemm_config *best = &g_qd8[0];
    /* the last supported set of the level in use; AVX-512 without VNNI
     * takes AVX2's */
    for (size_t i = 0; i < sizeof g_qd8 / sizeof g_qd8[0]; i++) {
        const eko_qd8_gemm_config *c = &g_qd8[i];
        const bool fits = c->isa == level || (level == EKO_ISA_AVX512 && c->isa == EKO_ISA_AVX2);
        if (fits && eko_qd8_gemm_config_supported(c)) best = c;
    }
    return best;
}
