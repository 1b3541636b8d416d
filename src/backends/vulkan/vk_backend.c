/*
 * VulkanBackend: runs ExecuTorch's Vulkan delegate payloads on a Vulkan
 * device (a GPU, or Mesa's lavapipe on the CPU).
 *
 * init: decode and verify the payload (vk_read.c), open the shared device
 * context (vk_device.c), plan the GPU memory (vk_plan.c), run every
 * operator's shape rule at the upper-bound shapes (vk_ops.c), upload the
 * weights, write the descriptor sets and record the command buffer.
 * execute: copy the inputs into the arena (in each tensor's storage type:
 * integers and booleans as float32, floats as float32 or float16), rerun the shape rules for the actual input shapes
 * (parameter blocks and indirect workgroup counts), replay the command
 * buffer, check the status word, resize the outputs and copy them back.
 * Execute allocates nothing. Traced runs (ember_backend_tracing()) replay the
 * command buffer that stamps every dispatch and report each node's GPU time,
 * the GPU's span of the run and the host's submit-and-wait time.
 */
#include <stdio.h>
#include <string.h>

#include "vk_graph.h"

static bool vk_available(void) { return vk_device_available(); }

static ember_status load_weights(vk_graph *g, const ember_backend_init_ctx *ctx,
                                 const vk_const_source *cs, uint32_t num_consts) {
    (void)num_consts;
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        const vk_value *v = &g->values[vi];
        if (v->kind != VK_V_TENSOR || !v->is_const) continue;
        const vk_const_source *src = &cs[v->constant_id];
        if (src->key != NULL) {
            ember_backend_data data;
            memset(&data, 0, sizeof data);
            ember_status st = ember_backend_get_data(ctx, src->key, src->key_len, &data);
            if (st != EMBER_OK)
                return ember_backend_fail(st, "vulkan: value %u: named data '%.*s': %s", vi,
                                          (int)(src->key_len < 80 ? src->key_len : 80), src->key,
                                          ember_last_error());
            st = vk_device_upload_weight(g, vi, data.data, data.size);
            ember_backend_release_data(&data);
            TRY_RET(st);
        } else {
            TRY_RET(vk_device_upload_weight(g, vi, src->bytes, src->size));
        }
    }
    return EMBER_OK;
}

static void dims_at_bounds(vk_graph *g) {
    for (uint32_t vi = 0; vi < g->num_values; vi++) {
        vk_value *v = &g->values[vi];
        if (v->kind == VK_V_TENSOR) memcpy(v->dims, v->bound, sizeof v->dims);
    }
}

/* Runs the shape rules at init. A symbolic int that comes in from outside
 * (a size or an offset another part of the program computed) starts at the
 * value the payload gives it: ember's exporter writes the one that fits the
 * tensors' upper-bound shapes. Where that fails or every such value is 0
 * (ExecuTorch writes 0), each takes the largest input dim (or 1) that makes
 * every rule hold at those shapes. */
static ember_status prepare_at_bounds(vk_graph *g) {
    bool has_sym = false, has_start = false;
    for (uint32_t k = 0; k < g->num_inputs; k++) {
        const vk_value *v = &g->values[g->inputs[k]];
        has_sym |= v->kind != VK_V_TENSOR;
        has_start |= v->kind != VK_V_TENSOR && v->i != 0;
    }
    if (!has_sym) return vk_ops_prepare(g);
    if (has_start) {
        dims_at_bounds(g);
        if (vk_ops_prepare(g) == EMBER_OK) return EMBER_OK;
    }
    int64_t tried = INT64_MAX;
    ember_status st = EMBER_OK;
    for (;;) {
        int64_t cand = 1; /* the largest input dim below the last one tried */
        for (uint32_t k = 0; k < g->num_inputs; k++) {
            const vk_value *v = &g->values[g->inputs[k]];
            if (v->kind != VK_V_TENSOR) continue;
            for (uint32_t d = 0; d < v->rank; d++)
                if ((int64_t)v->bound[d] < tried && (int64_t)v->bound[d] > cand) cand = v->bound[d];
        }
        if (cand >= tried) return st;
        for (uint32_t k = 0; k < g->num_inputs; k++) {
            vk_value *v = &g->values[g->inputs[k]];
            if (v->kind != VK_V_TENSOR) v->i = cand;
        }
        dims_at_bounds(g);
        st = vk_ops_prepare(g);
        if (st == EMBER_OK || cand == 1) return st;
        tried = cand;
    }
}

