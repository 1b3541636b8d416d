/*
 * vk_graph.h — ExecuTorch's Vulkan delegate payload as VulkanBackend holds it.
 *
 * The payload: a 30-byte "VH00" header (flatbuffer offset and size, constant
 * bytes offset and size), a VkGraph flatbuffer ("VK00"; schema.fbs of
 * ExecuTorch's backends/vulkan/serialization), then constant bytes. Current
 * exporters keep the weights in the program's named data instead, naming
 * them by key. vk_read.c decodes and verifies the payload into the structures
 * below; vk_ops.c gives every operator its shape rule and its dispatches;
 * vk_plan.c plans the GPU memory; vk_device.c owns the Vulkan objects.
 *
 * Storage. Each tensor is held on the device in one of four storage types
 * (vk_value.storage, chosen by vk_plan.c before memory is planned):
 *   VK_ST_F32   32-bit float words: float32 tensors; integer and boolean
 *               tensors as exact float values (up to 2^24, checked where
 *               integers enter); float16 tensors where the device lacks
 *               16-bit storage (widened at the delegate's edges and at load);
 *   VK_ST_F16   float16 halves: float16 tensors (float16 models, force_fp16
 *               payloads) where the device has storageBuffer16BitAccess;
 *   VK_ST_I8    int8 bytes packed four to a 32-bit word: int8 weights (read
 *               only; the int8 weight-only linear dequantizes in registers);
 *   VK_ST_U8    uint8 bytes packed the same way: uint8 weights (read only;
 *               the 4-bit linear's weights, two 4-bit values to a byte, split
 *               and dequantized in registers).
 * Shaders compute in float32 registers whatever the storage: they read and
 * write tensors through common.glsl's accessors, and a dispatch's pipeline is
 * specialized with the storage of each of its bindings (vk_dispatch.storage,
 * two bits per binding), so one dispatch may mix float16 activations, int8
 * weights, float32 scales and int32 indices. A dispatch that binds a float16
 * tensor uses the shader's float16 module (compiled with -DSTORAGE_F16).
 * A shader written against the plain float arrays (not in
 * EMBER_VULKAN_STORAGE_SHADERS) keeps every tensor it binds in VK_ST_F32, as
 * does an 8-bit weight bound where the accessors read no bytes (bindings 0,
 * 4 and 5).
 * EMBER_VULKAN_STORAGE=float32 in the environment (read when a delegate is
 * loaded) holds every tensor as VK_ST_F32, as on a device without 16-bit
 * storage (uint8 weights then hold a byte, both 4-bit values, a word).
 */
#ifndef EMBER_BACKENDS_VULKAN_VK_GRAPH_H
#define EMBER_BACKENDS_VULKAN_VK_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "ember/backend.h"

#define VK_MAX_DIMS 6
#define VK_NONE UINT32_MAX
/* Tensor bindings of one dispatch (the params block is one more). */
#define VK_MAX_BINDINGS 6
/* 32-bit words of a dispatch's parameter block. */
#define VK_PARAM_WORDS 64
/* Elementwise operator codes are below this (one pipeline each). */
#define VK_EW_VARIANTS 64
/* Invocations per workgroup, as every shader declares it. */
#define VK_GROUP_SIZE 64u
/* The largest integer that float32 holds exactly. */
#define VK_EXACT_INT 16777216.0

/* Returns a failing status from the enclosing function. */
#define TRY_RET(expr)                                                                             \
    do {                                                                                          \
        ember_status try_st_ = (expr);                                                            \
        if (try_st_ != EMBER_OK) return try_st_;                                                  \
    } while (0)

/* Storage types of tensors on the device (see above). */
enum { VK_ST_F32 = 0, VK_ST_F16 = 1, VK_ST_I8 = 2, VK_ST_U8 = 3 };
/* Bits of a binding's storage type in vk_dispatch.storage. */
#define VK_ST_BITS 2u

/* GraphTypes union tags (0 is NONE). */
enum {
    VK_V_NONE = 0, VK_V_NULL = 1, VK_V_INT = 2, VK_V_DOUBLE = 3, VK_V_BOOL = 4,
    VK_V_TENSOR = 5, VK_V_INTLIST = 6, VK_V_DOUBLELIST = 7, VK_V_BOOLLIST = 8,
    VK_V_VALUELIST = 9, VK_V_STRING = 10, VK_V_SYMINT = 11, VK_V_COUNT = 12
};

