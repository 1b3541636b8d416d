/*
 * Tensor shapes: derived strides and bounded resize.
 */
#include "core/internal.h"

bool ember_shape_bytes(const int32_t *sizes, size_t dim, size_t elem_size, int64_t *numel,
                       size_t *nbytes) {
    /* Strides multiply the sizes with zeros counted as one, so that product
     * must fit in int64 too, even when numel is 0. */
    size_t n = 1, span = 1;
    for (size_t i = 0; i < dim; i++) {
        if (sizes[i] < 0 || ember_mul_overflow(n, (size_t)sizes[i], &n) ||
            ember_mul_overflow(span, sizes[i] > 1 ? (size_t)sizes[i] : 1u, &span) ||
            span > (size_t)INT64_MAX)
            return false;
    }
    size_t bytes;
    if (n > (size_t)INT64_MAX || ember_mul_overflow(n, elem_size, &bytes)) return false;
    *numel = (int64_t)n;
    *nbytes = bytes;
    return true;
}

bool ember_tensor_compute_strides(ember_tensor *t) {
    /* dim_order lists dimensions outermost first: the innermost has stride 1. */
    int64_t stride = 1;
    for (size_t k = t->dim; k-- > 0;) {
        uint8_t d = t->dim_order[k];
        if (d >= t->dim) return false;
        t->strides[d] = stride;
        int64_t s = t->sizes[d] > 1 ? t->sizes[d] : 1;
        /* ember_shape_bytes() bounded this product when the shape was set. */
        stride *= s;
    }
    return true;
}

ember_status ember_tensor_resize(ember_tensor *t, const int64_t *sizes, size_t dim) {
    if (t == NULL || (sizes == NULL && dim != 0))
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "resize: NULL argument");
    if (dim != t->dim)
        return ember_set_error(EMBER_ERR_SHAPE_MISMATCH, "resize: rank %zu, tensor has rank %u",
                               dim, (unsigned)t->dim);
    int32_t next[EMBER_MAX_DIM];
    for (size_t i = 0; i < dim; i++) {
        int64_t s = sizes[i];
        int32_t bound = t->bounds[i];
        if (s < 0 || s > INT32_MAX)
            return ember_set_error(EMBER_ERR_SHAPE_MISMATCH, "resize: size %lld of dim %zu invalid",
                                   (long long)s, i);
        if (t->dynamism == EMBER_SHAPE_STATIC ? s != bound
                                              : (t->dynamism == EMBER_SHAPE_DYNAMIC_BOUND && s > bound))
            return ember_set_error(EMBER_ERR_SHAPE_MISMATCH,
                                   "resize: dim %zu to %lld, %s %d", i, (long long)s,
                                   t->dynamism == EMBER_SHAPE_STATIC ? "static size is" : "bound is",
                                   (int)bound);
        next[i] = (int32_t)s;
    }
    int64_t numel;
    size_t nbytes;
    if (!ember_shape_bytes(next, dim, ember_dtype_size(t->dtype), &numel, &nbytes))
        return ember_set_error(EMBER_ERR_SHAPE_MISMATCH, "resize: size overflows");
    if (t->data != NULL && nbytes > t->capacity)
        return ember_set_error(EMBER_ERR_SHAPE_MISMATCH,
                               "resize: needs %zu bytes, storage holds %zu", nbytes, t->capacity);
    for (size_t i = 0; i < dim; i++) t->sizes[i] = next[i];
    t->numel = numel;
    t->nbytes = nbytes;
    ember_tensor_compute_strides(t);
    return EMBER_OK;
}

bool ember_tensor_is_contiguous(const ember_tensor *t) {
    int64_t expected = 1;
    for (size_t i = t->dim; i-- > 0;) {
        if (t->sizes[i] != 1 && t->strides[i] != expected) return false;
        expected *= t->sizes[i] > 1 ? t->sizes[i] : 1;
    }
    return true;
}
