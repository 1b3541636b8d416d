/*
 * my_ops.h — the custom operators of this example, for the application.
 *
 *   my_ops::squared_relu.out(Tensor x, float scale=1.0, *, Tensor(a!) out) -> Tensor(a!)
 *       out = scale * relu(x)^2 (float32)
 */
#ifndef MY_OPS_H
#define MY_OPS_H

#include "ember/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Registers the kernels of my_ops (a static table, not copied) above those
 * registered before. Call it at start-up, after the built-in kernels.
 * @return as ember_kernels_register().
 */
ember_status my_ops_kernels_register(void);

#ifdef __cplusplus
}
#endif

#endif /* MY_OPS_H */
