/*
 * f32_rows.h in portable C (one float per "vector").
 */
#include "simd_scalar.h"
#include "f32_rows_body.h"
