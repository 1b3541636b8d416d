/*
 * Internal declarations shared by the core runtime's modules. Not installed.
 */
#ifndef EMBER_CORE_INTERNAL_H
#define EMBER_CORE_INTERNAL_H

#include <stdarg.h>

#include "ember/ember.h"
#include "ember/kernel.h"
#include "ember/backend.h"

/** Records the last error message (printf-style) and returns status. */
ember_status ember_set_error(ember_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Same, with a va_list. */
ember_status ember_set_error_v(ember_status status, const char *fmt, va_list ap);

/**
 * Records a message and returns EMBER_ERR_INVALID_PROGRAM: how the readers of
 * untrusted bytes (programs, data maps, bundled programs) refuse them.
 */
ember_status ember_invalid_program(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/** Returns the status of expr from the enclosing function unless it is EMBER_OK. */
#define EMBER_TRY(expr)                                                                           \
    do {                                                                                          \
        ember_status st_ = (expr);                                                                \
        if (st_ != EMBER_OK) return st_;                                                          \
    } while (0)

/** Prepends "prefix: " to the current last error message. */
void ember_error_prefix(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/** Context handed to kernels; lives inside a method. */
struct ember_kernel_ctx {
    ember_arena *scratch;    /* reset after every instruction */
    const char *op_name;     /* kernel key of the running instruction */
    size_t instruction;      /* index of the running instruction */
    struct ember_threadpool *threadpool; /* the method's threads; NULL: the caller only */
};

/** Allocates from an allocator; NULL on failure or overflow. */
static inline void *ember_alloc(ember_allocator *a, size_t size, size_t align) {
    return a->alloc(a->ctx, size == 0 ? 1 : size, align);
}

/**
 * An allocator over the platform heap that frees everything at once: each
 * block carries a link to the previous one.
 */
typedef struct ember_heap_allocator {
    ember_allocator base;
    void *blocks; /* most recent block, linked through its header */
} ember_heap_allocator;

void ember_heap_allocator_init(ember_heap_allocator *h);
void ember_heap_allocator_release(ember_heap_allocator *h);

/** Derives strides from sizes and dim order; false if dim order is invalid. */
bool ember_tensor_compute_strides(ember_tensor *t);

/** numel and nbytes for sizes[0..dim) of dtype, overflow-checked. */
bool ember_shape_bytes(const int32_t *sizes, size_t dim, size_t elem_size, int64_t *numel,
                       size_t *nbytes);

#endif /* EMBER_CORE_INTERNAL_H */
