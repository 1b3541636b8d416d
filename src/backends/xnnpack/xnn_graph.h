/*
 * xnn_graph.h — the XNNPACK delegate payload as the backend holds it.
 *
 * ExecuTorch's XNNPACK delegate stores a subgraph in its own format: an
 * "XH00" header, then an XNNGraph flatbuffer ("XN01"; schema
 * backends/xnnpack/serialization/schema.fbs of the executorch package), then
 * constant data, which current exporters keep in the program's named data
 * instead. xnn_read.c decodes and verifies it into the structures below;
 * xnn_shape.c infers shapes, xnn_plan.c plans the intermediates' memory,
 * xnn_pack.c packs weights, and the xnn_run_*.c files run the nodes.
 *
 * Values are tensors; nodes refer to them by index (the file's id_out,
 * remapped). Layouts follow XNNPACK: spatial ops work on NHWC, and the
 * exporter inserts transposes at the delegate's edges.
 */
#ifndef EMBER_BACKENDS_XNNPACK_XNN_GRAPH_H
#define EMBER_BACKENDS_XNNPACK_XNN_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "ember/backend.h"
#include "ember/threadpool.h"
#include "kernels/optimized/qd8_gemm.h"

#define XNN_MAX_DIMS 6
#define XNN_INVALID_ID UINT32_MAX
/* Most externals a payload may declare (ExecuTorch's runtime has the same cap). */
#define XNN_MAX_EXTERNS 4096

/* XNNDatatype, as the flatbuffer numbers it. */
enum {
    XNN_DT_INVALID = 0, XNN_DT_FP32 = 1, XNN_DT_FP16 = 2, XNN_DT_QINT8 = 3, XNN_DT_QUINT8 = 4,
    XNN_DT_QINT32 = 5, XNN_DT_QCINT8 = 6, XNN_DT_QCINT32 = 7, XNN_DT_QCINT4 = 8,
    XNN_DT_QDINT8 = 9, XNN_DT_QBINT4 = 10, XNN_DT_QPINT8 = 11, XNN_DT_INT32 = 12,
    XNN_DT_PFP32 = 13, XNN_DT_BF16 = 14, XNN_DT_COUNT = 15
};

/* Value flags. */
#define XNN_VALUE_EXTERNAL_INPUT 0x1u
#define XNN_VALUE_EXTERNAL_OUTPUT 0x2u

/* Node flags. */
#define XNN_FLAG_TRANSPOSE_WEIGHTS 0x1u /* fully connected: filter [IC, OC]; bmm: B is [N, K] */
#define XNN_FLAG_TENSORFLOW_LEGACY 0x4u /* resize: no half-pixel offset */
#define XNN_FLAG_ALIGN_CORNERS 0x8u
#define XNN_FLAG_KEEP_DIMS 0x40u

/* XNodeUnion tags. The X-macro rows in xnn_nodes.def name every one. */
enum {
#define XNN_NODE(tag, name, kind) XNN_NODE_##name = tag,
#include "xnn_nodes.def"
#undef XNN_NODE
    XNN_NODE_MAX_TAG = 47
};

/* How a node's table is laid out in the file (which reader decodes it). */
typedef enum xnn_kind {
    XNN_K_1X1,      /* _XNNNode1x1: input, output, flags */
    XNN_K_2X1,      /* _XNNNode2x1: input1, input2, output, flags */
    XNN_K_FC,       /* XNNFullyConnected */
    XNN_K_CONV,     /* _XNNNodeConv */
    XNN_K_POOL,     /* _XNNPooling2D */
    XNN_K_ARGMAX,   /* XNNArgMaxPooling2d */
    XNN_K_CAT,      /* _XNNCat */
    XNN_K_TRANSPOSE,
    XNN_K_RESHAPE,
    XNN_K_SLICE,
    XNN_K_PAD,
    XNN_K_RESIZE,
    XNN_K_ELU,
    XNN_K_LEAKY,
    XNN_K_SDPA
} xnn_kind;

