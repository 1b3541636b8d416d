/*
 * model_kernels.h — registers the kernels of kernels.def (and no others).
 */
#ifndef MODEL_KERNELS_H
#define MODEL_KERNELS_H

#include "ember/ember.h"

/** Registers the model's kernels. @return as ember_kernels_register(). */
ember_status model_kernels_register(void);

#endif
