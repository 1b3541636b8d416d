/*
 * f32_gemv.h in portable C (one float per "vector").
 */
#include "simd_scalar.h"
#include "f32_gemv_body.h"