/* Quantization of a value. Every kind is decoded and verified; the nodes
 * run (xnn_check_quant.c says exactly which):
 * - dynamically quantized products: a Convert of float32 into qdint8
 *   values, then a FullyConnected (qcint8, qcint4 or qbint4 filter), a
 *   Conv2d or a ConvTranspose2d (qcint8 filter) of those, with float32
 *   bias and output;
 * - statically quantized int8 graphs: qint8 activations quantized per
 *   tensor, Converts at their float32 edges, FullyConnected, Conv2d,
 *   DepthwiseConv2d and ConvTranspose2d with qcint8 (per channel) or qint8
 *   (per tensor) filters and qcint32 / qint32 biases, Add, Subtract,
 *   Multiply, the elementwise unary nodes (through a table), MaxPooling2d,
 *   GlobalAvgPooling2d and the layout nodes, with qint8 values inside or at
 *   the delegate's edges;
 * and refuse every other quantized operand. */
typedef enum xnn_quant {
    XNN_Q_NONE = 0, XNN_Q_PER_CHANNEL = 1, XNN_Q_PER_TENSOR = 2, XNN_Q_PER_TOKEN = 3,
    XNN_Q_PER_CHANNEL_GROUP = 4
} xnn_quant;

typedef struct xnn_value {
    uint8_t dtype;
    uint8_t rank;
    uint8_t quant;               /* xnn_quant */
    uint32_t flags;              /* XNN_VALUE_EXTERNAL_* */
    uint32_t external_id;        /* delegate argument index, or XNN_INVALID_ID */
    uint32_t id;                 /* the file's id_out */
    size_t dims[XNN_MAX_DIMS];   /* as serialized: upper bounds for dynamic shapes */
    size_t shape[XNN_MAX_DIMS];  /* the current shape (xnn_shape.c) */
    /* constants: their bytes, owned by the backend (copied at init) */
    const void *constant;
    size_t constant_bytes;
    bool has_constant;           /* the file gives its bytes (a constant) */
    /* quantization parameters */
    float scale;
    int32_t zero_point;
    int32_t channel_dim, group_size;
    uint32_t num_nonbatch_dims;
    uint32_t num_scales;         /* per channel / per group: how many scales */
    bool scales_bf16;            /* those scales are bfloat16 (else float32) */
    /* planning: the nodes that make and last read it, its bytes in the arena */
    int32_t first, last;
    size_t offset, capacity;
    bool planned;                /* lives in the arena */
    void *data;                  /* bound before every run */
} xnn_value;

typedef struct xnn_conv_params {
    uint32_t pad_top, pad_right, pad_bottom, pad_left;
    uint32_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
    uint32_t group_in, group_out, groups, adj_h, adj_w;
} xnn_conv_params;

/* A quantized transposed convolution runs as a convolution of "phases"
 * (xnn_run_qconv.c, packed by xnn_pack.c). Along one axis, output o takes
 * tap k from input (o + pad - k * dilation) / stride when that divides, so
 * the taps it takes depend only on (o + pad) % stride: they are the taps
 * k = r, r + period, r + 2 period, ... < kernel of the one class r
 * (r < classes) with r * dilation % stride == (o + pad) % stride, or none.
 * Each class is packed as a filter of `slots` taps (zero weights past the
 * kernel), so every output pixel sums only the taps that land on it, in
 * the product's int32 sums, before its one requantization. */
typedef struct xnn_deconv_axis {
    size_t period;  /* stride / gcd(stride, dilation) */
    size_t classes; /* min(period, kernel): the phases that take taps */
    size_t slots;   /* ceil(kernel / period): taps of the largest class */
} xnn_deconv_axis;

static inline xnn_deconv_axis xnn_deconv_axis_of(size_t kernel, size_t stride, size_t dilation) {
    size_t a = stride, b = dilation; /* both >= 1 (xnn_shape.c) */
    while (b != 0) {
        const size_t t = a % b;
        a = b;
        b = t;
    }
    const size_t period = stride / a;
    xnn_deconv_axis ax = {period, kernel < period ? kernel : period,
                          kernel == 0 ? 0 : (kernel - 1) / period + 1};
    return ax;
}

/* How a node computes (set when its operands are checked, at init). */
enum {
    XNN_QM_FLOAT = 0,    /* float32 (and the float conversions) */
    XNN_QM_DYNAMIC = 1,  /* qdint8 input of a product: weights in qw, float32 output */
    XNN_QM_STATIC = 2    /* qint8 activations, int32 arithmetic, requantized outputs */
};

