/*
 * Zero-copy loader over bytes already in memory (RAM or read-only flash).
 */
#include "core/internal.h"

static ember_status buffer_size(void *ctx, uint64_t *out) {
    const ember_buffer_loader *l = ctx;
    *out = l->size;
    return EMBER_OK;
}

static ember_status buffer_load(void *ctx, uint64_t offset, size_t size, ember_segment_kind kind,
                                ember_buffer *out) {
    const ember_buffer_loader *l = ctx;
    (void)kind;
    if (offset > l->size || size > l->size - offset)
        return ember_set_error(EMBER_ERR_TRUNCATED,
                               "load of %zu bytes at offset %llu past end of %zu-byte buffer", size,
                               (unsigned long long)offset, l->size);
    out->data = l->data + offset;
    out->size = size;
    out->owner = NULL;
    return EMBER_OK;
}

void ember_buffer_loader_init(ember_buffer_loader *loader, const void *data, size_t size) {
    loader->base.struct_size = sizeof(ember_data_loader);
    loader->base.ctx = loader;
    loader->base.size = buffer_size;
    loader->base.load = buffer_load;
    loader->base.release = NULL;
    loader->data = data;
    loader->size = data != NULL ? size : 0;
}
