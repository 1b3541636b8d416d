/*
 * Memory plan of an XNNPACK subgraph (xnn_graph.h): one arena holds every
 * intermediate value and the scratch each node needs while it runs. Nothing
 * in it outlives an execute, so the arena is the method's workspace that
 * all its delegates share (ember_backend_request_workspace): a model cut
 * into one delegate per layer keeps one layer's intermediates in memory,
 * and a short prompt touches the pages of one arena, not of every layer's. Values whose lifetimes (from the node that
 * makes them to the last node that reads them) overlap get disjoint bytes;
 * the rest share. Placement is greedy, largest first, at the lowest offset
 * that fits (best enough for the chains of a neural network). Externals live
 * in the delegate's argument tensors and constants in their own memory.
 */
#include <stdlib.h>
#include <string.h>

#include "xnn_graph.h"

#define PLAN_ALIGN 64

typedef struct item {
    size_t bytes, offset;
    int32_t first, last;
    uint32_t value;      /* value index, or XNN_INVALID_ID for node scratch */
    uint32_t node;       /* for scratch */
} item;

static int by_size_desc(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->first < y->first ? -1 : x->first > y->first; /* stable by first use */
}

typedef struct span {
    size_t offset, bytes;
} span;

static int by_offset(const void *a, const void *b) {
    size_t x = ((const span *)a)->offset, y = ((const span *)b)->offset;
    return x < y ? -1 : x > y;
}

static size_t round_up(size_t n) { return (n + PLAN_ALIGN - 1) & ~(size_t)(PLAN_ALIGN - 1); }

ember_status xnn_plan(xnn_graph *g, const ember_backend_init_ctx *ctx) {
    ember_allocator *a = ctx->allocator;
    /* lifetimes: made by value.first (xnn_read), last read by */
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        const xnn_node *n = &g->nodes[ni];
        for (uint32_t k = 0; k < n->nin; k++)
            if (n->in[k] != XNN_INVALID_ID) g->values[n->in[k]].last = (int32_t)ni;
    }
    size_t count = 0;
    for (uint32_t i = 0; i < g->num_values; i++) {
        xnn_value *v = &g->values[i];
        v->planned = v->flags == 0 && v->constant == NULL && v->first >= 0;
        if (v->planned) count++;
    }
    for (uint32_t ni = 0; ni < g->num_nodes; ni++)
        if (g->nodes[ni].scratch_bytes > 0) count++;
    item *items = ember_alloc(a, sizeof(item) * (count + 1), _Alignof(item));
    if (items == NULL) return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "xnnpack: no memory");
    size_t k = 0;
    for (uint32_t i = 0; i < g->num_values; i++) {
        xnn_value *v = &g->values[i];
        if (!v->planned) continue;
        size_t bytes;
        /* the larger of the serialized dims and the shape inferred at init */
        size_t dims_bytes, shape_bytes;
        if (!xnn_value_bytes(v, v->dims, &dims_bytes) || !xnn_value_bytes(v, v->shape, &shape_bytes))
            return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "xnnpack: value %u is too large", i);
        bytes = dims_bytes > shape_bytes ? dims_bytes : shape_bytes;
        v->capacity = bytes;
        /* the int8 products read qint8 rows 4 bytes at a time (qd8_gemm.h) */
        if (v->dtype == XNN_DT_QINT8) bytes += EKO_QD8_X_PAD;
        if (bytes > SIZE_MAX - PLAN_ALIGN)
            return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "xnnpack: value %u is too large", i);
        items[k++] = (item){round_up(bytes), 0, v->first, v->last < v->first ? v->first : v->last,
                            i, 0};
    }
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        size_t bytes = g->nodes[ni].scratch_bytes;
        if (bytes == 0) continue;
        if (bytes > SIZE_MAX - PLAN_ALIGN)
            return xnn_node_fail(g, ni, EMBER_ERR_INVALID_PROGRAM, "scratch is too large");
        items[k++] = (item){round_up(bytes), 0, (int32_t)ni, (int32_t)ni, XNN_INVALID_ID, ni};
    }
    qsort(items, count, sizeof(item), by_size_desc);
    /* the placed items alive at the same time as the one being placed */
    span *alive = ember_alloc(a, sizeof(span) * (count + 1), _Alignof(span));
    if (alive == NULL) return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "xnnpack: no memory");
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        size_t n = 0;
        for (size_t o = 0; o < i; o++)
            if (!(items[o].last < items[i].first || items[o].first > items[i].last))
                alive[n++] = (span){items[o].offset, items[o].bytes};
        qsort(alive, n, sizeof(span), by_offset);
        /* the first gap, from offset 0 up, that holds it */
        size_t at = 0;
        for (size_t j = 0; j < n; j++) {
            if (alive[j].offset >= at && alive[j].offset - at >= items[i].bytes) break;
            if (alive[j].offset + alive[j].bytes > at) at = alive[j].offset + alive[j].bytes;
        }
        items[i].offset = at;
        size_t end;
        if (ember_add_overflow(at, items[i].bytes, &end))
            return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "xnnpack: arena overflows");
        if (end > total) total = end;
    }
    g->arena_bytes = total;
    g->arena = NULL;
    g->workspace = NULL;
    if (total > 0) {
        ember_status st = ember_backend_request_workspace(ctx, total, PLAN_ALIGN, &g->workspace);
        if (st != EMBER_OK) return ember_backend_fail(st, "xnnpack: %s", ember_last_error());
    }
    for (size_t i = 0; i < count; i++) {
        if (items[i].value != XNN_INVALID_ID)
            g->values[items[i].value].offset = items[i].offset;
        else
            g->nodes[items[i].node].scratch_offset = items[i].offset;
    }
    return EMBER_OK;
}

void xnn_bind_arena(xnn_graph *g) {
    uint8_t *arena = g->workspace != NULL ? *g->workspace : NULL;
    if (arena == g->arena) return;
    g->arena = arena;
    for (uint32_t i = 0; i < g->num_values; i++)
        if (g->values[i].planned) g->values[i].data = arena + g->values[i].offset;
}
