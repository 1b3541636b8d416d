/*
 * Kernel and backend registries: fixed tables filled at start-up, searched
 * only at method load.
 */
#include <string.h>

#include "core/internal.h"

static struct { const ember_kernel *table; size_t count; } g_kernels[EMBER_MAX_KERNEL_TABLES];
static size_t g_num_kernel_tables;

static const ember_backend *g_backends[EMBER_MAX_BACKENDS];
static size_t g_num_backends;

/* True if the NUL-terminated s equals the len bytes at name. */
static bool name_equals(const char *s, const char *name, size_t len) {
    return strlen(s) == len && memcmp(s, name, len) == 0;
}

ember_status ember_kernels_register(const ember_kernel *table, size_t count) {
    if (table == NULL && count != 0)
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "kernel table is NULL");
    for (size_t i = 0; i < count; i++)
        if (table[i].name == NULL || table[i].fn == NULL)
            return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "kernel table entry %zu is empty", i);
    if (g_num_kernel_tables == EMBER_MAX_KERNEL_TABLES)
        return ember_set_error(EMBER_ERR_TABLE_FULL, "more than %d kernel tables",
                               EMBER_MAX_KERNEL_TABLES);
    g_kernels[g_num_kernel_tables].table = table;
    g_kernels[g_num_kernel_tables].count = count;
    g_num_kernel_tables++;
    return EMBER_OK;
}

void ember_kernels_clear(void) { g_num_kernel_tables = 0; }

ember_kernel_fn ember_kernel_find(const char *name, size_t len) {
    /* Later tables win, so applications can override built-in kernels. */
    for (size_t t = g_num_kernel_tables; t-- > 0;)
        for (size_t i = 0; i < g_kernels[t].count; i++)
            if (name_equals(g_kernels[t].table[i].name, name, len)) return g_kernels[t].table[i].fn;
    return NULL;
}

ember_status ember_backend_register(const ember_backend *backend) {
    if (backend == NULL || backend->id == NULL || backend->init == NULL ||
        backend->execute == NULL || backend->struct_size < sizeof(ember_backend))
        return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "backend table incomplete");
    size_t len = strlen(backend->id);
    for (size_t i = 0; i < g_num_backends; i++) {
        if (name_equals(g_backends[i]->id, backend->id, len)) {
            g_backends[i] = backend;
            return EMBER_OK;
        }
    }
    if (g_num_backends == EMBER_MAX_BACKENDS)
        return ember_set_error(EMBER_ERR_TABLE_FULL, "more than %d backends", EMBER_MAX_BACKENDS);
    g_backends[g_num_backends++] = backend;
    return EMBER_OK;
}

void ember_backends_clear(void) { g_num_backends = 0; }

const ember_backend *ember_backend_find(const char *id, size_t len) {
    for (size_t i = 0; i < g_num_backends; i++)
        if (name_equals(g_backends[i]->id, id, len)) return g_backends[i];
    return NULL;
}

struct ember_threadpool *ember_kernel_threadpool(const ember_kernel_ctx *ctx) {
    return ctx != NULL ? ctx->threadpool : NULL;
}

void *ember_kernel_scratch(ember_kernel_ctx *ctx, size_t size, size_t align) {
    if (ctx == NULL || ctx->scratch == NULL) return NULL;
    return ember_alloc(&ctx->scratch->base, size, align);
}