/* What a statically quantized node keeps beside its packed weights. */
typedef struct xnn_qs8_node {
    int32_t qmin, qmax;          /* output_min_max in output steps */
    /* depthwise convolution: filter [KH * KW][C], bias [C] in int32, and
     * the multipliers in_scale * w_scale[c] / out_scale */
    int8_t *dw_w;
    int32_t *dw_bias;
    float *dw_mult;
    /* elementwise unary nodes (Clamp, Sigmoid, Tanh, ELU, LeakyReLU,
     * Hardswish): the output byte of each of the 256 input bytes, indexed
     * by the input byte as unsigned, built at init (xnn_pack.c) */
    int8_t *lut;
} xnn_qs8_node;

typedef struct xnn_node {
    uint8_t type;                /* XNN_NODE_* */
    uint8_t kind;                /* xnn_kind */
    uint8_t nin, nout;
    uint32_t debug_handle;
    uint32_t flags;
    float out_min, out_max;      /* output_min_max (-inf, +inf when absent) */
    uint32_t in[5];              /* value indices; XNN_INVALID_ID for an absent bias */
    uint32_t out[2];
    union {
        xnn_conv_params conv;    /* convolutions and pooling (kernel = window) */
        struct {
            uint32_t n;
            uint32_t v[XNN_MAX_DIMS];
        } perm;                  /* transpose perm; reshape new shape */
        struct {
            uint32_t n;
            uint32_t offsets[XNN_MAX_DIMS], sizes[XNN_MAX_DIMS];
        } slice;
        struct {
            uint32_t pre[XNN_MAX_DIMS], post[XNN_MAX_DIMS];
            float value;
        } pad;
        struct {
            uint32_t height, width;
        } resize;
        uint32_t axis;           /* concatenate */
        float alpha;             /* ELU alpha, LeakyReLU slope */
    } p;
    /* weights packed at init (fully connected, convolutions), in the
     * method's memory or in the weight cache's */
    const float *packed;
    /* XNN_QM_*; a product on quantized weights (FullyConnected, Conv2d,
     * ConvTranspose2d of qdint8 or qint8 input) keeps them packed in qw (a
     * ConvTranspose2d: the geometry of one phase's filter, and the data of
     * every group's and phase's, one after the other) */
    uint8_t qmode;
    /* XNN_FUSED_*: work of a node that was folded into this one at init */
    uint8_t fused;
    eko_qd8_weights qw;
    xnn_qs8_node q;
    /* scratch bytes this node needs while it runs (im2col, packed operands) */
    size_t scratch_bytes;
    size_t scratch_offset;
} xnn_node;

/* A decoded, verified, planned delegate. */
typedef struct xnn_graph {
    xnn_value *values;
    uint32_t num_values;
    xnn_node *nodes;
    uint32_t num_nodes;
    uint32_t num_externs;
    uint32_t *inputs, *outputs;  /* value indices of the externals, by external id */
    uint32_t num_inputs, num_outputs;
    uint8_t *arena;              /* intermediates and node scratch (bound in execute) */
    size_t arena_bytes;
    void *const *workspace;      /* the method's shared workspace, which holds the arena */
    ember_threadpool *threadpool;
    int isa;                     /* eko_isa the weights were packed for */
    const eko_qd8_gemm_config *qd8;  /* the quantized kernels in use */
} xnn_graph;

/* Where a constant's bytes are, until init packs or copies them: the
 * program's named data (key) or the payload (bytes, valid during init). */
typedef struct xnn_const_source {
    bool present;
    const char *key;
    size_t key_len;
    const uint8_t *bytes;
    size_t size;     /* bytes there (named data: checked when loaded) */
    size_t needed;   /* bytes the value's shape needs */
} xnn_const_source;

/* Names for messages. */
const char *xnn_node_name(uint8_t type);
const char *xnn_dtype_name(uint8_t dtype);