static ember_status init_graph(vk_graph *g, const ember_backend_init_ctx *ctx, const void *payload,
                               size_t payload_size) {
    vk_const_source *cs;
    uint32_t num_consts;
    TRY_RET(vk_read(ctx, payload, payload_size, g, &cs, &num_consts));
    TRY_RET(vk_device_open(g));
    TRY_RET(vk_plan_dispatches(g, ctx->allocator));
    /* the shape rules write parameters into the control buffer: run them
     * on a host copy first (they also set each dispatch's bindings, which
     * the storage types, the memory plan and the descriptor sets need),
     * then on the mapped buffer */
    uint32_t *scratch = ember_alloc(ctx->allocator, g->control_bytes, 16);
    if (scratch == NULL) return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory");
    g->control = scratch;
    g->init_phase = true;
    TRY_RET(prepare_at_bounds(g));
    TRY_RET(vk_plan_memory(g, ctx->allocator));
    TRY_RET(vk_device_build(g));
    TRY_RET(vk_ops_prepare(g));
    g->init_phase = false;
    TRY_RET(load_weights(g, ctx, cs, num_consts));
    return vk_device_upload_finish(g);
}

static ember_status vk_init(const ember_backend_init_ctx *ctx, const void *payload,
                            size_t payload_size, const ember_compile_spec *specs, size_t num_specs,
                            void **handle) {
    (void)specs;
    (void)num_specs;
    vk_graph *g = ember_alloc(ctx->allocator, sizeof *g, _Alignof(vk_graph));
    if (g == NULL) return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "vulkan: no memory");
    memset(g, 0, sizeof *g);
    ember_status st = init_graph(g, ctx, payload, payload_size);
    if (st != EMBER_OK) {
        vk_device_close(g);
        return st;
    }
    *handle = g;
    return EMBER_OK;
}

static int dtype_for(uint8_t vk) {
    switch (vk) {
    case VK_DT_FLOAT32: return EMBER_FLOAT32;
    case VK_DT_FLOAT16: return EMBER_FLOAT16;
    case VK_DT_INT32: return EMBER_INT32;
    case VK_DT_INT64: return EMBER_INT64;
    case VK_DT_BOOL: return EMBER_BOOL;
    default: return -1;
    }
}

/* Whether tensor dtype d may stand for a value of VkDataType vk: exporters
 * narrow int64 indices to int32 on the GPU side, and with force_fp16 hold
 * float32 tensors as float16 (staged as float32); the delegate computes in
 * float32 either way. */
static bool dtype_ok(int d, uint8_t vk) {
    if (d == dtype_for(vk)) return true;
    bool vk_float = vk == VK_DT_FLOAT16 || vk == VK_DT_FLOAT32;
    return (vk == VK_DT_INT32 && d == EMBER_INT64) || (vk == VK_DT_INT64 && d == EMBER_INT32) ||
           (vk_float && (d == EMBER_FLOAT16 || d == EMBER_FLOAT32));
}

/* Host tensor -> arena elements in the value's storage type; integers must
 * stay exact. */
static ember_status stage_in(const ember_tensor *t, const vk_value *v, uint8_t *dst, uint32_t k) {
    const size_t n = (size_t)t->numel;
    if (v->storage == VK_ST_F16) { /* a float tensor: float16 or float32 */
        if (t->dtype == EMBER_FLOAT16) {
            memcpy(dst, t->data, n * 2);
            return EMBER_OK;
        }
        for (size_t i = 0; i < n; i++) {
            uint16_t h = ember_float_to_half(((const float *)t->data)[i]);
            memcpy(dst + 2 * i, &h, 2);
        }
        return EMBER_OK;
    }
    for (size_t i = 0; i < n; i++) {
        double x;
        float f;
        switch (t->dtype) {
        case EMBER_FLOAT32: memcpy(dst + 4 * i, (const float *)t->data + i, 4); continue;
        case EMBER_FLOAT16:
            f = ember_half_to_float(((const uint16_t *)t->data)[i]);
            memcpy(dst + 4 * i, &f, 4);
            continue;
        case EMBER_INT32: x = ((const int32_t *)t->data)[i]; break;
        case EMBER_INT64: x = (double)((const int64_t *)t->data)[i]; break;
        default: x = ((const uint8_t *)t->data)[i] != 0; break;
        }
        if (x > VK_EXACT_INT || x < -VK_EXACT_INT)
            return ember_backend_fail(EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                      "vulkan: input %u element %zu (%.0f) is beyond float32's "
                                      "exact integers",
                                      k, i, x);
        f = (float)x;
        memcpy(dst + 4 * i, &f, 4);
    }
    return EMBER_OK;
}

