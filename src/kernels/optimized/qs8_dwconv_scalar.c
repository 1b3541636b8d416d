/*
 * qs8_dwconv.h at the baseline level.
 */
#define QS8_DW_TABLE eko_qs8_dwconv_scalar
#define QS8_DW_ISA EKO_ISA_SCALAR
#include "qs8_dwconv_body.h"
