/*
 * qd8_gemm.h micro-kernel on AArch64 with the dot-product extension (SDOT:
 * four int8 products into each int32 lane). Compiled with that extension
 * (EmberIsa.cmake) and picked only where the CPU reports it (cpu.c).
 */
#include "qd8_gemm.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#define QD8_FN eko_qd8_gemm_neondot
#define QD8_NEON_SDOT 1
#include "qd8_neon.h"
#include "qd8_gemm_body.h"
#else
typedef int eko_no_neondot_qd8_gemm; /* this build has no dot-product kernels */
#endif