static void stage_out(ember_tensor *t, const vk_graph *g, const vk_value *v) {
    const size_t n = (size_t)t->numel;
    if (v->storage == VK_ST_F16 && t->dtype == EMBER_FLOAT16) {
        memcpy(t->data, vk_host_bytes(g, v), n * 2);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float x = vk_arena_get(g, v, i);
        switch (t->dtype) {
        case EMBER_FLOAT32: ((float *)t->data)[i] = x; break;
        case EMBER_FLOAT16: ((uint16_t *)t->data)[i] = ember_float_to_half(x); break;
        case EMBER_INT32: ((int32_t *)t->data)[i] = (int32_t)x; break;
        case EMBER_INT64: ((int64_t *)t->data)[i] = (int64_t)x; break;
        default: ((uint8_t *)t->data)[i] = x != 0.0f; break;
        }
    }
}

static ember_status external(const vk_graph *g, uint32_t k, bool is_in, ember_value **args,
                             size_t nargs, ember_value **out) {
    size_t at = is_in ? k : g->num_inputs + k;
    if (at >= nargs)
        return ember_backend_fail(EMBER_ERR_INVALID_PROGRAM,
                                  "vulkan: %s %u is missing (%zu arguments)",
                                  is_in ? "input" : "output", k, nargs);
    const vk_value *v = &g->values[is_in ? g->inputs[k] : g->outputs[k]];
    ember_value *a = args[at];
    if (v->kind == VK_V_TENSOR) {
        if (a->tag != EMBER_TAG_TENSOR)
            return ember_backend_fail(EMBER_ERR_TYPE_MISMATCH, "vulkan: %s %u is not a tensor",
                                      is_in ? "input" : "output", k);
        if (!dtype_ok(a->u.t->dtype, v->dtype))
            return ember_backend_fail(EMBER_ERR_TYPE_MISMATCH,
                                      "vulkan: %s %u is %s, the delegate's value is %s",
                                      is_in ? "input" : "output", k,
                                      ember_dtype_name(a->u.t->dtype), vk_dtype_name(v->dtype));
    } else if (a->tag != EMBER_TAG_INT) {
        return ember_backend_fail(EMBER_ERR_TYPE_MISMATCH, "vulkan: %s %u is not an int",
                                  is_in ? "input" : "output", k);
    }
    *out = a;
    return EMBER_OK;
}

/* One profiling event per node that dispatched: its GPU time, from the
 * timestamp before its first dispatch to the one after its last, placed on
 * the host clock from the submission (the first stamp); the metadata names
 * the shaders that ran. */
static void log_node_times(const vk_graph *g, uint64_t submitted) {
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        const vk_node *n = &g->nodes[ni];
        if (n->num_dispatch == 0) continue;
        char shaders[64];
        size_t len = 0;
        shaders[0] = '\0';
        for (uint32_t k = 0; k < n->num_dispatch; k++) {
            const vk_dispatch *d = &g->dispatches[n->first_dispatch + k];
            if (d->groups == 0 || d->skip) continue;
            int w = snprintf(shaders + len, sizeof shaders - len, "%s%s", len ? "," : "",
                             vk_shader_name[d->shader]);
            if (w < 0 || (size_t)w >= sizeof shaders - len) break;
            len += (size_t)w;
        }
        if (len == 0) continue; /* a view without a copy, or nothing to do */
        uint64_t start = g->stamps[n->first_dispatch];
        uint64_t end = g->stamps[n->first_dispatch + n->num_dispatch];
        ember_backend_log_event(n->op->name, n->node_id, NULL, submitted + start,
                                submitted + (end > start ? end : start), shaders, len);
    }
}

/* The run as a whole, two events named by string ids: "vulkan.gpu", the GPU
 * span from the first timestamp to the last (placed like the nodes'), and
 * "vulkan.submit_wait", the host from just before vkQueueSubmit to the fence
 * wait's return. The difference is what the host lost to submission,
 * scheduling and waking up. */
static void log_run_times(const vk_graph *g) {
    uint64_t gpu = g->stamps[g->num_dispatches];
    ember_backend_log_event("vulkan.gpu", -1, "vulkan.gpu", g->submit_ns, g->submit_ns + gpu, NULL,
                            0);
    ember_backend_log_event("vulkan.submit_wait", -1, "vulkan.submit_wait", g->submit_ns,
                            g->waited_ns, NULL, 0);
}

