/*
 * qs8_elt.h at the baseline level.
 */
#define QS8_ELT_TABLE eko_qs8_elt_scalar
#define QS8_ELT_ISA EKO_ISA_SCALAR
#include "qs8_elt_body.h"
