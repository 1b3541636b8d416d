/*
 * config.c — the one place that turns the instruction-set level in use
 * (cpu.h) into kernel tables. Kernels ask for a table, never for the level.
 */
#include <stddef.h>

#include "attention.h"
#include "f32_dwconv.h"
#include "f32_gemv.h"
#include "f32_rows.h"
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