/* VkDataType. */
enum {
    VK_DT_BOOL = 0, VK_DT_UINT8 = 1, VK_DT_INT8 = 2, VK_DT_INT32 = 3, VK_DT_FLOAT16 = 4,
    VK_DT_FLOAT32 = 5, VK_DT_FLOAT64 = 6, VK_DT_INT64 = 7, VK_DT_UNSET = 127
};

/* The shaders (shaders/<name>.comp), in the order vk_shaders.c embeds them. */
enum {
    VK_SH_ELEMENTWISE = 0, VK_SH_MATMUL, VK_SH_SOFTMAX, VK_SH_LAYER_NORM, VK_SH_EMBEDDING,
    VK_SH_REDUCE, VK_SH_CONV2D, VK_SH_POOL2D, VK_SH_SDPA, VK_SH_CONV_TRANSPOSE2D,
    VK_SH_GROUP_NORM, VK_SH_UPSAMPLE2D, VK_SH_GATHER, VK_SH_ROTARY_EMB, VK_SH_COUNT
};

typedef struct vk_value {
    uint8_t kind;    /* VK_V_* */
    uint8_t dtype;   /* tensors: VK_DT_* */
    uint8_t rank;    /* tensors */
    uint8_t storage; /* tensors: VK_ST_* */
    bool is_const;   /* tensors: a weight */
    bool written;    /* some node (or the caller) writes it */
    int64_t i;       /* Int, Bool, SymInt (current value) */
    double d;        /* Double */
    uint32_t list_at, list_len; /* lists: items in g->ints or g->doubles */
    char str[16];    /* String (truncated; only short enum-like strings are read) */
    int32_t constant_id;
    uint32_t bound[VK_MAX_DIMS]; /* tensors: serialized dims, the upper bound */
    uint32_t dims[VK_MAX_DIMS];  /* tensors: current dims */
    size_t bound_numel;
    size_t offset;               /* tensors: bytes into the arena or the weights */
    uint32_t first_use, last_use;
} vk_value;

typedef struct vk_dispatch {
    uint8_t shader;
    uint8_t variant;                /* elementwise: the operator (a specialization constant) */
    uint16_t storage;               /* VK_ST_* of binding k at bits VK_ST_BITS * k */
    uint32_t bind[VK_MAX_BINDINGS]; /* value index per binding, VK_NONE: unused */
    uint32_t groups;                /* workgroups for the current shapes */
    uint32_t max_groups;            /* workgroups at the upper bound, from init */
    size_t params_at;               /* bytes into the control buffer */
    size_t indirect_at;
    void *set;                      /* VkDescriptorSet */
    void *pipe;                     /* VkPipeline */
} vk_dispatch;

struct vk_graph;
struct vk_node;
typedef ember_status (*vk_op_fn)(struct vk_graph *g, struct vk_node *n, vk_dispatch *d);

typedef struct vk_op {
    const char *name;  /* the VkGraph operator name, e.g. "aten.add.Tensor" */
    vk_op_fn run;      /* shapes, bindings and parameters of its dispatches */
    int code;          /* for families sharing one function (elementwise op code) */
} vk_op;

typedef struct vk_node {
    const vk_op *op;
    uint32_t node_id;              /* debug handle */
    uint32_t args_at, nargs;       /* value indices in g->args */
    uint32_t first_dispatch, num_dispatch;
} vk_node;

struct vk_device;

