/*
 * qs8_elt.h compiled for AVX512 (the body, vectorized by the compiler).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__)
#define QS8_ELT_TABLE eko_qs8_elt_avx512
#define QS8_ELT_ISA EKO_ISA_AVX512
#include "qs8_elt_body.h"
#else
typedef int eko_no_avx512_qs8_elt; /* this build has no AVX512 kernels */
#endif
