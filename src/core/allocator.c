/*
 * Allocators: the caller-owned bump arena and the platform-heap chain.
 */
#include <string.h>

#include "core/internal.h"

static void *arena_alloc(void *ctx, size_t size, size_t align) {
    ember_arena *a = ctx;
    if (align == 0 || (align & (align - 1)) != 0) return NULL;
    uintptr_t base = (uintptr_t)a->buf;
    size_t start;
    if (ember_add_overflow((size_t)(base + a->used), align - 1, &start)) return NULL;
    start = (start & ~(align - 1)) - (size_t)base;
    size_t end;
    if (ember_add_overflow(start, size, &end) || end > a->size) return NULL;
    a->used = end;
    if (end > a->peak) a->peak = end;
    return a->buf + start;
}

void ember_arena_init(ember_arena *arena, void *buf, size_t size) {
    arena->base.ctx = arena;
    arena->base.alloc = arena_alloc;
    arena->buf = buf;
    arena->size = buf != NULL ? size : 0;
    arena->used = 0;
    arena->peak = 0;
}

void ember_arena_reset(ember_arena *arena) { arena->used = 0; }

/* Header before each heap block: the link to the previous block. Aligned to
 * the largest alignment the runtime asks for. */
#define HEAP_HEADER 64

static void *heap_alloc(void *ctx, size_t size, size_t align) {
    ember_heap_allocator *h = ctx;
    size_t total;
    if (align > HEAP_HEADER || ember_add_overflow(size, HEAP_HEADER, &total)) return NULL;
    uint8_t *block = ember_platform_alloc(total, HEAP_HEADER);
    if (block == NULL) return NULL;
    memcpy(block, &h->blocks, sizeof h->blocks);
    h->blocks = block;
    return block + HEAP_HEADER;
}

void ember_heap_allocator_init(ember_heap_allocator *h) {
    h->base.ctx = h;
    h->base.alloc = heap_alloc;
    h->blocks = NULL;
}

void ember_heap_allocator_release(ember_heap_allocator *h) {
    while (h->blocks != NULL) {
        void *prev;
        memcpy(&prev, h->blocks, sizeof prev);
        ember_platform_free(h->blocks);
        h->blocks = prev;
    }
}
