/*
 * f32_dwconv.h on AArch64 Advanced SIMD (4 floats per vector).
 */
#if defined(__aarch64__) && defined(__ARM_NEON)
#include "simd_neon.h"
#include "f32_dwconv_body.h"
#else
typedef int eko_no_neon_dwconv; /* this build has no NEON kernels */
#endif
