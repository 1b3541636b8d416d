/*
 * vk_graph.h — ExecuTorch's Vulkan delegate payload as VulkanBackend holds it.
 *
 * The payload: a 30-byte "VH00" header (flatbuffer offset and size, constant
 * bytes offset and size), a VkGraph flatbuffer ("VK00"; schema.fbs of
 * ExecuTorch's backends/vulkan/serialization), then constant bytes. Current
 * exporters keep the weights in the program's named data instead, naming
 * them by key. vk_read.c decodes and verifies the payload into the structures
 * below; vk_ops.c gives every operator its shape rule and its dispatches;
 * vk_plan.c plans the GPU memory; vk_device.c owns the Vulkan objects;
 * vk_value.c holds the value helpers they share (it calls none of them).
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

/* Shader variants (vk_graph.kernels), chosen when a delegate is loaded:
 *   VK_KERNELS_SIMPLE  one invocation per output block or row: what runs
 *                      fastest on a CPU device (Mesa's lavapipe);
 *   VK_KERNELS_GPU     workgroups that share an output block or row (a GPU's
 *                      default): products with few rows run matvec.comp,
 *                      the others matmul_tiled.comp;
 *   VK_KERNELS_MATVEC, VK_KERNELS_TILED: as VK_KERNELS_GPU, with every
 *                      product in that one shader (for the tests).
 * EMBER_VULKAN_KERNELS=simple|gpu|matvec|tiled in the environment overrides
 * the device's default (vk_device_open). */
enum { VK_KERNELS_SIMPLE = 0, VK_KERNELS_GPU = 1, VK_KERNELS_MATVEC = 2, VK_KERNELS_TILED = 3 };

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
    VK_SH_GROUP_NORM, VK_SH_UPSAMPLE2D, VK_SH_GATHER, VK_SH_ROTARY_EMB, VK_SH_MATVEC,
    VK_SH_MATMUL_TILED, VK_SH_MATVEC_SG, VK_SH_COUNT
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
    uint32_t alias_of;           /* tensors: the value whose bytes it shares (a view that
                                  * needs no copy, vk_plan.c), VK_NONE: its own */
    size_t io_offset;            /* inputs and outputs: bytes into g->io (an unmapped arena) */
} vk_value;

typedef struct vk_dispatch {
    uint8_t shader;
    uint8_t variant;                /* elementwise: the operator (a specialization constant) */
    uint16_t storage;               /* VK_ST_* of binding k at bits VK_ST_BITS * k */
    uint32_t bind[VK_MAX_BINDINGS]; /* value index per binding, VK_NONE: unused */
    bool skip;                      /* not recorded: a view that aliases its input */
    bool no_barrier;                /* the first of two variants of which only one runs */
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
    uint32_t scratch;              /* a float32 value of its own its dispatches pass partial
                                    * results through (vk_op_scratch), VK_NONE: none */
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
    uint8_t kernels;               /* VK_KERNELS_* */
    bool subgroups;                /* products may add partial sums with subgroup operations
                                    * (matvec_sg.comp): the device has them in compute shaders
                                    * and EMBER_VULKAN_SUBGROUPS is not "off" */
    uint64_t *stamps;              /* traced runs: ns from the first stamp to the start of
                                    * each dispatch, then to the end of the last */
    uint64_t submit_ns, waited_ns; /* traced runs: host clock before vkQueueSubmit and when
                                    * the fence wait returned */
    uint32_t *control;             /* mapped control buffer (status word, params, indirect) */
    uint8_t *arena;                /* mapped arena; NULL where it is not mapped: */
    uint8_t *io;                   /* then the inputs and outputs, copied in and out by the
                                    * command buffer (vk_value.io_offset) */
    struct vk_device *dev;
} vk_graph;

/* ---- vk_value.c (calls none of the files below) ---- */
const char *vk_dtype_name(uint8_t dtype);
/* Bytes a tensor of n elements takes in storage type st (a multiple of 4);
 * false on overflow. */
bool vk_storage_bytes(uint8_t st, size_t n, size_t *bytes);
/* The host's bytes of a tensor: in the mapped arena, or for an input or an
 * output, in the I/O buffer where the arena is not mapped; NULL before the
 * buffers exist. */
uint8_t *vk_host_bytes(const vk_graph *g, const vk_value *v);
/* Element i of a tensor in the host's bytes (vk_host_bytes), as float. */
float vk_arena_get(const vk_graph *g, const vk_value *v, size_t i);

/* ---- vk_read.c (calls vk_value.c, vk_op_find) ---- */
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

/* ---- vk_ops.c (calls vk_value.c) ---- */
/* The shaders' names, by VK_SH_*. */
extern const char *const vk_shader_name[VK_SH_COUNT];
const vk_op *vk_op_find(const char *name, size_t len);
/* Whether node n only copies its input whole into its output (a view,
 * squeeze, unsqueeze or clone: the same elements in the same order), and
 * which values those are. */
bool vk_op_view_io(const vk_graph *g, const vk_node *n, uint32_t *in, uint32_t *out);
/* Float32 elements of scratch node n needs between its dispatches (0:
 * none), at most, for the payload's upper-bound shapes. */
size_t vk_op_scratch(const vk_graph *g, const vk_node *n);
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

/* ---- vk_plan.c (calls vk_value.c, vk_ops.c) ---- */
/* The dispatches of every node and the control-buffer layout. */
ember_status vk_plan_dispatches(vk_graph *g, ember_allocator *a);
/* After the shape rules have bound every dispatch: each tensor's storage
 * type, lifetimes and arena offsets of the intermediate tensors, weight
 * offsets. */
ember_status vk_plan_memory(vk_graph *g, ember_allocator *a);

/* ---- vk_device.c ---- */
bool vk_device_available(void);
ember_status vk_device_open(vk_graph *g);
ember_status vk_device_upload_weight(vk_graph *g, uint32_t vi, const void *bytes, size_t size);
/* After the last vk_device_upload_weight: copies what is still staged and
 * lets the staging buffer go. */
ember_status vk_device_upload_finish(vk_graph *g);
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
