/*
 * Argument checks of the optimized kernels' fast paths (op_util.h).
 */
#include "op_util.h"

const ember_tensor *eko_f32_in(ember_value **args, size_t i) {
    if (args[i]->tag != EMBER_TAG_TENSOR) return NULL;
    const ember_tensor *t = args[i]->u.t;
    if (t == NULL || t->dim > EMBER_MAX_DIM || t->dtype != EMBER_FLOAT32) return NULL;
    if (t->numel > 0 && t->data == NULL) return NULL;
    return ember_tensor_is_contiguous(t) ? t : NULL;
}

ember_tensor *eko_f32_out(ember_value **args, size_t i) {
    if (args[i]->tag != EMBER_TAG_TENSOR) return NULL;
    ember_tensor *t = args[i]->u.t;
    if (t == NULL || t->dim > EMBER_MAX_DIM || t->dtype != EMBER_FLOAT32) return NULL;
    return t->storage == EMBER_STORAGE_CONSTANT ? NULL : t;
}

bool eko_f32_resize(ember_tensor *out, const int64_t *sizes, size_t dim) {
    if (ember_tensor_resize(out, sizes, dim) != EMBER_OK) return false;
    if (out->numel > 0 && out->data == NULL) return false;
    return ember_tensor_is_contiguous(out);
}

bool eko_overlap(const ember_tensor *a, const ember_tensor *b) {
    if (a->nbytes == 0 || b->nbytes == 0 || a->data == NULL || b->data == NULL) return false;
    const uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
    return a0 < b0 + b->nbytes && b0 < a0 + a->nbytes;
}

bool eko_arg_is_one(ember_value **args, size_t i) {
    const ember_value *v = args[i];
    return (v->tag == EMBER_TAG_INT && v->u.i == 1) || (v->tag == EMBER_TAG_DOUBLE && v->u.d == 1.0);
}

void eko_sizes(const ember_tensor *t, size_t *out) {
    for (uint32_t d = 0; d < t->dim; d++) out[d] = (size_t)t->sizes[d];
}