static ember_status vk_execute(void *handle, ember_value **args, size_t nargs) {
    vk_graph *g = handle;
    for (uint32_t k = 0; k < g->num_inputs; k++) {
        vk_value *v = &g->values[g->inputs[k]];
        ember_value *a;
        TRY_RET(external(g, k, true, args, nargs, &a));
        if (v->kind != VK_V_TENSOR) {
            v->i = a->u.i;
            continue;
        }
        const ember_tensor *t = a->u.t;
        /* a 0-dim tensor stands for a [1] value */
        bool scalar = t->dim == 0 && v->rank == 1 && v->bound[0] >= 1;
        if (t->dim != v->rank && !scalar)
            return ember_backend_fail(EMBER_ERR_SHAPE_MISMATCH,
                                      "vulkan: input %u has rank %u, the delegate's value %u",
                                      k, (unsigned)t->dim, v->rank);
        if (!ember_tensor_is_contiguous(t))
            return ember_backend_fail(EMBER_ERR_NOT_SUPPORTED,
                                      "vulkan: input %u is not contiguous", k);
        for (uint32_t d = 0; d < v->rank; d++) {
            size_t s = scalar ? 1 : (size_t)t->sizes[d];
            if (s > v->bound[d])
                return ember_backend_fail(EMBER_ERR_SHAPE_MISMATCH,
                                          "vulkan: input %u dim %u is %zu, above its bound %u", k,
                                          d, s, v->bound[d]);
            v->dims[d] = (uint32_t)s;
        }
        TRY_RET(stage_in(t, v, vk_host_bytes(g, v), k));
    }
    TRY_RET(vk_ops_prepare(g));
    g->control[0] = 0;
    bool timed = ember_backend_tracing() && vk_device_timed(g);
    TRY_RET(vk_device_run(g, timed));
    if (timed) {
        log_node_times(g, g->submit_ns);
        log_run_times(g);
    }
    if (g->control[0] != 0) {
        uint32_t ni = g->control[0] - 1;
        if (ni < g->num_nodes)
            return vk_node_fail(g, &g->nodes[ni], EMBER_ERR_INDEX_OUT_OF_RANGE,
                                "an index is out of range");
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "vulkan: bad status %u",
                                  g->control[0]);
    }
    for (uint32_t k = 0; k < g->num_outputs; k++) {
        const vk_value *v = &g->values[g->outputs[k]];
        ember_value *a;
        TRY_RET(external(g, k, false, args, nargs, &a));
        if (v->kind != VK_V_TENSOR) {
            a->u.i = v->i;
            continue;
        }
        ember_tensor *t = a->u.t;
        int64_t sizes[VK_MAX_DIMS];
        size_t n = 1;
        for (uint32_t d = 0; d < v->rank; d++) n *= v->dims[d];
        if (!(t->dim == 0 && n == 1)) {
            if (t->dim != v->rank)
                return ember_backend_fail(EMBER_ERR_SHAPE_MISMATCH,
                                          "vulkan: output %u has rank %u, the delegate makes %u",
                                          k, (unsigned)t->dim, v->rank);
            for (uint32_t d = 0; d < v->rank; d++) sizes[d] = v->dims[d];
            ember_status st = ember_tensor_resize(t, sizes, t->dim);
            if (st != EMBER_OK)
                return ember_backend_fail(st, "vulkan: output %u: %s", k, ember_last_error());
        }
        if (t->data == NULL && t->numel > 0)
            return ember_backend_fail(EMBER_ERR_INVALID_STATE, "vulkan: output %u has no storage", k);
        stage_out(t, g, v);
    }
    return EMBER_OK;
}

static void vk_destroy(void *handle) {
    if (handle != NULL) vk_device_close(handle);
}

static const ember_backend g_vulkan = {
    sizeof(ember_backend), "VulkanBackend", vk_available, vk_init, vk_execute, vk_destroy,
};

ember_status ember_vulkan_backend_register(void) { return ember_backend_register(&g_vulkan); }

const char *ember_vulkan_device_name(void) { return vk_device_name(); }

ember_status ember_vulkan_info_get(ember_vulkan_info *info) { return vk_device_info(info); }

ember_status ember_vulkan_device_release(void) { return vk_device_release(); }

ember_status ember_vulkan_set_pipeline_cache_file(const char *path) {
    return vk_device_set_cache_file(path);
}
