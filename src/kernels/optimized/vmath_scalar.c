/*
 * vmath.h in portable C (one float per "vector"): the level every CPU has.
 */
#include "simd_scalar.h"
#include "vmath_body.h"
