/*
 * f32_gemv.h on AArch64 Advanced SIMD (4 floats per vector).
 */
#if defined(__aarch64__) && defined(__ARM_NEON)
#include "simd_neon.h"
#include "f32_gemv_body.h"
#else
typedef int eko_no_neon_gemv; /* this build has no NEON kernels */
#endif
