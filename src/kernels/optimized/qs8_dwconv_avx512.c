/*
 * qs8_dwconv.h compiled for AVX512 (the body, vectorized by the compiler).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__)
#define QS8_DW_TABLE eko_qs8_dwconv_avx512
#define QS8_DW_ISA EKO_ISA_AVX512
#include "qs8_dwconv_body.h"
#else
typedef int eko_no_avx512_qs8_dwconv; /* this build has no AVX512 kernels */
#endif
