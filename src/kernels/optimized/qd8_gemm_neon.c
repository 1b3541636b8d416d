/*
 * qd8_gemm.h micro-kernel on AArch64 Advanced SIMD (widening multiplies;
 * every AArch64 CPU). The primitives are in qd8_neon.h.
 */
#include "qd8_gemm.h"

#if defined(__aarch64__)
#define QD8_FN eko_qd8_gemm_neon
#include "qd8_neon.h"
#include "qd8_gemm_body.h"
#else
typedef int eko_no_neon_qd8_gemm; /* not an AArch64 build */
#endif
