/*
 * real_math.h — type-generic real math for kernels written once over a
 * compute type CT (float or double): ek_exp(x) calls expf for a float and
 * exp for anything else, as <tgmath.h> would. <tgmath.h> also dispatches to
 * the complex functions, and needs all of them declared, which some C
 * libraries lack (newlib has no cexpl or cpowl): these macros need only
 * <math.h>.
 */
#ifndef EMBER_KERNELS_REAL_MATH_H
#define EMBER_KERNELS_REAL_MATH_H

#include <math.h>

#define EK_REAL1(ff, fd, x) _Generic((x), float: ff, default: fd)(x)
#define EK_REAL2(ff, fd, x, y) _Generic((x) + (y), float: ff, default: fd)((x), (y))

#define ek_exp(x) EK_REAL1(expf, exp, x)
#define ek_log(x) EK_REAL1(logf, log, x)
#define ek_sqrt(x) EK_REAL1(sqrtf, sqrt, x)
#define ek_fabs(x) EK_REAL1(fabsf, fabs, x)
#define ek_pow(x, y) EK_REAL2(powf, pow, x, y)

#endif /* EMBER_KERNELS_REAL_MATH_H */
