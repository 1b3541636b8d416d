/*
 * VulkanBackend's memory plan, made once at init.
 *
 * Each tensor first gets its storage type (vk_graph.h): float16 tensors
 * VK_ST_F16 where the delegate may use 16-bit storage, int8 and uint8
 * weights VK_ST_I8 and VK_ST_U8 (vk_read.c takes 8-bit tensors only as
 * weights) unless EMBER_VULKAN_STORAGE=float32, the rest VK_ST_F32; a tensor
 * bound by a shader without storage accessors stays VK_ST_F32, and so does an
 * 8-bit weight bound where the accessors read no bytes (bindings 0, 4, 5).
 * Sizes below are bytes in that storage. A view that copies its input
 * whole shares the input's bytes instead where that is safe (plan_aliases),
 * and a node that passes partial results between its dispatches gets a
 * scratch value of its own (add_scratch: the split attention's parts).
 *
 * Three GPU buffers per delegate:
 *   weights  every constant tensor, one after another;
 *   arena    the delegate's inputs, outputs and intermediates, sized for
 *            their upper-bound shapes; tensors whose lifetimes (first to
 *            last operator that names them) do not overlap share bytes;
 *            placed largest first at the lowest offset that fits;
 *   control  the status word, then one parameter block and one indirect
 *            dispatch record per dispatch (rewritten before each execute).
 * Offsets are multiples of the device's storage-buffer offset alignment.
 */
#include <string.h>

#include "vk_graph.h"

static bool align_up(size_t x, size_t a, size_t *out) {
    size_t r;
    if (ember_add_overflow(x, a - 1, &r)) return false;
    *out = r / a * a;
    return true;
}

static void touch(vk_graph *g, uint32_t vi, uint32_t at) {
    vk_value *v = &g->values[vi];
    if (v->kind == VK_V_VALUELIST) {
        for (uint32_t k = 0; k < v->list_len; k++) touch(g, (uint32_t)g->ints[v->list_at + k], at);
        return;
    }
    if (v->kind != VK_V_TENSOR) return;
    if (v->alias_of != VK_NONE) v = &g->values[v->alias_of]; /* a view keeps its base alive */
    if (at < v->first_use) v->first_use = at;
    if (at > v->last_use) v->last_use = at;
}

/* A scratch value (float32 [count]) for each node that needs one
 * (vk_op_scratch): g->values grows by one value per such node. */
static ember_status add_scratch(vk_graph *g, ember_allocator *a) {
    uint32_t extra = 0;
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        g->nodes[ni].scratch = VK_NONE;
        extra += vk_op_scratch(g, &g->nodes[ni]) != 0;
    }
    if (extra == 0) return EMBER_OK;
    if (g->num_values > UINT32_MAX - 1u - extra)
        return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "vulkan: too many values");
    uint32_t total = g->num_values + extra;
    vk_value *values = ember_alloc(a, sizeof(vk_value) * (total + 1u), _Alignof(vk_value));
    if (values == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory for scratch values");
    memcpy(values, g->values, sizeof(vk_value) * g->num_values);
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        size_t count = vk_op_scratch(g, &g->nodes[ni]);
        if (count == 0) continue;
        if (count > UINT32_MAX)
            return vk_node_fail(g, &g->nodes[ni], EMBER_ERR_INVALID_PROGRAM, "scratch too large");
        vk_value *v = &values[g->num_values];
        memset(v, 0, sizeof *v);
        v->kind = VK_V_TENSOR;
        v->dtype = VK_DT_FLOAT32;
        v->rank = 1;
        v->written = true;
        v->constant_id = -1;
        v->bound[0] = v->dims[0] = (uint32_t)count;
        v->bound_numel = count;
        g->nodes[ni].scratch = g->num_values++;
    }
    g->values = values;
    return EMBER_OK;
}

ember_status vk_plan_dispatches(vk_graph *g, ember_allocator *a) {
    TRY_RET(add_scratch(g, a));
    size_t total = 0;
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        vk_node *n = &g->nodes[ni];
        TRY_RET(vk_op_count(g, n, &n->num_dispatch));
        n->first_dispatch = (uint32_t)total;
        total += n->num_dispatch;
        if (total > (1u << 20)) return vk_node_fail(g, n, EMBER_ERR_INVALID_PROGRAM, "too many dispatches");
    }
    g->num_dispatches = (uint32_t)total;
    g->dispatches = ember_alloc(a, sizeof(vk_dispatch) * (total + 1), _Alignof(vk_dispatch));
    if (g->dispatches == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory for dispatches");
    memset(g->dispatches, 0, sizeof(vk_dispatch) * total);
    g->stamps = ember_alloc(a, sizeof(uint64_t) * (total + 1), _Alignof(uint64_t));
    if (g->stamps == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory for timestamps");
    for (size_t k = 0; k < total; k++)
        for (int b = 0; b < VK_MAX_BINDINGS; b++) g->dispatches[k].bind[b] = VK_NONE;

    /* control: status word, parameter blocks, indirect records */
    size_t block, at, ind;
    const size_t align = g->align;
    if (!align_up(VK_PARAM_WORDS * 4, align, &block) || !align_up(16, align, &at))
        return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "vulkan: alignment overflows");
    for (uint32_t k = 0; k < g->num_dispatches; k++) {
        g->dispatches[k].params_at = at;
        if (ember_add_overflow(at, block, &at))
            return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "vulkan: control overflows");
    }
    ind = at;
    for (uint32_t k = 0; k < g->num_dispatches; k++) g->dispatches[k].indirect_at = ind + 16u * k;
    g->control_bytes = ind + 16u * (size_t)g->num_dispatches + 16u;
    return EMBER_OK;
}

