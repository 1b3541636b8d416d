/*
 * qs8_elt.h compiled for AVX2 (the body, vectorized by the compiler).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#define QS8_ELT_TABLE eko_qs8_elt_avx2
#define QS8_ELT_ISA EKO_ISA_AVX2
#include "qs8_elt_body.h"
#else
typedef int eko_no_avx2_qs8_elt; /* this build has no AVX2 kernels */
#endif
