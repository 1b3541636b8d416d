/*
 * qs8_dwconv.h compiled for NEON (the body, vectorized by the compiler).
 */
#if defined(__aarch64__) && defined(__ARM_NEON)
#define QS8_DW_TABLE eko_qs8_dwconv_neon
#define QS8_DW_ISA EKO_ISA_NEON
#include "qs8_dwconv_body.h"
#else
typedef int eko_no_neon_qs8_dwconv; /* this build has no NEON kernels */
#endif