/* Storage types of the tensors, then of each dispatch's bindings. */
static void choose_storage(vk_graph *g) {
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        vk_value *v = &g->values[vi];
        if (v->kind != VK_V_TENSOR) continue;
        v->storage = v->dtype == VK_DT_FLOAT16 && g->f16_storage ? VK_ST_F16
                     : v->dtype == VK_DT_INT8 && g->i8_storage ? VK_ST_I8
                     : v->dtype == VK_DT_UINT8 && g->i8_storage ? VK_ST_U8
                                                                : VK_ST_F32;
    }
    for (uint32_t k = 0; k < g->num_dispatches; k++) {
        const vk_dispatch *d = &g->dispatches[k];
        bool accessors = vk_shader_code_f16[d->shader] != NULL;
        for (int b = 0; b < VK_MAX_BINDINGS; b++) {
            if (d->bind[b] == VK_NONE) continue;
            vk_value *v = &g->values[d->bind[b]];
            /* only bindings 1 to 3 read 8-bit bytes (common.glsl) */
            bool bytes = v->storage == VK_ST_I8 || v->storage == VK_ST_U8;
            if (!accessors || (bytes && (b == 0 || b > 3))) v->storage = VK_ST_F32;
        }
    }
    for (uint32_t k = 0; k < g->num_dispatches; k++) {
        vk_dispatch *d = &g->dispatches[k];
        d->storage = 0;
        for (uint32_t b = 0; b < VK_MAX_BINDINGS; b++)
            if (d->bind[b] != VK_NONE)
                d->storage |= (uint16_t)(g->values[d->bind[b]].storage << (VK_ST_BITS * b));
    }
}

/* Writers of a value (plan_aliases): none yet, or more than one node. */
#define NO_WRITER UINT32_MAX
#define SEVERAL (UINT32_MAX - 1)

static void note_writer(uint32_t *writer, uint32_t vi, uint32_t who) {
    if (writer[vi] == NO_WRITER) writer[vi] = who;
    else if (writer[vi] != who) writer[vi] = SEVERAL;
}

/* Whether value vi is an output of the delegate (the caller reads those
 * from the arena). */
static bool is_output(const vk_graph *g, uint32_t vi) {
    for (uint32_t k = 0; k < g->num_outputs; k++)
        if (g->outputs[k] == vi) return true;
    return false;
}

/* Views without copies. A node that copies its input whole into its output
 * (view, squeeze, unsqueeze, clone, prepack: vk_op_view_io) need not run
 * when the output may share the input's bytes: both have one dtype and
 * storage, and nothing but the input's single producer (or the caller, for
 * a delegate input) ever writes either of them; a weight may be the input
 * where no dispatch writes it and the output is not the delegate's. The
 * output then names its base (alias_of, always a value with its own bytes,
 * in the arena or among the weights), the base lives as long as any view of
 * it, and the node's dispatch is skipped. In a decode step of a transformer
 * that removes every reshape between the products. */
static ember_status plan_aliases(vk_graph *g, ember_allocator *a) {
    uint32_t *writer = ember_alloc(a, sizeof(uint32_t) * (g->num_values + 1u), _Alignof(uint32_t));
    if (writer == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory for the plan");
    for (uint32_t vi = 0; vi < g->num_values; vi++) writer[vi] = NO_WRITER;
    for (uint32_t k = 0; k < g->num_inputs; k++) note_writer(writer, g->inputs[k], g->num_nodes);
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        const vk_node *n = &g->nodes[ni];
        for (uint32_t k = 0; k < n->num_dispatch; k++) {
            const vk_dispatch *d = &g->dispatches[n->first_dispatch + k];
            static const uint32_t written[3] = {0, 4, 5};
            for (int b = 0; b < 3; b++)
                if (d->bind[written[b]] != VK_NONE) note_writer(writer, d->bind[written[b]], ni);
        }
    }
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        vk_node *n = &g->nodes[ni];
        uint32_t in, out;
        if (n->num_dispatch != 1 || !vk_op_view_io(g, n, &in, &out) || in == out) continue;
        vk_value *vi = &g->values[in], *vo = &g->values[out];
        if (vi->kind != VK_V_TENSOR || vo->kind != VK_V_TENSOR || vo->is_const) continue;
        uint32_t base = vi->alias_of != VK_NONE ? vi->alias_of : in;
        const vk_value *vb = &g->values[base];
        /* a weight (prepack's input) may be viewed where nothing writes it
         * (a KV cache is written) */
        if (vb->is_const && (writer[base] != NO_WRITER || is_output(g, out))) continue;
        if (vo->alias_of != VK_NONE || vi->dtype != vo->dtype || vb->storage != vo->storage ||
            writer[out] != ni || writer[base] == SEVERAL || writer[in] == SEVERAL)
            continue;
        vo->alias_of = base;
        g->dispatches[n->first_dispatch].skip = true;
    }
    return EMBER_OK;
}

