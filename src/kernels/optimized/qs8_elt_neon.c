/*
 * qs8_elt.h compiled for NEON (the body, vectorized by the compiler).
 */
#if defined(__aarch64__) && defined(__ARM_NEON)
#define QS8_ELT_TABLE eko_qs8_elt_neon
#define QS8_ELT_ISA EKO_ISA_NEON
#include "qs8_elt_body.h"
#else
typedef int eko_no_neon_qs8_elt; /* this build has no NEON kernels */
#endif
