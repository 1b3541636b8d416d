/*
 * f32_dwconv.h in portable C (one float per "vector").
 */
#include "simd_scalar.h"
#include "f32_dwconv_body.h"