/* Fails naming a node: "xnnpack node <i> (<name>, debug handle <h>): ..." */
ember_status xnn_node_fail(const xnn_graph *g, uint32_t node, ember_status st, const char *fmt,
                           ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Decodes and verifies a payload (xnn_read.c); *sources (from
 * ctx->allocator) says where each constant's bytes are: (*sources)[i] those
 * of value i, (*sources)[num_values + i] those of its quantization scales
 * (per-channel and per-group quantization). */
ember_status xnn_read(const ember_backend_init_ctx *ctx, const uint8_t *payload, size_t size,
                      xnn_graph *g, xnn_const_source **sources);

/* Whether node ni has a quantized operand; then checks its operands and
 * sets its qmode (xnn_check_quant.c). */
bool xnn_node_is_quantized(const xnn_graph *g, uint32_t ni);
ember_status xnn_check_quantized(xnn_graph *g, uint32_t ni);
/* The node that makes value vi, or UINT32_MAX; how many node inputs read
 * vi (xnn_fuse.c). */
uint32_t xnn_value_producer(const xnn_graph *g, uint32_t vi);
uint32_t xnn_value_readers(const xnn_graph *g, uint32_t vi);

/* Removes the nodes a fusion emptied (nin = nout = 0) and renumbers each
 * value's producer (xnn_fuse.c). */
void xnn_drop_emptied_nodes(xnn_graph *g);

/* What xnn_fuse_f32 folded into a node. */
enum { XNN_FUSED_NONE = 0, XNN_FUSED_SILU = 1 };

/* Folds each float32 Multiply of a value by its own Sigmoid (SiLU, as
 * PyTorch's silu is exported) into the Sigmoid, which then writes x *
 * sigmoid(x) in one pass, clamped as the Multiply was; the Sigmoid's
 * output must be internal and read by that Multiply only. Called after
 * xnn_read (xnn_fuse.c). */
void xnn_fuse_f32(xnn_graph *g);

/* Folds each elementwise float32 function of a dequantized qint8 value
 * that is quantized again (Convert to float32, Sigmoid (also as SiLU),
 * Tanh or Hardswish, Convert to qint8, as a statically quantized model
 * runs what its quantizer left in float32) into the function's node, which
 * then runs on qint8 as one table of the 256 input bytes: the same float
 * function of each dequantized byte, quantized once. The float values
 * between must be internal and read by the next node alone. Called after
 * xnn_fuse_f32 (xnn_fuse.c). */
void xnn_fuse_qs8_unary(xnn_graph *g);

/* Folds each Clamp that alone reads the output of a statically quantized
 * product (Conv2d, DepthwiseConv2d, ConvTranspose2d, FullyConnected) into it, as XNNPACK
 * does: the product then rounds once, into the Clamp's output quantization,
 * within the intersection of both ranges. Called after xnn_read. */
void xnn_fuse_qs8_clamps(xnn_graph *g);

/* Shapes of every value from the current input shapes (xnn_shape.c).
 * check_capacity: fail if a planned value would outgrow its bytes. */
ember_status xnn_infer_shapes(xnn_graph *g, bool check_capacity);

/* Lifetimes, scratch needs and arena offsets, and the arena asked of the
 * method's shared workspace (xnn_plan.c). */
ember_status xnn_plan(xnn_graph *g, const ember_backend_init_ctx *ctx);

/* Points the arena and the planned values into the method's workspace, which
 * the method allocates after every delegate's init (xnn_plan.c). */
void xnn_bind_arena(xnn_graph *g);

/* Loads every constant (named data through ctx), packs the weights of the
 * nodes that multiply by them and keeps a copy of the others (xnn_pack.c). */
ember_status xnn_pack(xnn_graph *g, const ember_backend_init_ctx *ctx,
                      const xnn_const_source *sources);

/* Runs node i (xnn_run.c dispatches to the node families). */
ember_status xnn_run_node(xnn_graph *g, uint32_t i);

/* Element count of a shape, bytes of a value at dims; false on overflow. */
bool xnn_numel(const size_t *dims, size_t rank, size_t *numel);
bool xnn_value_bytes(const xnn_value *v, const size_t *dims, size_t *bytes);
/* Bytes per element (0 for the 4-bit types). */
size_t xnn_dtype_size(uint8_t dtype);

/* A qdint8 value at dims holds its int8 data (EKO_QD8_X_PAD readable bytes
 * after it, rounded to 16), then one eko_qd8_row per row (the product of
 * the dims before its num_nonbatch_dims). *data_bytes: where the rows'
 * parameters start; false on overflow. xnn_value_bytes counts both. */
bool xnn_qd8_layout(const xnn_value *v, const size_t *dims, size_t *data_bytes, size_t *rows);

#endif /* EMBER_BACKENDS_XNNPACK_XNN_GRAPH_H */
