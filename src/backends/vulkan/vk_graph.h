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
 * Every tensor lives on the GPU as 32-bit elements: float tensors as float32
 * (float16 ones are widened at the delegate's edges), integer and boolean
 * tensors as float32 too, exact up to 2^24 (checked where integers enter),
 * so that one set of float shaders runs every operator.
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
    uint32_t bind[VK_MAX_BINDINGS]; /* value index per binding, VK_NONE: unused */
    uint32_t groups;                /* workgroups for the current shapes */
    uint32_t max_groups;            /* workgroups at the upper bound, from init */
    size_t params_at;               /* bytes into the control buffer */
    size_t indirect_at;
    void *set;                      /* VkDescriptorSet */
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
    bool init_phase;               /* shapes at their upper bounds; checks bounds */
    uint32_t *control;             /* mapped control buffer (status word, params, indirect) */
    float *arena;                  /* mapped arena */
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
/* Lifetimes and arena offsets of the intermediate tensors, weight offsets,
 * control-buffer layout. */
ember_status vk_plan(vk_graph *g, ember_allocator *a);

/* ---- vk_device.c ---- */
bool vk_device_available(void);
ember_status vk_device_open(vk_graph *g);
ember_status vk_device_upload_weight(vk_graph *g, uint32_t vi, const void *bytes, size_t size);
ember_status vk_device_build(vk_graph *g);
ember_status vk_device_run(vk_graph *g);
void vk_device_close(vk_graph *g);
const char *vk_device_name(void);

/* ---- vk_shaders.c (generated SPIR-V) ---- */
extern const uint32_t *const vk_shader_code[VK_SH_COUNT];
extern const size_t vk_shader_size[VK_SH_COUNT];

#endif /* EMBER_BACKENDS_VULKAN_VK_GRAPH_H */