typedef struct vk_graph {
    vk_value *values;
    uint32_t num_values;
    vk_node *nodes;
    uint32_t num_nodes;
    uint32_t *args;
    uint32_t *inputs, *outputs;
    uint32_t num_inputs, num_outputs;
    int64_t *ints;                 /* IntList, BoolList and ValueList items */
    double *doubles;               /* DoubleList items */
    vk_dispatch *dispatches;
    uint32_t num_dispatches;
    size_t arena_bytes, weights_bytes, control_bytes;
    size_t align;                  /* offset alignment of storage bindings */
    size_t max_range;              /* the most bytes one binding may span */
    bool f16_storage;              /* float16 tensors may be VK_ST_F16 */
    bool i8_storage;               /* int8 / uint8 weights may be VK_ST_I8 / VK_ST_U8 */
    bool init_phase;               /* shapes at their upper bounds; checks bounds */
    uint64_t *stamps;              /* traced runs: ns from the first stamp to the start of
                                    * each dispatch, then to the end of the last */
    uint64_t submit_ns, waited_ns; /* traced runs: host clock before vkQueueSubmit and when
                                    * the fence wait returned */
    uint32_t *control;             /* mapped control buffer (status word, params, indirect) */
    uint8_t *arena;                /* mapped arena */
    struct vk_device *dev;
} vk_graph;

/* ---- vk_read.c ---- */
/* Decodes and verifies the payload into g (allocating from the method
 * allocator); constant i's bytes are located in *consts (key or bytes). */
typedef struct vk_const_source {
    const char *key;
    size_t key_len;
    const uint8_t *bytes;
    size_t size;
} vk_const_source;
ember_status vk_read(const ember_backend_init_ctx *ctx, const void *payload, size_t size,
                     vk_graph *g, vk_const_source **consts, uint32_t *num_consts);
const char *vk_dtype_name(uint8_t dtype);

/* ---- vk_ops.c ---- */
/* The shaders' names, by VK_SH_*. */
extern const char *const vk_shader_name[VK_SH_COUNT];
const vk_op *vk_op_find(const char *name, size_t len);
/* How many dispatches node n needs (fixed at init). */
ember_status vk_op_count(vk_graph *g, vk_node *n, uint32_t *count);
/* Fails naming node n (its index, operator and debug handle). */
ember_status vk_node_fail(const vk_graph *g, const vk_node *n, ember_status st, const char *fmt,
                          ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Runs the shape rules of every node for the current input shapes and
 * writes every dispatch's parameters and workgroup count. */
ember_status vk_ops_prepare(vk_graph *g);

/* ---- vk_plan.c ---- */
/* The dispatches of every node and the control-buffer layout. */
ember_status vk_plan_dispatches(vk_graph *g, ember_allocator *a);
/* After the shape rules have bound every dispatch: each tensor's storage
 * type, lifetimes and arena offsets of the intermediate tensors, weight
 * offsets. */
ember_status vk_plan_memory(vk_graph *g, ember_allocator *a);
/* Bytes a tensor of n elements takes in storage type st (a multiple of 4);
 * false on overflow. */
bool vk_storage_bytes(uint8_t st, size_t n, size_t *bytes);
/* Element i of a tensor in the mapped arena, as float. */
float vk_arena_get(const vk_graph *g, const vk_value *v, size_t i);

/* ---- vk_device.c ---- */
bool vk_device_available(void);
ember_status vk_device_open(vk_graph *g);
ember_status vk_device_upload_weight(vk_graph *g, uint32_t vi, const void *bytes, size_t size);
ember_status vk_device_build(vk_graph *g);
/* Replays the command buffer; timed: the one that stamps every dispatch
 * (where the queue has timestamps), filling g->stamps. */
ember_status vk_device_run(vk_graph *g, bool timed);
/* Whether timed runs fill g->stamps. */
bool vk_device_timed(const vk_graph *g);
void vk_device_close(vk_graph *g);
const char *vk_device_name(void);
/* Whether the device stores 16-bit floats (storageBuffer16BitAccess). */
bool vk_device_f16_storage(void);
ember_status vk_device_info(ember_vulkan_info *info);
/* ember_vulkan_device_release(). */
ember_status vk_device_release(void);
/* ember_vulkan_set_pipeline_cache_file(). */
ember_status vk_device_set_cache_file(const char *path);

/* ---- vk_shaders.c (generated SPIR-V) ---- */
extern const uint32_t *const vk_shader_code[VK_SH_COUNT];
extern const size_t vk_shader_size[VK_SH_COUNT];
/* The float16 modules: NULL for a shader without storage accessors. */
extern const uint32_t *const vk_shader_code_f16[VK_SH_COUNT];
extern const size_t vk_shader_size_f16[VK_SH_COUNT];

#endif /* EMBER_BACKENDS_VULKAN_VK_GRAPH_H */