ember_status vk_plan_memory(vk_graph *g, ember_allocator *a) {
    const size_t align = g->align;
    choose_storage(g);
    for (uint32_t vi = 0; vi < g->num_values; vi++) g->values[vi].alias_of = VK_NONE;
    TRY_RET(plan_aliases(g, a));

    /* lifetimes */
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        g->values[vi].first_use = UINT32_MAX;
        g->values[vi].last_use = 0;
    }
    for (uint32_t k = 0; k < g->num_inputs; k++) touch(g, g->inputs[k], 0);
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        const vk_node *n = &g->nodes[ni];
        for (uint32_t k = 0; k < n->nargs; k++) touch(g, g->args[n->args_at + k], ni);
        if (n->scratch != VK_NONE) touch(g, n->scratch, ni);
    }
    for (uint32_t k = 0; k < g->num_outputs; k++) touch(g, g->outputs[k], g->num_nodes);

    /* every tensor must fit one binding: checked before anything is allocated */
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        const vk_value *v = &g->values[vi];
        size_t bytes;
        if (v->kind != VK_V_TENSOR) continue;
        if (!vk_storage_bytes(v->storage, v->bound_numel, &bytes) || bytes > g->max_range)
            return ember_backend_fail(EMBER_ERR_NOT_SUPPORTED,
                                      "vulkan: value %u holds %zu elements, more than one binding of "
                                      "this device spans (%zu bytes)",
                                      vi, v->bound_numel, g->max_range);
    }

    /* weights, in order */
    size_t w = 0;
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        vk_value *v = &g->values[vi];
        if (v->kind != VK_V_TENSOR || !v->is_const) continue;
        size_t bytes;
        v->offset = w;
        if (!vk_storage_bytes(v->storage, v->bound_numel, &bytes) ||
            !align_up(bytes, align, &bytes) || ember_add_overflow(w, bytes, &w))
            return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "vulkan: weights overflow");
    }
    g->weights_bytes = w;

    /* intermediates: largest first, lowest offset clear of every placed
     * tensor alive at the same time; the first `align` bytes stay a dummy
     * binding for unused slots */
    uint32_t count = 0;
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        const vk_value *v = &g->values[vi];
        if (v->kind == VK_V_TENSOR && !v->is_const && v->first_use != UINT32_MAX) count++;
    }
    /* a base's bytes hold the largest of its views (their bounds may
     * differ where a view's size is symbolic) */
    size_t *sizes = ember_alloc(a, sizeof(size_t) * (g->num_values + 1u), _Alignof(size_t));
    if (sizes == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory for the plan");
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        const vk_value *v = &g->values[vi];
        sizes[vi] = 0;
        if (v->kind != VK_V_TENSOR || v->is_const) continue;
        size_t bytes;
        if (!vk_storage_bytes(v->storage, v->bound_numel, &bytes) || !align_up(bytes, align, &bytes))
            return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "vulkan: value %u overflows", vi);
        uint32_t base = v->alias_of != VK_NONE ? v->alias_of : vi;
        if (bytes > sizes[vi]) sizes[vi] = bytes;
        if (bytes > sizes[base]) sizes[base] = bytes;
    }
    uint32_t *order = ember_alloc(a, sizeof(uint32_t) * (count + 1u), _Alignof(uint32_t));
    if (order == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory for the plan");
    uint32_t m = 0;
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        const vk_value *v = &g->values[vi];
        if (!(v->kind == VK_V_TENSOR && !v->is_const && v->first_use != UINT32_MAX &&
              v->alias_of == VK_NONE))
            continue;
        /* insertion by size, descending */
        uint32_t j = m++;
        while (j > 0 && sizes[order[j - 1]] < sizes[vi]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = vi;
    }
    size_t arena = align;
    for (uint32_t i = 0; i < m; i++) {
        vk_value *v = &g->values[order[i]];
        size_t off = align, size = sizes[order[i]];
        bool moved = true;
        while (moved) {
            moved = false;
            for (uint32_t j = 0; j < i; j++) {
                const vk_value *p = &g->values[order[j]];
                if (p->last_use < v->first_use || v->last_use < p->first_use) continue;
                size_t pend = p->offset + sizes[order[j]];
                if (off < pend && p->offset < off + size) {
                    off = pend;
                    moved = true;
                }
            }
        }
        v->offset = off;
        size_t end;
        if (ember_add_overflow(off, size, &end))
            return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM, "vulkan: arena overflows");
        if (end > arena) arena = end;
    }
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        vk_value *v = &g->values[vi];
        if (v->kind == VK_V_TENSOR && v->alias_of != VK_NONE) v->offset = g->values[v->alias_of].offset;
    }
    g->arena_bytes = arena;
    return EMBER_OK;
}
