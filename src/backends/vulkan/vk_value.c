/*
 * vk_value.c — what every part of VulkanBackend asks of a value: its
 * dtype's name, the bytes a tensor takes in a storage type, where the
 * host finds a tensor's bytes and an element of it. Nothing here calls the other files, so
 * vk_read.c, vk_ops.c and vk_plan.c depend on it and not on each other's
 * helpers.
 */
#include <string.h>

#include "vk_graph.h"

const char *vk_dtype_name(uint8_t dtype) {
    switch (dtype) {
    case VK_DT_BOOL: return "bool";
    case VK_DT_UINT8: return "uint8";
    case VK_DT_INT8: return "int8";
    case VK_DT_INT32: return "int32";
    case VK_DT_FLOAT16: return "float16";
    case VK_DT_FLOAT32: return "float32";
    case VK_DT_FLOAT64: return "float64";
    case VK_DT_INT64: return "int64";
    default: return "unknown";
    }
}

bool vk_storage_bytes(uint8_t st, size_t n, size_t *bytes) {
    size_t b = n == 0 ? 1 : n;
    bool one_byte = st == VK_ST_I8 || st == VK_ST_U8; /* 8-bit weights */
    if (!one_byte && ember_mul_overflow(b, st == VK_ST_F16 ? 2 : 4, &b)) return false;
    if (ember_add_overflow(b, 3, &b)) return false;
    *bytes = b / 4 * 4;
    return true;
}

uint8_t *vk_host_bytes(const vk_graph *g, const vk_value *v) {
    if (g->arena != NULL) return g->arena + v->offset;
    return g->io != NULL ? g->io + v->io_offset : NULL;
}

float vk_arena_get(const vk_graph *g, const vk_value *v, size_t i) {
    const uint8_t *p = vk_host_bytes(g, v);
    if (v->storage == VK_ST_F16) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return ember_half_to_float(h);
    }
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
}
