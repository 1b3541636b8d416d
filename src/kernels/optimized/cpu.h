/*
 * cpu.h — which instruction sets the optimized kernels may use.
 *
 * The CPU is asked once (CPUID and XGETBV on x86-64, so that a level counts
 * only when the OS saves its registers; getauxval on aarch64). The level in
 * use is the best the CPU and this build have, lowered by the environment
 * variable EMBER_ISA=scalar|avx2|avx512|neon when it names a level the CPU
 * has, and by eko_isa_set() (tests run every kernel at every level). Only
 * config.c reads the level; kernels never ask.
 */
#ifndef EMBER_KERNELS_OPTIMIZED_CPU_H
#define EMBER_KERNELS_OPTIMIZED_CPU_H

#include <stdbool.h>

typedef enum eko_isa {
    EKO_ISA_SCALAR = 0, /* portable C (the compiler's baseline vectors) */
    EKO_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C */
    EKO_ISA_AVX512 = 2, /* AVX-512 F/BW/DQ/VL */
    EKO_ISA_NEON = 3    /* aarch64 Advanced SIMD */
} eko_isa;

#define EKO_ISA_COUNT 4

/** Whether the CPU (and this build) can run level isa. */
bool eko_isa_supported(eko_isa isa);

/** The level in use (see above). */
eko_isa eko_isa_active(void);

/** Makes isa the level in use; false (and no change) if unsupported. */
bool eko_isa_set(eko_isa isa);

/** "scalar", "avx2", "avx512", "neon". */
const char *eko_isa_name(eko_isa isa);

/** Whether the CPU has AVX-512 VNNI (int8 dot products; quantized kernels)
 * and this build has kernels for it. */
bool eko_cpu_has_vnni(void);

/** Whether the CPU has AVX-VNNI (the VEX-encoded int8 dot products of recent
 * x86 cores, for the AVX2 level) and this build has kernels for it. */
bool eko_cpu_has_avxvnni(void);

/** Whether the CPU has the AArch64 dot-product extension (SDOT/UDOT) and this
 * build has kernels for it. */
bool eko_cpu_has_dotprod(void);

/** Test hook: while hide is true, the two functions above answer false (the
 * kernels of a CPU without the extension run; tests pick them this way). */
void eko_cpu_hide_dot_ext(bool hide);

#endif /* EMBER_KERNELS_OPTIMIZED_CPU_H */
