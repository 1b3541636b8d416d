/*
 * VulkanBackend's operators: for each VkGraph operator name, the rule that
 * checks its arguments, infers its output shape from its inputs' current
 * shapes, and fills its dispatches (shader, bindings, parameter block,
 * workgroup count). The same rule runs at init, on the upper-bound shapes
 * (where it also checks that every output fits its serialized dims), and
 * before every execute, on the actual input shapes, so a command buffer
 * recorded once dispatches for the actual sizes (indirect dispatches read
 * the counts written here).
 *
 * Data movement (view, permute, slice, select, cat, split, expand) is a
 * strided copy through the elementwise shader; all tensors are contiguous.
 * A view, squeeze, unsqueeze or clone whose output may share its input's
 * bytes records no dispatch at all (vk_plan.c). Products, softmax, layer
 * norm and attention pick their shaders by g->kernels (vk_graph.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vk_graph.h"

/* Elementwise op codes (shaders/elementwise.comp). */
enum {
    EW_COPY = 0, EW_RELU = 1, EW_GELU = 2, EW_GELU_TANH = 3, EW_CLAMP = 4, EW_HARDSWISH = 5,
    EW_SIGMOID = 6, EW_TANH = 7, EW_EXP = 8, EW_NEG = 9, EW_ABS = 10, EW_SQRT = 11,
    EW_RSQRT = 12, EW_NOT = 13, EW_FILL = 14, EW_ARANGE = 15, EW_LOG = 16, EW_SIN = 17,
    EW_COS = 18, EW_TRUNC = 19, EW_ADD = 20, EW_SUB = 21, EW_MUL = 22, EW_DIV = 23, EW_EQ = 24, EW_NE = 25,
    EW_LT = 26, EW_LE = 27, EW_GT = 28, EW_GE = 29, EW_AND = 30, EW_OR = 31, EW_MAX = 32,
    EW_MIN = 33, EW_POW = 34, EW_WHERE = 40
};

const char *const vk_shader_name[VK_SH_COUNT] = {
    "elementwise", "matmul", "softmax", "layer_norm", "embedding", "reduce", "conv2d", "pool2d",
    "sdpa", "conv_transpose2d", "group_norm", "upsample2d", "gather", "rotary_emb", "matvec",
    "matmul_tiled", "matvec_sg",
};

ember_status vk_node_fail(const vk_graph *g, const vk_node *n, ember_status st, const char *fmt,
                          ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ember_backend_fail_at(st, n->node_id, "vulkan: operator %u (%s, node %u): %s",
                                 (unsigned)(n - g->nodes), n->op->name, n->node_id, msg);
}

#define FAIL(...) return vk_node_fail(g, n, EMBER_ERR_INVALID_PROGRAM, __VA_ARGS__)

static vk_value *arg(vk_graph *g, const vk_node *n, uint32_t k) {
    return &g->values[g->args[n->args_at + k]];
}

static uint32_t arg_id(const vk_graph *g, const vk_node *n, uint32_t k) {
    return g->args[n->args_at + k];
}

static ember_status want_args(vk_graph *g, vk_node *n, uint32_t min, uint32_t max) {
    if (n->nargs < min || n->nargs > max)
        FAIL("%u arguments, expected %u to %u", n->nargs, min, max);
    return EMBER_OK;
}

static ember_status tensor_arg(vk_graph *g, vk_node *n, uint32_t k, vk_value **out) {
    vk_value *v = arg(g, n, k);
    *out = v;
    if (v->kind != VK_V_TENSOR) FAIL("argument %u is not a tensor (kind %u)", k, v->kind);
    *out = v;
    return EMBER_OK;
}

static ember_status int_arg(vk_graph *g, vk_node *n, uint32_t k, int64_t *out) {
    vk_value *v = arg(g, n, k);
    *out = 0;
    if (v->kind != VK_V_INT && v->kind != VK_V_SYMINT && v->kind != VK_V_BOOL)
        FAIL("argument %u is not an int (kind %u)", k, v->kind);
    *out = v->i;
    return EMBER_OK;
}

static ember_status num_arg(vk_graph *g, vk_node *n, uint32_t k, double def, double *out) {
    vk_value *v = arg(g, n, k);
    *out = def;
    if (v->kind == VK_V_DOUBLE) *out = v->d;
    else if (v->kind == VK_V_INT || v->kind == VK_V_SYMINT || v->kind == VK_V_BOOL)
        *out = (double)v->i;
    else if (v->kind == VK_V_NULL) *out = def;
    else FAIL("argument %u is not a number (kind %u)", k, v->kind);
    return EMBER_OK;
}

/* An int list: IntList, BoolList, or ValueList of Int/SymInt values. */
static ember_status list_arg(vk_graph *g, vk_node *n, uint32_t k, int64_t *out, uint32_t *len,
                             uint32_t max) {
    vk_value *v = arg(g, n, k);
    *len = 0;
    if (v->kind != VK_V_INTLIST && v->kind != VK_V_VALUELIST && v->kind != VK_V_BOOLLIST)
        FAIL("argument %u is not an int list (kind %u)", k, v->kind);
    if (v->list_len > max) FAIL("argument %u has %u items (at most %u)", k, v->list_len, max);
    for (uint32_t j = 0; j < v->list_len; j++) {
        int64_t x = g->ints[v->list_at + j];
        if (v->kind == VK_V_VALUELIST) {
            const vk_value *item = &g->values[x];
            if (item->kind != VK_V_INT && item->kind != VK_V_SYMINT)
                FAIL("argument %u: item %u is not an int", k, j);
            x = item->i;
        }
        out[j] = x;
    }
    *len = v->list_len;
    return EMBER_OK;
}

/* A ValueList of tensors: their value ids. */
static ember_status tensor_list_arg(vk_graph *g, vk_node *n, uint32_t k, const int64_t **ids,
                                    uint32_t *len) {
    vk_value *v = arg(g, n, k);
    *ids = NULL;
    *len = 0;
    if (v->kind != VK_V_VALUELIST) FAIL("argument %u is not a value list", k);
    for (uint32_t j = 0; j < v->list_len; j++)
        if (g->values[g->ints[v->list_at + j]].kind != VK_V_TENSOR)
            FAIL("argument %u: item %u is not a tensor", k, j);
    *ids = &g->ints[v->list_at];
    *len = v->list_len;
    return EMBER_OK;
}

static size_t numel(const vk_value *v) {
    size_t n = 1;
    for (uint32_t d = 0; d < v->rank; d++) n *= v->dims[d]; /* bounded at read: no overflow */
    return n;
}

/* Normalizes a dim index against rank. */
static ember_status norm_dim(vk_graph *g, vk_node *n, int64_t dim, uint32_t rank, uint32_t *out) {
    int64_t r = rank == 0 ? 1 : rank;
    *out = 0;
    if (dim < -r || dim >= r) FAIL("dim %lld out of range for rank %u", (long long)dim, rank);
    *out = (uint32_t)(dim < 0 ? dim + r : dim);
    return EMBER_OK;
}

/* Sets an output's current shape: same rank as serialized, within bounds. */
static ember_status set_out(vk_graph *g, vk_node *n, vk_value *out, const size_t *dims,
                            uint32_t rank) {
    if (out->is_const) FAIL("writes a constant");
    /* a 0-dim tensor and a [1] tensor hold the same element */
    size_t one = 1;
    if (rank == 0 && out->rank == 1) {
        dims = &one;
        rank = 1;
    }
    if (rank != out->rank) FAIL("output has rank %u, the operator makes rank %u", out->rank, rank);
    for (uint32_t d = 0; d < rank; d++) {
        if (dims[d] > out->bound[d])
            return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH,
                                "output dim %u is %zu, above its bound %u", d, dims[d],
                                out->bound[d]);
        out->dims[d] = (uint32_t)dims[d];
    }
    return EMBER_OK;
}

static void contiguous_strides(const uint32_t *dims, uint32_t rank, size_t *strides) {
    size_t s = 1;
    for (uint32_t d = rank; d-- > 0;) {
        strides[d] = s;
        s *= dims[d];
    }
}

static uint32_t *params(vk_graph *g, vk_dispatch *d) {
    uint32_t *p = g->control + d->params_at / 4;
    memset(p, 0, VK_PARAM_WORDS * 4);
    return p;
}

static uint32_t fbits(double x) {
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint32_t groups_for(size_t work) {
    size_t gr = work / VK_GROUP_SIZE + (work % VK_GROUP_SIZE != 0);
    return gr > UINT32_MAX ? UINT32_MAX : (uint32_t)gr;
}

/* Workgroups of a shader with specialization constant ROWS (rows.glsl)
 * over `rows` rows: a workgroup each on a GPU (variant 1), else one
 * invocation each. */
static uint32_t rows_groups(const vk_graph *g, vk_dispatch *d, size_t rows) {
    d->variant = g->kernels != VK_KERNELS_SIMPLE;
    if (!d->variant) return groups_for(rows);
    return rows > UINT32_MAX ? UINT32_MAX : (uint32_t)rows;
}

static void bind(vk_dispatch *d, uint8_t shader, uint32_t b0, uint32_t b1, uint32_t b2,
                 uint32_t b3) {
    d->shader = shader;
    d->bind[0] = b0;
    d->bind[1] = b1;
    d->bind[2] = b2;
    d->bind[3] = b3;
    d->bind[4] = d->bind[5] = VK_NONE;
}

/* ---------------------------------------------------------------------- */
/* Elementwise family                                                     */
/* ---------------------------------------------------------------------- */

/* One strided view: sizes of the iteration space (rank <= 6), strides. */
typedef struct view {
    uint32_t rank;
    size_t sizes[VK_MAX_DIMS];
    size_t out_strides[VK_MAX_DIMS], out_offset;
    size_t in_strides[3][VK_MAX_DIMS], in_offset[3];
} view;

/* Merges adjacent dims that every operand steps through as one (a
 * contiguous copy or a same-shape binary op becomes rank 1), so the shader
 * does less index arithmetic. */
static void collapse(view *w) {
    uint32_t r = 0;
    for (uint32_t d = 0; d < w->rank; d++) {
        bool merge = r > 0 && w->out_strides[r - 1] == w->out_strides[d] * w->sizes[d];
        for (int k = 0; k < 3 && merge; k++)
            merge = w->in_strides[k][r - 1] == w->in_strides[k][d] * w->sizes[d];
        if (merge) {
            w->sizes[r - 1] *= w->sizes[d];
            w->out_strides[r - 1] = w->out_strides[d];
            for (int k = 0; k < 3; k++) w->in_strides[k][r - 1] = w->in_strides[k][d];
            continue;
        }
        w->sizes[r] = w->sizes[d];
        w->out_strides[r] = w->out_strides[d];
        for (int k = 0; k < 3; k++) w->in_strides[k][r] = w->in_strides[k][d];
        r++;
    }
    w->rank = r;
}

static ember_status ew_write(vk_graph *g, vk_node *n, vk_dispatch *d, const view *wv, uint32_t op,
                             uint32_t nin, double f0, double f1) {
    view merged = *wv;
    const view *w = &merged;
    collapse(&merged);
    uint32_t *p = params(g, d);
    size_t total = 1;
    for (uint32_t k = 0; k < w->rank; k++) total *= w->sizes[k];
    size_t limit = UINT32_MAX;
    if (total > limit) FAIL("%zu elements (at most %zu)", total, limit);
    if (g->init_phase) d->variant = (uint8_t)op;
    else if (d->variant != op) FAIL("elementwise operator changed (%u, %u)", d->variant, op);
    p[0] = (uint32_t)total;
    p[1] = w->rank;
    p[2] = op;
    p[3] = nin;
    for (uint32_t k = 0; k < w->rank; k++) {
        p[4 + k] = (uint32_t)w->sizes[k];
        p[10 + k] = (uint32_t)w->out_strides[k];
        p[17 + k] = (uint32_t)w->in_strides[0][k];
        p[24 + k] = (uint32_t)w->in_strides[1][k];
        p[31 + k] = (uint32_t)w->in_strides[2][k];
    }
    p[16] = (uint32_t)w->out_offset;
    p[23] = (uint32_t)w->in_offset[0];
    p[30] = (uint32_t)w->in_offset[1];
    p[37] = (uint32_t)w->in_offset[2];
    p[38] = fbits(f0);
    p[39] = fbits(f1);
    d->groups = groups_for(total);
    return EMBER_OK;
}

/* Broadcast shape of up to three tensors (right-aligned). */
static ember_status broadcast(vk_graph *g, vk_node *n, vk_value *const *in, uint32_t nin,
                              size_t *dims, uint32_t *rank) {
    uint32_t r = 0;
    for (uint32_t k = 0; k < nin; k++)
        if (in[k]->rank > r) r = in[k]->rank;
    for (uint32_t d = 0; d < r; d++) {
        size_t size = 1;
        for (uint32_t k = 0; k < nin; k++) {
            int at = (int)d - (int)(r - in[k]->rank);
            if (at < 0) continue;
            size_t s = in[k]->dims[at];
            if (s == 1) continue;
            if (size != 1 && size != s) FAIL("shapes do not broadcast (dim %u: %zu vs %zu)", d, size, s);
            size = s;
        }
        dims[d] = size;
    }
    *rank = r;
    return EMBER_OK;
}

/* The view of inputs broadcast to out (out contiguous). */
static void broadcast_view(vk_value *out, vk_value *const *in, uint32_t nin, view *w) {
    memset(w, 0, sizeof *w);
    w->rank = out->rank;
    for (uint32_t d = 0; d < out->rank; d++) w->sizes[d] = out->dims[d];
    contiguous_strides(out->dims, out->rank, w->out_strides);
    for (uint32_t k = 0; k < nin; k++) {
        size_t st[VK_MAX_DIMS];
        contiguous_strides(in[k]->dims, in[k]->rank, st);
        for (uint32_t d = 0; d < out->rank; d++) {
            int at = (int)d - (int)(out->rank - in[k]->rank);
            w->in_strides[k][d] = (at < 0 || in[k]->dims[at] == 1) ? 0 : st[at];
        }
    }
}

/* Shared by unary, binary (tensor or scalar) and where. */
static ember_status run_ew(vk_graph *g, vk_node *n, vk_dispatch *dp, uint32_t op, uint32_t nin,
                           uint32_t first, double f0, double f1) {
    vk_value *in[3], *out;
    for (uint32_t k = 0; k < nin; k++) TRY_RET(tensor_arg(g, n, first + k, &in[k]));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    size_t dims[VK_MAX_DIMS];
    uint32_t rank = 0;
    TRY_RET(broadcast(g, n, in, nin, dims, &rank));
    TRY_RET(set_out(g, n, out, dims, rank));
    view w;
    broadcast_view(out, in, nin, &w);
    bind(dp, VK_SH_ELEMENTWISE, arg_id(g, n, n->nargs - 1), nin > 0 ? arg_id(g, n, first) : VK_NONE,
         nin > 1 ? arg_id(g, n, first + 1) : VK_NONE, nin > 2 ? arg_id(g, n, first + 2) : VK_NONE);
    return ew_write(g, n, dp, &w, op, nin, f0, f1);
}

static ember_status op_unary(vk_graph *g, vk_node *n, vk_dispatch *d) {
    TRY_RET(want_args(g, n, 2, 2));
    return run_ew(g, n, d, (uint32_t)n->op->code, 1, 0, 0, 0);
}

static ember_status op_gelu(vk_graph *g, vk_node *n, vk_dispatch *d) {
    TRY_RET(want_args(g, n, 2, 3));
    uint32_t op = EW_GELU;
    if (n->nargs == 3) {
        const vk_value *a = arg(g, n, 1);
        if (a->kind == VK_V_STRING && strcmp(a->str, "tanh") == 0) op = EW_GELU_TANH;
        else if (a->kind == VK_V_STRING && strcmp(a->str, "none") != 0 && a->str[0] != '\0')
            FAIL("unknown approximation \"%s\"", a->str);
    }
    return run_ew(g, n, d, op, 1, 0, 0, 0);
}

/* hardtanh(x, min, max) and clamp(x, min?, max?). */
static ember_status op_clamp(vk_graph *g, vk_node *n, vk_dispatch *d) {
    TRY_RET(want_args(g, n, 4, 4));
    double lo, hi;
    TRY_RET(num_arg(g, n, 1, -INFINITY, &lo));
    TRY_RET(num_arg(g, n, 2, INFINITY, &hi));
    return run_ew(g, n, d, EW_CLAMP, 1, 0, lo, hi);
}

/* Binary with a tensor or a scalar second operand; add/sub take alpha. */
static ember_status op_binary(vk_graph *g, vk_node *n, vk_dispatch *d) {
    uint32_t op = (uint32_t)n->op->code;
    bool alpha = op == EW_ADD || op == EW_SUB;
    TRY_RET(want_args(g, n, 3, alpha ? 4 : 3));
    double a = 1.0, s = 0.0;
    if (alpha && n->nargs == 4) TRY_RET(num_arg(g, n, 2, 1.0, &a));
    if (arg(g, n, 1)->kind == VK_V_TENSOR) return run_ew(g, n, d, op, 2, 0, 0, a);
    TRY_RET(num_arg(g, n, 1, 0, &s));
    return run_ew(g, n, d, op, 1, 0, s, a);
}

static ember_status op_where(vk_graph *g, vk_node *n, vk_dispatch *d) {
    TRY_RET(want_args(g, n, 4, 4));
    return run_ew(g, n, d, EW_WHERE, 3, 0, 0, 0);
}

/* full(sizes, value, ...) and full_like(x, value, ...): output last. */
static ember_status op_full(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, n->op->code == 2 ? 2 : 3, 9));
    vk_value *out;
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    size_t dims[VK_MAX_DIMS];
    uint32_t rank = 0;
    if (n->op->code == 2) { /* scalar_tensor(value, ...): a 0-dim tensor */
        rank = 0;
    } else if (n->op->code == 1) { /* like */
        vk_value *x;
        TRY_RET(tensor_arg(g, n, 0, &x));
        rank = x->rank;
        for (uint32_t k = 0; k < rank; k++) dims[k] = x->dims[k];
    } else {
        int64_t sizes[VK_MAX_DIMS];
        TRY_RET(list_arg(g, n, 0, sizes, &rank, VK_MAX_DIMS));
        for (uint32_t k = 0; k < rank; k++) {
            if (sizes[k] < 0) FAIL("size %lld", (long long)sizes[k]);
            dims[k] = (size_t)sizes[k];
        }
    }
    double value;
    TRY_RET(num_arg(g, n, n->op->code == 2 ? 0 : 1, 0, &value));
    TRY_RET(set_out(g, n, out, dims, rank));
    view w;
    broadcast_view(out, NULL, 0, &w);
    bind(dp, VK_SH_ELEMENTWISE, arg_id(g, n, n->nargs - 1), VK_NONE, VK_NONE, VK_NONE);
    return ew_write(g, n, dp, &w, EW_FILL, 0, value, 0);
}

/* arange.start_step(start, end, step, dtype, layout, device, pin, out) */
static ember_status op_arange(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 4, 8));
    double start, end, step;
    TRY_RET(num_arg(g, n, 0, 0, &start));
    TRY_RET(num_arg(g, n, 1, 0, &end));
    TRY_RET(num_arg(g, n, 2, 1, &step));
    if (step == 0 || !isfinite(start) || !isfinite(end) || !isfinite(step)) FAIL("bad range");
    double count = ceil((end - start) / step);
    if (count < 0) count = 0;
    vk_value *out;
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    if (count > (double)UINT32_MAX) FAIL("range of %g elements", count);
    size_t dims[1] = {(size_t)count};
    TRY_RET(set_out(g, n, out, dims, 1));
    view w;
    broadcast_view(out, NULL, 0, &w);
    bind(dp, VK_SH_ELEMENTWISE, arg_id(g, n, n->nargs - 1), VK_NONE, VK_NONE, VK_NONE);
    return ew_write(g, n, dp, &w, EW_ARANGE, 0, start, step);
}

/* ---------------------------------------------------------------------- */
/* Data movement                                                          */
/* ---------------------------------------------------------------------- */

/* out (contiguous) = in read through strides and an offset. */
static ember_status copy_view(vk_graph *g, vk_node *n, vk_dispatch *dp, uint32_t out_id,
                              uint32_t in_id, const view *w) {
    bind(dp, VK_SH_ELEMENTWISE, out_id, in_id, VK_NONE, VK_NONE);
    return ew_write(g, n, dp, w, EW_COPY, 1, 0, 0);
}

/* A view that reads in contiguously into out (same numel). */
static ember_status flat_copy(vk_graph *g, vk_node *n, vk_dispatch *dp, uint32_t out_id,
                              uint32_t in_id, size_t count) {
    view w;
    memset(&w, 0, sizeof w);
    w.rank = 1;
    w.sizes[0] = count;
    w.out_strides[0] = 1;
    w.in_strides[0][0] = 1;
    return copy_view(g, n, dp, out_id, in_id, &w);
}

/* view_copy(in, sizes, out), _unsafe_view: sizes may hold one -1. */
static ember_status op_view(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 3, 3));
    vk_value *in, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, 2, &out));
    int64_t sizes[VK_MAX_DIMS];
    uint32_t rank = 0;
    TRY_RET(list_arg(g, n, 1, sizes, &rank, VK_MAX_DIMS));
    size_t total = numel(in), known = 1, dims[VK_MAX_DIMS];
    int infer = -1;
    for (uint32_t k = 0; k < rank; k++) {
        if (sizes[k] == -1 && infer < 0) {
            infer = (int)k;
            continue;
        }
        if (sizes[k] < 0 || sizes[k] > INT32_MAX) FAIL("size %lld", (long long)sizes[k]);
        dims[k] = (size_t)sizes[k];
        if (ember_mul_overflow(known, dims[k], &known)) FAIL("sizes overflow");
    }
    if (infer >= 0) {
        if (known == 0 || total % known != 0) FAIL("cannot infer a size for %zu elements", total);
        dims[infer] = total / known;
        known = total;
    }
    if (known != total)
        return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "views %zu elements as %zu", total,
                            known);
    TRY_RET(set_out(g, n, out, dims, rank));
    return flat_copy(g, n, dp, arg_id(g, n, 2), arg_id(g, n, 0), total);
}

/* clone(in, [memory_format], out), prepack(const, out), alias_copy: a copy. */
static ember_status op_clone(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 2, 3));
    vk_value *in, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    size_t dims[VK_MAX_DIMS];
    for (uint32_t k = 0; k < in->rank; k++) dims[k] = in->dims[k];
    TRY_RET(set_out(g, n, out, dims, in->rank));
    return flat_copy(g, n, dp, arg_id(g, n, n->nargs - 1), arg_id(g, n, 0), numel(in));
}

/* _to_copy(in, ..., out), _to_dim_order_copy(in, ..., out): a dtype
 * conversion; the GPU holds floats, so only conversions to integers
 * (truncation) and booleans (nonzero) change values. */
static ember_status op_to_copy(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 2, 8));
    vk_value *out;
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    uint32_t op = EW_COPY;
    double f0 = 0;
    if (out->dtype == VK_DT_BOOL) op = EW_NE; /* x != 0 */
    else if (out->dtype == VK_DT_INT32 || out->dtype == VK_DT_INT64) op = EW_TRUNC;
    return run_ew(g, n, dp, op, 1, 0, f0, 1.0);
}

/* unsqueeze_copy(in, dim, out), squeeze_copy.dims(in, dims, out): a reshape. */
static ember_status op_squeeze(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 3, 3));
    vk_value *in, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, 2, &out));
    size_t dims[VK_MAX_DIMS];
    uint32_t rank = 0;
    if (n->op->code == 0) { /* unsqueeze */
        int64_t dim;
        uint32_t at;
        TRY_RET(int_arg(g, n, 1, &dim));
        if (in->rank >= VK_MAX_DIMS) FAIL("rank %u is too large to unsqueeze", in->rank);
        TRY_RET(norm_dim(g, n, dim, in->rank + 1u, &at));
        for (uint32_t k = 0; k <= in->rank; k++)
            dims[rank++] = k == at ? 1 : in->dims[k < at ? k : k - 1];
    } else {
        int64_t sq[VK_MAX_DIMS];
        uint32_t nsq;
        bool drop[VK_MAX_DIMS] = {false};
        TRY_RET(list_arg(g, n, 1, sq, &nsq, VK_MAX_DIMS));
        for (uint32_t k = 0; k < nsq; k++) {
            uint32_t at;
            TRY_RET(norm_dim(g, n, sq[k], in->rank, &at));
            if (at < in->rank && in->dims[at] == 1) drop[at] = true;
        }
        for (uint32_t k = 0; k < in->rank; k++)
            if (!drop[k]) dims[rank++] = in->dims[k];
    }
    TRY_RET(set_out(g, n, out, dims, rank));
    return flat_copy(g, n, dp, arg_id(g, n, 2), arg_id(g, n, 0), numel(in));
}

/* permute_copy(in, dims, out) */
static ember_status op_permute(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 3, 3));
    vk_value *in, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, 2, &out));
    int64_t perm[VK_MAX_DIMS];
    uint32_t rank = 0;
    TRY_RET(list_arg(g, n, 1, perm, &rank, VK_MAX_DIMS));
    if (rank != in->rank) FAIL("permutes %u dims of a rank-%u tensor", rank, in->rank);
    bool seen[VK_MAX_DIMS] = {false};
    size_t dims[VK_MAX_DIMS], st[VK_MAX_DIMS];
    contiguous_strides(in->dims, in->rank, st);
    view w;
    memset(&w, 0, sizeof w);
    w.rank = rank;
    for (uint32_t k = 0; k < rank; k++) {
        uint32_t p;
        TRY_RET(norm_dim(g, n, perm[k], rank, &p));
        if (seen[p]) FAIL("dim %u appears twice", p);
        seen[p] = true;
        dims[k] = in->dims[p];
        w.sizes[k] = dims[k];
        w.in_strides[0][k] = st[p];
    }
    TRY_RET(set_out(g, n, out, dims, rank));
    contiguous_strides(out->dims, out->rank, w.out_strides);
    return copy_view(g, n, dp, arg_id(g, n, 2), arg_id(g, n, 0), &w);
}

/* t_copy(in, out): a permutation of a rank <= 2 tensor. */
static ember_status op_t(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 2, 2));
    vk_value *in, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, 1, &out));
    if (in->rank > 2) FAIL("transposes a rank-%u tensor", in->rank);
    view w;
    memset(&w, 0, sizeof w);
    size_t dims[2];
    w.rank = in->rank;
    for (uint32_t k = 0; k < in->rank; k++) {
        uint32_t p = in->rank - 1 - k;
        dims[k] = in->dims[p];
        w.sizes[k] = dims[k];
        w.in_strides[0][k] = p + 1u == in->rank ? 1 : in->dims[in->rank - 1];
    }
    TRY_RET(set_out(g, n, out, dims, in->rank));
    contiguous_strides(out->dims, out->rank, w.out_strides);
    return copy_view(g, n, dp, arg_id(g, n, 1), arg_id(g, n, 0), &w);
}

/* Clamps a slice bound as Python does. */
static int64_t clamp_index(int64_t x, int64_t size) {
    if (x < 0) x += size;
    if (x < 0) x = 0;
    if (x > size) x = size;
    return x;
}

/* slice_copy.Tensor(in, dim, start?, end?, step, out), select_copy.int(in, dim, index, out) */
static ember_status op_slice(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    bool select = n->op->code == 1;
    TRY_RET(want_args(g, n, select ? 4 : 6, select ? 4 : 6));
    vk_value *in, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    int64_t dim;
    uint32_t at;
    TRY_RET(int_arg(g, n, 1, &dim));
    TRY_RET(norm_dim(g, n, dim, in->rank, &at));
    if (in->rank == 0) FAIL("slices a 0-dim tensor");
    int64_t size = in->dims[at], start, end, step = 1;
    if (select) {
        TRY_RET(int_arg(g, n, 2, &start));
        if (start < -size || start >= size)
            return vk_node_fail(g, n, EMBER_ERR_INDEX_OUT_OF_RANGE, "index %lld for size %lld",
                                (long long)start, (long long)size);
        if (start < 0) start += size;
        end = start + 1;
    } else {
        double s, e;
        TRY_RET(num_arg(g, n, 2, 0, &s));
        TRY_RET(num_arg(g, n, 3, (double)INT64_MAX, &e));
        TRY_RET(int_arg(g, n, 4, &step));
        if (step <= 0) FAIL("step %lld", (long long)step);
        if (isnan(s) || isnan(e)) FAIL("bound is not a number");
        /* bounds beyond +-2^62 clamp like any out-of-range bound */
        start = clamp_index(s > 4e18 ? INT64_C(1) << 62 : s < -4e18 ? -(INT64_C(1) << 62) : (int64_t)s, size);
        end = clamp_index(e > 4e18 ? INT64_C(1) << 62 : e < -4e18 ? -(INT64_C(1) << 62) : (int64_t)e, size);
        if (end < start) end = start;
    }
    size_t st[VK_MAX_DIMS] = {0}, dims[VK_MAX_DIMS] = {0};
    contiguous_strides(in->dims, in->rank, st);
    view w;
    memset(&w, 0, sizeof w);
    w.rank = in->rank;
    for (uint32_t k = 0; k < in->rank; k++) {
        w.sizes[k] = k == at ? (size_t)((end - start + step - 1) / step) : in->dims[k];
        w.in_strides[0][k] = k == at ? st[k] * (size_t)step : st[k];
    }
    w.in_offset[0] = (size_t)start * st[at];
    uint32_t rank = 0;
    for (uint32_t k = 0; k < in->rank; k++)
        if (!(select && k == at)) dims[rank++] = w.sizes[k];
    TRY_RET(set_out(g, n, out, dims, rank));
    contiguous_strides(in->dims, in->rank, w.out_strides);
    /* out strides over the iteration space (the selected dim has size 1) */
    size_t s = 1;
    for (uint32_t k = in->rank; k-- > 0;) {
        w.out_strides[k] = s;
        s *= w.sizes[k];
    }
    return copy_view(g, n, dp, arg_id(g, n, n->nargs - 1), arg_id(g, n, 0), &w);
}

/* expand_copy(in, sizes, implicit, out) */
static ember_status op_expand(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 3, 4));
    vk_value *in, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    int64_t sizes[VK_MAX_DIMS];
    uint32_t rank = 0;
    TRY_RET(list_arg(g, n, 1, sizes, &rank, VK_MAX_DIMS));
    if (rank < in->rank) FAIL("expands rank %u to %u", in->rank, rank);
    size_t dims[VK_MAX_DIMS];
    for (uint32_t k = 0; k < rank; k++) {
        int at = (int)k - (int)(rank - in->rank);
        size_t have = at < 0 ? 1 : in->dims[at];
        if (sizes[k] == -1) {
            if (at < 0) FAIL("-1 for a new dim");
            dims[k] = have;
        } else {
            if (sizes[k] < 0 || (have != 1 && (size_t)sizes[k] != have))
                return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "cannot expand %zu to %lld",
                                    have, (long long)sizes[k]);
            dims[k] = (size_t)sizes[k];
        }
    }
    TRY_RET(set_out(g, n, out, dims, rank));
    view w;
    broadcast_view(out, &in, 1, &w);
    return copy_view(g, n, dp, arg_id(g, n, n->nargs - 1), arg_id(g, n, 0), &w);
}

/* cat(ValueList ins, dim, out): one dispatch per input. */
static ember_status op_cat(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 3, 3));
    const int64_t *ids;
    uint32_t count;
    TRY_RET(tensor_list_arg(g, n, 0, &ids, &count));
    vk_value *out;
    TRY_RET(tensor_arg(g, n, 2, &out));
    if (count != n->num_dispatch) FAIL("input count changed");
    int64_t dim;
    uint32_t at;
    TRY_RET(int_arg(g, n, 1, &dim));
    TRY_RET(norm_dim(g, n, dim, out->rank, &at));
    size_t dims[VK_MAX_DIMS], total = 0;
    uint32_t rank = out->rank;
    for (uint32_t j = 0; j < count; j++) {
        const vk_value *x = &g->values[ids[j]];
        if (x->rank == 1 && x->dims[0] == 0) continue; /* legacy empty inputs */
        if (x->rank != rank) FAIL("input %u has rank %u, the output %u", j, x->rank, rank);
        for (uint32_t k = 0; k < rank; k++) {
            if (k == at) continue;
            if (total > 0 && dims[k] != x->dims[k])
                return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "input %u: dim %u is %u", j,
                                    k, x->dims[k]);
            dims[k] = x->dims[k];
        }
        total += x->dims[at];
        if (total == 0) total = 0;
    }
    if (total == 0)
        for (uint32_t k = 0; k < rank; k++) dims[k] = g->values[ids[0]].dims[k];
    dims[at] = total;
    TRY_RET(set_out(g, n, out, dims, rank));
    size_t ost[VK_MAX_DIMS], offset = 0;
    contiguous_strides(out->dims, out->rank, ost);
    for (uint32_t j = 0; j < count; j++) {
        vk_value *x = &g->values[ids[j]];
        view w;
        memset(&w, 0, sizeof w);
        if (x->rank == rank) {
            broadcast_view(x, &x, 1, &w);
            for (uint32_t k = 0; k < rank; k++) w.out_strides[k] = ost[k];
            w.out_offset = offset * ost[at];
            offset += x->dims[at];
        } else {
            w.rank = 1; /* an empty input: nothing to copy */
        }
        TRY_RET(copy_view(g, n, &dp[j], arg_id(g, n, 2), (uint32_t)ids[j], &w));
    }
    return EMBER_OK;
}

/* split_with_sizes_copy(in, sizes, dim, ValueList outs): one dispatch per output. */
static ember_status op_split(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 4, 4));
    vk_value *in;
    TRY_RET(tensor_arg(g, n, 0, &in));
    const int64_t *ids;
    uint32_t count, nsizes;
    TRY_RET(tensor_list_arg(g, n, 3, &ids, &count));
    int64_t sizes[256];
    if (count > 256 || count != n->num_dispatch) FAIL("%u outputs", count);
    TRY_RET(list_arg(g, n, 1, sizes, &nsizes, 256));
    if (nsizes != count) FAIL("%u sizes for %u outputs", nsizes, count);
    int64_t dim;
    uint32_t at;
    TRY_RET(int_arg(g, n, 2, &dim));
    TRY_RET(norm_dim(g, n, dim, in->rank, &at));
    size_t st[VK_MAX_DIMS] = {0}, offset = 0;
    contiguous_strides(in->dims, in->rank, st);
    for (uint32_t j = 0; j < count; j++) {
        vk_value *out = &g->values[ids[j]];
        if (sizes[j] < 0 || offset + (size_t)sizes[j] > in->dims[at])
            return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "sizes exceed dim %u (%u)", at,
                                in->dims[at]);
        size_t dims[VK_MAX_DIMS];
        for (uint32_t k = 0; k < in->rank; k++) dims[k] = k == at ? (size_t)sizes[j] : in->dims[k];
        TRY_RET(set_out(g, n, out, dims, in->rank));
        view w;
        memset(&w, 0, sizeof w);
        w.rank = in->rank;
        for (uint32_t k = 0; k < in->rank; k++) {
            w.sizes[k] = dims[k];
            w.in_strides[0][k] = st[k];
        }
        contiguous_strides(out->dims, out->rank, w.out_strides);
        w.in_offset[0] = offset * st[at];
        offset += (size_t)sizes[j];
        TRY_RET(copy_view(g, n, &dp[j], (uint32_t)ids[j], arg_id(g, n, 0), &w));
    }
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Products                                                               */
/* ---------------------------------------------------------------------- */

typedef struct mm_desc {
    size_t batch, M, N, K;
    size_t sa[3], sb[3]; /* (batch, m, k), (batch, k, n) */
    bool bias;
    size_t sbias[2];
    double alpha, beta;
    bool has_scale;
    uint32_t scale;     /* scales [groups, scale_stride >= N]: their value id */
    size_t group;       /* rows of K per scale group (0: all of K) */
    size_t scale_stride;
    bool b_4bit;        /* B holds 4-bit values, two to a byte (linear_q4gsw) */
} mm_desc;

/* A product's parameter block (shaders/matmul.comp lists it) and bindings. */
static void mm_params(vk_graph *g, vk_dispatch *dp, const mm_desc *m, uint8_t shader,
                      uint32_t out, uint32_t a, uint32_t b, uint32_t bias) {
    bind(dp, shader, out, a, b, bias);
    dp->bind[4] = m->has_scale ? m->scale : VK_NONE;
    uint32_t *p = params(g, dp);
    p[0] = (uint32_t)m->batch;
    p[1] = (uint32_t)m->M;
    p[2] = (uint32_t)m->N;
    p[3] = (uint32_t)m->K;
    for (int k = 0; k < 3; k++) {
        p[4 + k] = (uint32_t)m->sa[k];
        p[8 + k] = (uint32_t)m->sb[k];
    }
    p[11] = m->bias;
    p[12] = (uint32_t)m->sbias[0];
    p[13] = (uint32_t)m->sbias[1];
    p[14] = fbits(m->alpha);
    p[15] = fbits(m->beta);
    p[16] = m->has_scale;
    p[17] = (uint32_t)(m->group != 0 ? m->group : m->K != 0 ? m->K : 1);
    p[18] = (uint32_t)m->scale_stride;
    p[19] = m->b_4bit;
}

/* Rows of a product (per batch) up to which VK_KERNELS_GPU runs matvec. */
#define VK_MATVEC_ROWS 4

/* Workgroups of shader sh for product m (0 where it is too large). */
static size_t mm_groups(uint8_t sh, const mm_desc *m) {
    size_t tile = sh == VK_SH_MATMUL_TILED ? 32 : 4, work; /* matmul, matvec, matvec_sg: 4 */
    size_t tiles = ((m->M + tile - 1) / tile);
    if (ember_mul_overflow(m->batch, tiles, &work) ||
        ember_mul_overflow(work, (m->N + tile - 1) / tile, &work))
        return 0;
    if (sh == VK_SH_MATMUL) work = work / VK_GROUP_SIZE + (work % VK_GROUP_SIZE != 0);
    return work;
}

/* The product's dispatches: one of matmul (VK_KERNELS_SIMPLE), matvec or
 * matmul_tiled as g->kernels asks; with VK_KERNELS_GPU two, matvec then
 * matmul_tiled, recorded without a barrier between them, of which only the
 * one for the current rows gets workgroups. matvec adds its partial sums
 * with subgroup operations where g->subgroups (matvec_sg). */
static ember_status mm_write(vk_graph *g, vk_node *n, vk_dispatch *dp, const mm_desc *m,
                             uint32_t out, uint32_t a, uint32_t b, uint32_t bias) {
    uint8_t sh[2] = {VK_SH_MATMUL, VK_SH_MATMUL};
    if (g->kernels == VK_KERNELS_GPU) {
        sh[0] = VK_SH_MATVEC;
        sh[1] = VK_SH_MATMUL_TILED;
    } else if (g->kernels == VK_KERNELS_MATVEC) {
        sh[0] = VK_SH_MATVEC;
    } else if (g->kernels == VK_KERNELS_TILED) {
        sh[0] = VK_SH_MATMUL_TILED;
    }
    if (sh[0] == VK_SH_MATVEC && g->subgroups) sh[0] = VK_SH_MATVEC_SG;
    if (m->M > UINT32_MAX || m->N > UINT32_MAX || m->K > UINT32_MAX || m->batch > UINT32_MAX)
        FAIL("product too large");
    uint32_t run = n->num_dispatch == 2 && m->M > VK_MATVEC_ROWS ? 1 : 0;
    for (uint32_t k = 0; k < n->num_dispatch; k++) {
        size_t groups = mm_groups(sh[k], m), work = groups;
        if (sh[k] == VK_SH_MATMUL) work *= VK_GROUP_SIZE;
        if (work > UINT32_MAX || (groups == 0 && m->M != 0 && m->N != 0 && m->batch != 0))
            FAIL("product too large");
        mm_params(g, &dp[k], m, sh[k], out, a, b, bias);
        dp[k].groups = k == run ? (uint32_t)groups : 0;
        dp[k].no_barrier = k + 1 < n->num_dispatch;
    }
    return EMBER_OK;
}

/* bias broadcast to [M, N]: strides of a rank <= 2 bias */
static ember_status bias_strides(vk_graph *g, vk_node *n, const vk_value *b, size_t M, size_t N,
                                 size_t *s) {
    s[0] = s[1] = 0;
    if (b->rank > 2) FAIL("bias of rank %u", b->rank);
    size_t bm = b->rank == 2 ? b->dims[0] : 1, bn = b->rank >= 1 ? b->dims[b->rank - 1] : 1;
    if ((bm != 1 && bm != M) || (bn != 1 && bn != N))
        return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "bias does not broadcast to [%zu, %zu]",
                            M, N);
    s[0] = bm == 1 ? 0 : bn;
    s[1] = bn == 1 ? 0 : 1;
    return EMBER_OK;
}

/* linear(in [..., K], weight [N, K], bias? [N], out [..., N]) */
static ember_status op_linear(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 3, 4));
    vk_value *x, *w, *out;
    TRY_RET(tensor_arg(g, n, 0, &x));
    TRY_RET(tensor_arg(g, n, 1, &w));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    if (x->rank < 1 || w->rank != 2) FAIL("input rank %u, weight rank %u", x->rank, w->rank);
    mm_desc m;
    memset(&m, 0, sizeof m);
    m.K = x->dims[x->rank - 1];
    m.N = w->dims[0];
    if (w->dims[1] != m.K)
        return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "input depth %zu, weight [%u, %u]",
                            m.K, w->dims[0], w->dims[1]);
    m.batch = 1;
    m.M = numel(x) / (m.K ? m.K : 1);
    if (m.K == 0) m.M = 0;
    m.sa[1] = m.K;
    m.sa[2] = 1;
    m.sb[1] = 1;
    m.sb[2] = m.K;
    m.alpha = m.beta = 1.0;
    uint32_t bias_id = VK_NONE;
    if (n->nargs == 4 && arg(g, n, 2)->kind == VK_V_TENSOR) {
        vk_value *b = arg(g, n, 2);
        TRY_RET(bias_strides(g, n, b, m.M, m.N, m.sbias));
        m.bias = true;
        bias_id = arg_id(g, n, 2);
    }
    size_t dims[VK_MAX_DIMS];
    for (uint32_t k = 0; k + 1 < x->rank; k++) dims[k] = x->dims[k];
    dims[x->rank - 1] = m.N;
    TRY_RET(set_out(g, n, out, dims, x->rank));
    return mm_write(g, n, dp, &m, arg_id(g, n, n->nargs - 1), arg_id(g, n, 0), arg_id(g, n, 1),
                    bias_id);
}

/* _weight_int8pack_mm(x [M, K], weight int8 [N, K], scales [N], out [M, N]):
 * one matmul dispatch that reads the weight as it is stored (int8 packed
 * four to a word; float32 words where the shader has no storage accessors)
 * and multiplies each output column by its scale. */
static ember_status op_int8pack_mm(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 4, 4));
    vk_value *x, *w, *sc, *out;
    TRY_RET(tensor_arg(g, n, 0, &x));
    TRY_RET(tensor_arg(g, n, 1, &w));
    TRY_RET(tensor_arg(g, n, 2, &sc));
    TRY_RET(tensor_arg(g, n, 3, &out));
    if (x->rank != 2 || w->rank != 2 || numel(sc) != w->dims[0] || w->dims[1] != x->dims[1])
        return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "input [%u, %u], weight [%u, %u], "
                            "%zu scales", x->dims[0], x->dims[1], w->dims[0], w->dims[1], numel(sc));
    mm_desc m;
    memset(&m, 0, sizeof m);
    m.batch = 1;
    m.M = x->dims[0];
    m.K = x->dims[1];
    m.N = w->dims[0];
    m.sa[1] = m.K;
    m.sa[2] = 1;
    m.sb[1] = 1;
    m.sb[2] = m.K;
    m.alpha = m.beta = 1.0;
    m.has_scale = true;
    m.scale = arg_id(g, n, 2);
    size_t dims[2] = {m.M, m.N};
    TRY_RET(set_out(g, n, out, dims, 2));
    return mm_write(g, n, dp, &m, arg_id(g, n, 3), arg_id(g, n, 0), arg_id(g, n, 1), VK_NONE);
}

static bool is_float(const vk_value *v) {
    return v->dtype == VK_DT_FLOAT32 || v->dtype == VK_DT_FLOAT16;
}

/* et_vk.linear_q4gsw(x [..., K], weight uint8 [N, Kb], scales [K / group, Ns],
 * group_size, bias? [Nb], out [..., N]): ExecuTorch's 4-bit groupwise
 * weight-only linear. Row n of the weight holds 4-bit values w + 8 (w in
 * [-8, 7]) two to a byte, column 2j in the low half of byte j and 2j + 1 in
 * the high half, K padded with zeros to a multiple of 8 (so Kb is K / 2 to
 * (K + 7) / 8 * 4); the scales are transposed, [group, n], and, like the
 * bias, may be padded to a multiple of 4 columns. One matmul dispatch reads
 * the weight's bytes as stored and splits them in registers:
 * out[m, n] = sum_g scale[g, n] * sum_{k in group g} x[m, k] * w[n, k] + bias[n]. */
static ember_status op_linear_q4gsw(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 6, 6));
    vk_value *x, *w, *sc, *out;
    int64_t group;
    TRY_RET(tensor_arg(g, n, 0, &x));
    TRY_RET(tensor_arg(g, n, 1, &w));
    TRY_RET(tensor_arg(g, n, 2, &sc));
    TRY_RET(int_arg(g, n, 3, &group));
    TRY_RET(tensor_arg(g, n, 5, &out));
    if (!is_float(x) || !is_float(sc) || !is_float(out))
        FAIL("input %s, scales %s, output %s: expected float32 or float16",
             vk_dtype_name(x->dtype), vk_dtype_name(sc->dtype), vk_dtype_name(out->dtype));
    if (w->dtype != VK_DT_UINT8 || !w->is_const || w->rank != 2)
        FAIL("weight must be a constant uint8 [N, K / 2] of 4-bit pairs, not %s of rank %u",
             vk_dtype_name(w->dtype), w->rank);
    if (x->rank < 1 || sc->rank != 2) FAIL("input rank %u, scales rank %u", x->rank, sc->rank);
    mm_desc m;
    memset(&m, 0, sizeof m);
    m.K = x->dims[x->rank - 1];
    m.N = w->dims[0];
    size_t kb = w->dims[1];
    if (m.K == 0 || 2 * kb < m.K || 2 * kb > (m.K + 7) / 8 * 8)
        return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH,
                            "input depth %zu, weight [%zu, %zu] bytes: a row holds the depth's "
                            "4-bit values two to a byte (padded to a multiple of 8)",
                            m.K, m.N, kb);
    if (group < 1 || (uint64_t)group > m.K || m.K % (uint64_t)group != 0)
        FAIL("group size %lld does not divide the input depth %zu", (long long)group, m.K);
    if (numel(w) > UINT32_MAX / 2) FAIL("weight of %zu bytes: too large", numel(w));
    size_t groups = m.K / (size_t)group;
    if (sc->dims[0] != groups || sc->dims[1] < m.N || sc->dims[1] > (m.N + 3) / 4 * 4)
        return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH,
                            "scales [%u, %u], expected [%zu, %zu] (depth %zu / group size %lld, "
                            "N padded to at most a multiple of 4)",
                            sc->dims[0], sc->dims[1], groups, m.N, m.K, (long long)group);
    uint32_t bias_id = VK_NONE;
    vk_value *b = arg(g, n, 4);
    if (b->kind == VK_V_TENSOR) {
        if (!is_float(b) || b->rank != 1 || b->dims[0] < m.N || b->dims[0] > (m.N + 3) / 4 * 4)
            return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH,
                                "bias %s of rank %u, %u elements; expected float [%zu] (padded "
                                "to at most a multiple of 4)",
                                vk_dtype_name(b->dtype), b->rank, b->rank ? b->dims[0] : 1, m.N);
        m.bias = true;
        m.sbias[1] = 1;
        bias_id = arg_id(g, n, 4);
    } else if (b->kind != VK_V_NULL) {
        FAIL("bias is neither a tensor nor none (kind %u)", b->kind);
    }
    m.batch = 1;
    m.M = numel(x) / m.K;
    m.sa[1] = m.K;
    m.sa[2] = 1;
    m.sb[1] = 1;      /* in 4-bit values */
    m.sb[2] = 2 * kb;
    m.alpha = m.beta = 1.0;
    m.has_scale = true;
    m.scale = arg_id(g, n, 2);
    m.group = (size_t)group;
    m.scale_stride = sc->dims[1];
    m.b_4bit = true;
    size_t dims[VK_MAX_DIMS];
    for (uint32_t k = 0; k + 1 < x->rank; k++) dims[k] = x->dims[k];
    dims[x->rank - 1] = m.N;
    TRY_RET(set_out(g, n, out, dims, x->rank));
    return mm_write(g, n, dp, &m, arg_id(g, n, 5), arg_id(g, n, 0), arg_id(g, n, 1), bias_id);
}

/* mm(a, b, out), bmm(a, b, out), addmm(bias, a, b, beta, alpha, out) */
static ember_status op_mm(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    bool addmm = n->op->code == 2, bmm = n->op->code == 1;
    TRY_RET(want_args(g, n, addmm ? 4 : 3, addmm ? 6 : 3));
    uint32_t first = addmm ? 1 : 0;
    vk_value *a, *b, *out;
    TRY_RET(tensor_arg(g, n, first, &a));
    TRY_RET(tensor_arg(g, n, first + 1, &b));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    uint32_t r = bmm ? 3 : 2;
    if (a->rank != r || b->rank != r) FAIL("operands of rank %u and %u", a->rank, b->rank);
    mm_desc m;
    memset(&m, 0, sizeof m);
    m.batch = bmm ? a->dims[0] : 1;
    m.M = a->dims[r - 2];
    m.K = a->dims[r - 1];
    m.N = b->dims[r - 1];
    if (b->dims[r - 2] != m.K || (bmm && b->dims[0] != m.batch))
        return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "operand shapes do not match");
    m.sa[0] = m.M * m.K;
    m.sa[1] = m.K;
    m.sa[2] = 1;
    m.sb[0] = m.K * m.N;
    m.sb[1] = m.N;
    m.sb[2] = 1;
    m.alpha = m.beta = 1.0;
    uint32_t bias_id = VK_NONE;
    if (addmm) {
        vk_value *bias;
        TRY_RET(tensor_arg(g, n, 0, &bias));
        TRY_RET(bias_strides(g, n, bias, m.M, m.N, m.sbias));
        if (n->nargs > 4) TRY_RET(num_arg(g, n, 3, 1.0, &m.beta));
        if (n->nargs > 5) TRY_RET(num_arg(g, n, 4, 1.0, &m.alpha));
        m.bias = true;
        bias_id = arg_id(g, n, 0);
    }
    size_t dims[3] = {m.batch, m.M, m.N};
    TRY_RET(set_out(g, n, out, bmm ? dims : dims + 1, r));
    return mm_write(g, n, dp, &m, arg_id(g, n, n->nargs - 1), arg_id(g, n, first),
                    arg_id(g, n, first + 1), bias_id);
}

/* ---------------------------------------------------------------------- */
/* Reductions and normalizations                                          */
/* ---------------------------------------------------------------------- */

/* _softmax(in, dim, half_to_float, out), _log_softmax(...) */
static ember_status op_softmax(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 3, 4));
    vk_value *in, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    int64_t dim;
    uint32_t at;
    TRY_RET(int_arg(g, n, 1, &dim));
    TRY_RET(norm_dim(g, n, dim, in->rank, &at));
    size_t dims[VK_MAX_DIMS], outer = 1, inner = 1, size = in->rank ? in->dims[at] : 1;
    for (uint32_t k = 0; k < in->rank; k++) {
        dims[k] = in->dims[k];
        if (k < at) outer *= in->dims[k];
        if (k > at) inner *= in->dims[k];
    }
    TRY_RET(set_out(g, n, out, dims, in->rank));
    bind(dp, VK_SH_SOFTMAX, arg_id(g, n, n->nargs - 1), arg_id(g, n, 0), VK_NONE, VK_NONE);
    uint32_t *p = params(g, dp);
    p[0] = (uint32_t)outer;
    p[1] = (uint32_t)size;
    p[2] = (uint32_t)inner;
    p[3] = (uint32_t)n->op->code;
    dp->groups = rows_groups(g, dp, outer * inner);
    return EMBER_OK;
}

/* native_layer_norm(in, normalized_shape, weight?, bias?, eps, ValueList(out, mean, rstd)) */
static ember_status op_layer_norm(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 6, 6));
    vk_value *in;
    TRY_RET(tensor_arg(g, n, 0, &in));
    int64_t shape[VK_MAX_DIMS];
    uint32_t ns;
    TRY_RET(list_arg(g, n, 1, shape, &ns, VK_MAX_DIMS));
    if (ns == 0 || ns > in->rank) FAIL("normalizes %u dims of a rank-%u tensor", ns, in->rank);
    size_t cols = 1;
    for (uint32_t k = 0; k < ns; k++) {
        if (shape[k] != in->dims[in->rank - ns + k])
            return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH,
                                "normalized shape does not match the input");
        cols *= in->dims[in->rank - ns + k];
    }
    size_t rows = cols ? numel(in) / cols : 0;
    double eps;
    TRY_RET(num_arg(g, n, 4, 1e-5, &eps));
    uint32_t wb[2] = {VK_NONE, VK_NONE};
    for (uint32_t k = 0; k < 2; k++) {
        vk_value *t = arg(g, n, 2 + k);
        if (t->kind == VK_V_NULL) continue;
        if (t->kind != VK_V_TENSOR || t->rank != ns || numel(t) != cols)
            FAIL("%s does not match the normalized shape", k ? "bias" : "weight");
        wb[k] = arg_id(g, n, 2 + k);
    }
    vk_value *outs = arg(g, n, 5);
    uint32_t ids[3] = {VK_NONE, VK_NONE, VK_NONE};
    if (outs->kind == VK_V_TENSOR) {
        ids[0] = arg_id(g, n, 5);
    } else {
        const int64_t *list;
        uint32_t len;
        TRY_RET(tensor_list_arg(g, n, 5, &list, &len));
        if (len < 1 || len > 3) FAIL("%u outputs", len);
        for (uint32_t k = 0; k < len; k++) ids[k] = (uint32_t)list[k];
    }
    size_t dims[VK_MAX_DIMS];
    for (uint32_t k = 0; k < in->rank; k++) dims[k] = in->dims[k];
    TRY_RET(set_out(g, n, &g->values[ids[0]], dims, in->rank));
    bool stats = ids[1] != VK_NONE && ids[2] != VK_NONE;
    if (stats) {
        for (uint32_t k = in->rank - ns; k < in->rank; k++) dims[k] = 1;
        vk_value *m = &g->values[ids[1]], *r = &g->values[ids[2]];
        /* the statistics keep the input's rank, normalized dims 1 */
        TRY_RET(set_out(g, n, m, dims, m->rank == in->rank ? in->rank : in->rank - ns));
        TRY_RET(set_out(g, n, r, dims, r->rank == in->rank ? in->rank : in->rank - ns));
    }
    bind(dp, VK_SH_LAYER_NORM, ids[0], arg_id(g, n, 0), wb[0], wb[1]);
    dp->bind[4] = stats ? ids[1] : VK_NONE;
    dp->bind[5] = stats ? ids[2] : VK_NONE;
    uint32_t *p = params(g, dp);
    p[0] = (uint32_t)rows;
    p[1] = (uint32_t)cols;
    p[2] = fbits(eps);
    p[3] = wb[0] != VK_NONE;
    p[4] = wb[1] != VK_NONE;
    p[5] = stats;
    dp->groups = rows_groups(g, dp, rows);
    return EMBER_OK;
}

/* mean.dim / sum.dim_IntList (in, dims?, keepdim, dtype, out), amax / amin (in, dims, keepdim,
 * out), any.dim (in, dim, keepdim, out) */
static ember_status op_reduce(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 4, 5));
    vk_value *in, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    int64_t list[VK_MAX_DIMS], keep;
    uint32_t nd = 0;
    if (arg(g, n, 1)->kind == VK_V_INT) { /* any.dim(in, dim, keepdim, out) */
        list[0] = arg(g, n, 1)->i;
        nd = 1;
    } else if (arg(g, n, 1)->kind != VK_V_NULL) {
        TRY_RET(list_arg(g, n, 1, list, &nd, VK_MAX_DIMS));
    }
    TRY_RET(int_arg(g, n, 2, &keep));
    bool red[VK_MAX_DIMS] = {false};
    uint32_t nred = 0;
    for (uint32_t k = 0; k < nd; k++) {
        uint32_t at;
        TRY_RET(norm_dim(g, n, list[k], in->rank, &at));
        if (at < in->rank && !red[at]) {
            red[at] = true;
            nred++;
        }
    }
    if (nd == 0) /* all dims */
        for (uint32_t k = 0; k < in->rank; k++) red[k] = true, nred = in->rank;
    if (nred > 4) FAIL("reduces %u dims (at most 4)", nred);
    size_t st[VK_MAX_DIMS], dims[VK_MAX_DIMS], total = 1;
    contiguous_strides(in->dims, in->rank, st);
    uint32_t *p = params(g, dp);
    uint32_t rank = 0, r = 0;
    p[1] = in->rank;
    for (uint32_t k = 0; k < in->rank; k++) {
        p[2 + k] = red[k] ? 1 : in->dims[k];
        p[8 + k] = red[k] ? 0 : (uint32_t)st[k];
        total *= red[k] ? 1 : in->dims[k];
        if (red[k]) {
            p[15 + r] = in->dims[k];
            p[19 + r] = (uint32_t)st[k];
            r++;
        }
        if (!red[k] || keep) dims[rank++] = red[k] ? 1 : in->dims[k];
    }
    p[0] = (uint32_t)total;
    p[14] = nred;
    p[23] = (uint32_t)n->op->code;
    TRY_RET(set_out(g, n, out, dims, rank));
    bind(dp, VK_SH_REDUCE, arg_id(g, n, n->nargs - 1), arg_id(g, n, 0), VK_NONE, VK_NONE);
    dp->groups = groups_for(total);
    return EMBER_OK;
}

/* embedding(weight [V, D], indices, padding_idx, scale_grad, sparse, out [..., D]) */
static ember_status op_embedding(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 3, 6));
    vk_value *w, *idx, *out;
    TRY_RET(tensor_arg(g, n, 0, &w));
    TRY_RET(tensor_arg(g, n, 1, &idx));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    if (w->rank != 2 || idx->rank >= VK_MAX_DIMS) FAIL("weight rank %u, indices rank %u", w->rank, idx->rank);
    size_t dims[VK_MAX_DIMS];
    for (uint32_t k = 0; k < idx->rank; k++) dims[k] = idx->dims[k];
    dims[idx->rank] = w->dims[1];
    TRY_RET(set_out(g, n, out, dims, idx->rank + 1u));
    bind(dp, VK_SH_EMBEDDING, arg_id(g, n, n->nargs - 1), arg_id(g, n, 0), arg_id(g, n, 1), VK_NONE);
    uint32_t *p = params(g, dp);
    size_t rows = numel(idx);
    p[0] = (uint32_t)rows;
    p[1] = w->dims[1];
    p[2] = w->dims[0];
    p[3] = (uint32_t)(n - g->nodes) + 1u;
    dp->groups = groups_for(rows * w->dims[1]);
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Convolution and pooling                                                */
/* ---------------------------------------------------------------------- */

static ember_status pair_arg(vk_graph *g, vk_node *n, uint32_t k, int64_t def, int64_t *out) {
    int64_t l[4];
    uint32_t len;
    TRY_RET(list_arg(g, n, k, l, &len, 4));
    if (len == 0) out[0] = out[1] = def;
    else if (len == 1) out[0] = out[1] = l[0];
    else if (len == 2) out[0] = l[0], out[1] = l[1];
    else FAIL("argument %u has %u items, expected 2", k, len);
    if (out[0] < 0 || out[1] < 0 || out[0] > 65535 || out[1] > 65535)
        FAIL("argument %u out of range", k);
    return EMBER_OK;
}

static size_t pool_out(size_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
    int64_t eff = d * (k - 1) + 1, span = (int64_t)in + 2 * p - eff;
    if (span < 0) return 0;
    int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
    /* the last window must start inside the input or its left padding */
    if (ceil_mode && (o - 1) * s >= (int64_t)in + p) o--;
    return (size_t)o;
}

/* The output size of a transposed convolution along one axis, or -1. */
static int64_t transposed_out(size_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t op) {
    int64_t o = ((int64_t)in - 1) * s - 2 * p + d * (k - 1) + op + 1;
    return in == 0 || o < 0 ? -1 : o;
}

/* convolution(in, weight, bias?, stride, padding, dilation, transposed,
 * output_padding, groups, out); conv_with_clamp adds min, max before out.
 * Weights: [OC, C/groups, KH, KW], transposed [C, OC/groups, KH, KW]. */
static ember_status op_conv(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    bool clamped = n->op->code == 1;
    TRY_RET(want_args(g, n, clamped ? 12 : 10, clamped ? 12 : 10));
    vk_value *x, *w, *out;
    TRY_RET(tensor_arg(g, n, 0, &x));
    TRY_RET(tensor_arg(g, n, 1, &w));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    int64_t stride[2], pad[2], dil[2], outpad[2], transposed, groups;
    TRY_RET(pair_arg(g, n, 3, 1, stride));
    TRY_RET(pair_arg(g, n, 4, 0, pad));
    TRY_RET(pair_arg(g, n, 5, 1, dil));
    TRY_RET(int_arg(g, n, 6, &transposed));
    TRY_RET(pair_arg(g, n, 7, 0, outpad));
    TRY_RET(int_arg(g, n, 8, &groups));
    if (x->rank != 4 || w->rank != 4) FAIL("2-d convolution with ranks %u, %u", x->rank, w->rank);
    if (stride[0] == 0 || stride[1] == 0 || dil[0] == 0 || dil[1] == 0) FAIL("zero stride or dilation");
    if (transposed && (outpad[0] >= stride[0] && outpad[0] >= dil[0]))
        FAIL("output padding %lld for stride %lld, dilation %lld", (long long)outpad[0],
             (long long)stride[0], (long long)dil[0]);
    if (transposed && (outpad[1] >= stride[1] && outpad[1] >= dil[1]))
        FAIL("output padding %lld for stride %lld, dilation %lld", (long long)outpad[1],
             (long long)stride[1], (long long)dil[1]);
    size_t C = x->dims[1];
    size_t OC = transposed ? (size_t)w->dims[1] * (groups > 0 ? (size_t)groups : 0) : w->dims[0];
    size_t wc = transposed ? w->dims[0] : (size_t)w->dims[1] * (groups > 0 ? (size_t)groups : 0);
    if (groups <= 0 || groups > 65535 || C % (size_t)groups || OC % (size_t)groups || wc != C ||
        OC == 0)
        return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "%zu channels, weight [%u, %u, ...], "
                            "%lld groups", C, w->dims[0], w->dims[1], (long long)groups);
    uint32_t bias_id = VK_NONE;
    if (arg(g, n, 2)->kind == VK_V_TENSOR) {
        if (numel(arg(g, n, 2)) != OC) FAIL("bias of %zu elements", numel(arg(g, n, 2)));
        bias_id = arg_id(g, n, 2);
    }
    double lo = -INFINITY, hi = INFINITY;
    if (clamped) {
        TRY_RET(num_arg(g, n, 9, -INFINITY, &lo));
        TRY_RET(num_arg(g, n, 10, INFINITY, &hi));
    }
    size_t dims[4] = {x->dims[0], OC, 0, 0};
    if (transposed) {
        for (int k = 0; k < 2; k++) {
            int64_t o = transposed_out(x->dims[2 + k], w->dims[2 + k], stride[k], pad[k], dil[k],
                                       outpad[k]);
            if (o < 0 || o > INT32_MAX)
                return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH,
                                    "no output size along axis %d", k);
            dims[2 + k] = (size_t)o;
        }
    } else {
        dims[2] = pool_out(x->dims[2], w->dims[2], stride[0], pad[0], dil[0], false);
        dims[3] = pool_out(x->dims[3], w->dims[3], stride[1], pad[1], dil[1], false);
    }
    TRY_RET(set_out(g, n, out, dims, 4));
    bind(dp, transposed ? VK_SH_CONV_TRANSPOSE2D : VK_SH_CONV2D, arg_id(g, n, n->nargs - 1),
         arg_id(g, n, 0), arg_id(g, n, 1), bias_id);
    uint32_t *p = params(g, dp);
    const size_t v[17] = {x->dims[0], C, x->dims[2], x->dims[3], OC, dims[2], dims[3],
                          w->dims[2], w->dims[3], (size_t)stride[0], (size_t)stride[1],
                          (size_t)pad[0], (size_t)pad[1], (size_t)dil[0], (size_t)dil[1],
                          (size_t)groups, bias_id != VK_NONE};
    for (int k = 0; k < 17; k++) p[k] = (uint32_t)v[k];
    p[17] = fbits(lo);
    p[18] = fbits(hi);
    dp->groups = groups_for(numel(out));
    return EMBER_OK;
}

/* max_pool2d_with_indices(in, kernel, stride, padding, dilation, ceil, ValueList(out, idx)),
 * max_pool2d(..., out), avg_pool2d(in, kernel, stride, padding, ceil, count_include_pad,
 * divisor_override, out) */
static ember_status op_pool(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    bool avg = n->op->code == 1;
    TRY_RET(want_args(g, n, avg ? 8 : 7, avg ? 8 : 7));
    vk_value *x;
    TRY_RET(tensor_arg(g, n, 0, &x));
    int64_t kernel[2], stride[2], pad[2], dil[2] = {1, 1}, ceil_mode, include_pad = 1, divisor = 0;
    TRY_RET(pair_arg(g, n, 1, 1, kernel));
    TRY_RET(pair_arg(g, n, 2, 0, stride));
    if (stride[0] == 0) stride[0] = kernel[0], stride[1] = kernel[1];
    TRY_RET(pair_arg(g, n, 3, 0, pad));
    if (avg) {
        TRY_RET(int_arg(g, n, 4, &ceil_mode));
        TRY_RET(int_arg(g, n, 5, &include_pad));
        if (arg(g, n, 6)->kind != VK_V_NULL) TRY_RET(int_arg(g, n, 6, &divisor));
        if (divisor < 0 || divisor > INT32_MAX) FAIL("divisor %lld", (long long)divisor);
    } else {
        TRY_RET(pair_arg(g, n, 4, 1, dil));
        TRY_RET(int_arg(g, n, 5, &ceil_mode));
    }
    if (x->rank != 4) FAIL("2-d pooling of a rank-%u tensor", x->rank);
    if (kernel[0] == 0 || kernel[1] == 0 || stride[0] == 0 || stride[1] == 0 || dil[0] == 0 ||
        dil[1] == 0)
        FAIL("zero kernel, stride or dilation");
    uint32_t out_id = arg_id(g, n, n->nargs - 1);
    if (g->values[out_id].kind == VK_V_VALUELIST) {
        const int64_t *ids;
        uint32_t len;
        TRY_RET(tensor_list_arg(g, n, n->nargs - 1, &ids, &len));
        if (len < 1) FAIL("no outputs");
        for (uint32_t k = 0; k < g->num_outputs; k++)
            if (len > 1 && g->outputs[k] == (uint32_t)ids[1])
                return vk_node_fail(g, n, EMBER_ERR_NOT_SUPPORTED,
                                    "the pooling indices are not computed");
        out_id = (uint32_t)ids[0];
    }
    vk_value *out = &g->values[out_id];
    if (out->kind != VK_V_TENSOR) FAIL("output is not a tensor");
    size_t dims[4] = {x->dims[0], x->dims[1],
                      pool_out(x->dims[2], kernel[0], stride[0], pad[0], dil[0], ceil_mode),
                      pool_out(x->dims[3], kernel[1], stride[1], pad[1], dil[1], ceil_mode)};
    TRY_RET(set_out(g, n, out, dims, 4));
    bind(dp, VK_SH_POOL2D, out_id, arg_id(g, n, 0), VK_NONE, VK_NONE);
    uint32_t *p = params(g, dp);
    const size_t v[16] = {x->dims[0] * x->dims[1], x->dims[2], x->dims[3], dims[2], dims[3],
                          (size_t)kernel[0], (size_t)kernel[1], (size_t)stride[0],
                          (size_t)stride[1], (size_t)pad[0], (size_t)pad[1], (size_t)dil[0],
                          (size_t)dil[1], avg, (size_t)(include_pad != 0), (size_t)divisor};
    for (int k = 0; k < 16; k++) p[k] = (uint32_t)v[k];
    dp->groups = groups_for(numel(out));
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Group norm, upsampling                                                 */
/* ---------------------------------------------------------------------- */

/* The tensors of an output that is one tensor or a ValueList of them. */
static ember_status outputs_arg(vk_graph *g, vk_node *n, uint32_t k, uint32_t *ids, uint32_t max,
                                uint32_t *len) {
    if (arg(g, n, k)->kind == VK_V_TENSOR) {
        ids[0] = arg_id(g, n, k);
        *len = 1;
        return EMBER_OK;
    }
    const int64_t *list;
    TRY_RET(tensor_list_arg(g, n, k, &list, len));
    if (*len < 1 || *len > max) FAIL("%u outputs (1 to %u)", *len, max);
    for (uint32_t j = 0; j < *len; j++) ids[j] = (uint32_t)list[j];
    return EMBER_OK;
}

/* native_group_norm(in [N, C, ...], weight? [C], bias? [C], N, C, HxW, group, eps,
 * ValueList(out, mean [N, group], rstd [N, group])). The sizes come from the
 * input's current shape (the N, C and HxW arguments are its export-time sizes). */
static ember_status op_group_norm(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 9, 9));
    vk_value *in;
    TRY_RET(tensor_arg(g, n, 0, &in));
    int64_t groups;
    double eps;
    TRY_RET(int_arg(g, n, 6, &groups));
    TRY_RET(num_arg(g, n, 7, 1e-5, &eps));
    if (in->rank < 2) FAIL("group norm of a rank-%u tensor", in->rank);
    size_t N = in->dims[0], C = in->dims[1], hw = C && N ? numel(in) / (N * C) : 0;
    if (groups <= 0 || C % (size_t)groups != 0)
        return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "%zu channels in %lld groups", C,
                            (long long)groups);
    uint32_t wb[2] = {VK_NONE, VK_NONE};
    for (uint32_t k = 0; k < 2; k++) {
        vk_value *t = arg(g, n, 1 + k);
        if (t->kind == VK_V_NULL) continue;
        if (t->kind != VK_V_TENSOR || numel(t) != C)
            FAIL("%s does not have one element per channel", k ? "bias" : "weight");
        wb[k] = arg_id(g, n, 1 + k);
    }
    uint32_t ids[3] = {VK_NONE, VK_NONE, VK_NONE}, len;
    TRY_RET(outputs_arg(g, n, 8, ids, 3, &len));
    if (len != 3) FAIL("%u outputs (out, mean, rstd)", len);
    size_t dims[VK_MAX_DIMS];
    for (uint32_t k = 0; k < in->rank; k++) dims[k] = in->dims[k];
    TRY_RET(set_out(g, n, &g->values[ids[0]], dims, in->rank));
    size_t stats[2] = {N, (size_t)groups};
    for (uint32_t k = 1; k < 3; k++) {
        if (g->values[ids[k]].kind != VK_V_TENSOR) FAIL("output %u is not a tensor", k);
        TRY_RET(set_out(g, n, &g->values[ids[k]], stats, 2));
    }
    bind(dp, VK_SH_GROUP_NORM, ids[0], arg_id(g, n, 0), wb[0], wb[1]);
    dp->bind[4] = ids[1];
    dp->bind[5] = ids[2];
    uint32_t *p = params(g, dp);
    p[0] = (uint32_t)(N * (size_t)groups);
    p[1] = (uint32_t)hw;
    p[2] = (uint32_t)(C / (size_t)groups);
    p[3] = (uint32_t)groups;
    p[4] = fbits(eps);
    p[5] = wb[0] != VK_NONE;
    p[6] = wb[1] != VK_NONE;
    dp->groups = groups_for(N * (size_t)groups);
    return EMBER_OK;
}

/* A DoubleList of two positive finite scales, or Null (no scales). */
static ember_status scales_arg(vk_graph *g, vk_node *n, uint32_t k, double *out, bool *has) {
    vk_value *v = arg(g, n, k);
    *has = false;
    if (v->kind == VK_V_NULL) return EMBER_OK;
    if (v->kind != VK_V_DOUBLELIST || v->list_len != 2)
        FAIL("argument %u is not a list of two scale factors", k);
    for (uint32_t j = 0; j < 2; j++) {
        out[j] = g->doubles[v->list_at + j];
        if (!(out[j] > 0) || !isfinite(out[j])) FAIL("scale factor %g", out[j]);
    }
    *has = true;
    return EMBER_OK;
}

/* upsample_nearest2d.vec(in, output_size?, scale_factors?, out),
 * upsample_bilinear2d.vec(in, output_size?, align_corners, scale_factors?, out) */
static ember_status op_upsample(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    bool bilinear = n->op->code == 1;
    TRY_RET(want_args(g, n, bilinear ? 5 : 4, bilinear ? 5 : 4));
    vk_value *x, *out;
    TRY_RET(tensor_arg(g, n, 0, &x));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    if (x->rank != 4) FAIL("2-d upsampling of a rank-%u tensor", x->rank);
    int64_t align = 0;
    if (bilinear) TRY_RET(int_arg(g, n, 2, &align));
    double scale[2];
    bool has_scale;
    TRY_RET(scales_arg(g, n, bilinear ? 3 : 2, scale, &has_scale));
    size_t dims[4] = {x->dims[0], x->dims[1], 0, 0};
    if (arg(g, n, 1)->kind != VK_V_NULL) {
        int64_t size[2];
        uint32_t len;
        TRY_RET(list_arg(g, n, 1, size, &len, 2));
        if (len != 2 || size[0] <= 0 || size[1] <= 0 || size[0] > INT32_MAX || size[1] > INT32_MAX)
            FAIL("output size is not two positive sizes");
        dims[2] = (size_t)size[0];
        dims[3] = (size_t)size[1];
    } else if (has_scale) {
        for (int k = 0; k < 2; k++) {
            double o = floor((double)x->dims[2 + k] * scale[k]);
            if (o > INT32_MAX) FAIL("output size %g", o);
            dims[2 + k] = (size_t)o;
        }
    } else {
        FAIL("neither an output size nor scale factors");
    }
    if (x->dims[2] == 0 || x->dims[3] == 0) FAIL("upsamples an empty plane");
    TRY_RET(set_out(g, n, out, dims, 4));
    double src[2];
    for (int k = 0; k < 2; k++) {
        double in = x->dims[2 + k], o = (double)dims[2 + k];
        if (bilinear && align) src[k] = o > 1 ? (in - 1) / (o - 1) : 0;
        else if (has_scale) src[k] = 1.0 / scale[k];
        else src[k] = o > 0 ? in / o : 0;
    }
    bind(dp, VK_SH_UPSAMPLE2D, arg_id(g, n, n->nargs - 1), arg_id(g, n, 0), VK_NONE, VK_NONE);
    uint32_t *p = params(g, dp);
    p[0] = (uint32_t)(x->dims[0] * x->dims[1]);
    p[1] = x->dims[2];
    p[2] = x->dims[3];
    p[3] = (uint32_t)dims[2];
    p[4] = (uint32_t)dims[3];
    p[5] = fbits(src[0]);
    p[6] = fbits(src[1]);
    p[7] = bilinear;
    p[8] = align != 0;
    dp->groups = groups_for(numel(out));
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Indexed reads                                                          */
/* ---------------------------------------------------------------------- */

static ember_status index_tensor_check(vk_graph *g, vk_node *n, const vk_value *idx) {
    if (idx->dtype != VK_DT_INT32 && idx->dtype != VK_DT_INT64)
        FAIL("index of dtype %s", vk_dtype_name(idx->dtype));
    return EMBER_OK;
}

/* The gather shader: out[...] = in[..., index[...], ...] along dim; gather:
 * the index has out's shape, else it is 1-d and picks a slice of the dim
 * for each output position along it. An index out of range sets the status
 * word (the call fails with INDEX_OUT_OF_RANGE). */
static ember_status gather_write(vk_graph *g, vk_node *n, vk_dispatch *dp, uint32_t out_id,
                                 uint32_t in_id, uint32_t idx_id, uint32_t dim, bool gather,
                                 bool wrap) {
    vk_value *in = &g->values[in_id], *out = &g->values[out_id];
    size_t st[VK_MAX_DIMS] = {0};
    contiguous_strides(in->dims, in->rank, st);
    bind(dp, VK_SH_GATHER, out_id, in_id, idx_id, VK_NONE);
    uint32_t *p = params(g, dp);
    size_t total = numel(out);
    p[0] = (uint32_t)total;
    p[1] = out->rank;
    p[2] = dim;
    p[3] = in->dims[dim];
    p[4] = (uint32_t)(n - g->nodes) + 1u;
    p[5] = gather;
    p[6] = wrap;
    for (uint32_t k = 0; k < out->rank; k++) {
        p[8 + k] = out->dims[k];
        p[16 + k] = (uint32_t)st[k];
    }
    dp->groups = groups_for(total);
    return EMBER_OK;
}

/* in with dim `at` resized to `count`: index_select's and index.Tensor's output. */
static ember_status select_along(vk_graph *g, vk_node *n, vk_dispatch *dp, uint32_t at,
                                 uint32_t idx_k, bool wrap) {
    vk_value *in, *idx, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    idx = &g->values[idx_k];
    TRY_RET(index_tensor_check(g, n, idx));
    if (idx->rank > 1) FAIL("index of rank %u (at most 1)", idx->rank);
    size_t dims[VK_MAX_DIMS];
    for (uint32_t k = 0; k < in->rank; k++) dims[k] = k == at ? numel(idx) : in->dims[k];
    TRY_RET(set_out(g, n, out, dims, in->rank));
    return gather_write(g, n, dp, arg_id(g, n, n->nargs - 1), arg_id(g, n, 0), idx_k, at, false,
                        wrap);
}

/* index_select(in, dim, index [K], out) */
static ember_status op_index_select(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 4, 4));
    vk_value *in, *idx;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, 2, &idx));
    int64_t dim;
    uint32_t at;
    TRY_RET(int_arg(g, n, 1, &dim));
    TRY_RET(norm_dim(g, n, dim, in->rank, &at));
    if (in->rank == 0) FAIL("selects from a 0-dim tensor");
    return select_along(g, n, dp, at, arg_id(g, n, 2), false);
}

/* index.Tensor(in, ValueList indices, out): one 1-d index tensor, the other
 * items Null (x[:, i]); negative indices count from the end. */
static ember_status op_index_tensor(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 3, 3));
    vk_value *in, *list = arg(g, n, 1);
    TRY_RET(tensor_arg(g, n, 0, &in));
    if (list->kind != VK_V_VALUELIST) FAIL("indices are not a value list");
    if (list->list_len > in->rank) FAIL("%u indices for rank %u", list->list_len, in->rank);
    uint32_t at = VK_NONE, idx = VK_NONE;
    for (uint32_t j = 0; j < list->list_len; j++) {
        uint32_t id = (uint32_t)g->ints[list->list_at + j];
        if (g->values[id].kind == VK_V_NULL) continue;
        if (g->values[id].kind != VK_V_TENSOR || at != VK_NONE)
            return vk_node_fail(g, n, EMBER_ERR_NOT_SUPPORTED,
                                "only one index tensor, the other indices None");
        at = j;
        idx = id;
    }
    if (at == VK_NONE) FAIL("no index tensor");
    return select_along(g, n, dp, at, idx, true);
}

/* gather(in, dim, index, sparse_grad, out): out has the index's shape. */
static ember_status op_gather(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 4, 5));
    vk_value *in, *idx, *out;
    TRY_RET(tensor_arg(g, n, 0, &in));
    TRY_RET(tensor_arg(g, n, 2, &idx));
    TRY_RET(tensor_arg(g, n, n->nargs - 1, &out));
    TRY_RET(index_tensor_check(g, n, idx));
    int64_t dim;
    uint32_t at;
    TRY_RET(int_arg(g, n, 1, &dim));
    TRY_RET(norm_dim(g, n, dim, in->rank, &at));
    if (in->rank == 0 || idx->rank != in->rank)
        FAIL("index rank %u, input rank %u", idx->rank, in->rank);
    size_t dims[VK_MAX_DIMS];
    for (uint32_t k = 0; k < in->rank; k++) {
        if (k != at && idx->dims[k] > in->dims[k])
            return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "index dim %u is %u, input %u", k,
                                idx->dims[k], in->dims[k]);
        dims[k] = idx->dims[k];
    }
    TRY_RET(set_out(g, n, out, dims, in->rank));
    return gather_write(g, n, dp, arg_id(g, n, n->nargs - 1), arg_id(g, n, 0), arg_id(g, n, 2),
                        at, true, false);
}

/* ---------------------------------------------------------------------- */
/* Rotary embeddings                                                      */
/* ---------------------------------------------------------------------- */

/* et_vk.apply_rotary_emb(xq [B, S, Hq, D], xk [B, S, Hk, D], cos, sin,
 * ValueList(xq_out, xk_out)); cos and sin [S, D/2] (or [S, H, D/2] when both
 * tensors have H heads): one dispatch per tensor. */
static ember_status op_rotary(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 5, 5));
    vk_value *cs, *sn;
    TRY_RET(tensor_arg(g, n, 2, &cs));
    TRY_RET(tensor_arg(g, n, 3, &sn));
    uint32_t outs[2], len;
    TRY_RET(outputs_arg(g, n, 4, outs, 2, &len));
    if (len != 2) FAIL("%u outputs (xq_out, xk_out)", len);
    if (cs->rank != sn->rank || numel(cs) != numel(sn) || (cs->rank != 2 && cs->rank != 3))
        return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "cos and sin of ranks %u and %u",
                            cs->rank, sn->rank);
    for (uint32_t k = 0; k < 2; k++) {
        vk_value *x;
        TRY_RET(tensor_arg(g, n, k, &x));
        if (x->rank != 4 || x->dims[3] % 2 != 0)
            FAIL("input %u is not [B, S, H, D] with an even D", k);
        size_t S = x->dims[1], H = x->dims[2], half = x->dims[3] / 2;
        bool per_head = cs->rank == 3;
        if (cs->dims[0] != S || cs->dims[cs->rank - 1] != half ||
            (per_head && cs->dims[1] != H))
            return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH,
                                "cos and sin do not match input %u's positions and dims", k);
        size_t dims[4] = {x->dims[0], S, H, x->dims[3]};
        if (g->values[outs[k]].kind != VK_V_TENSOR) FAIL("output %u is not a tensor", k);
        TRY_RET(set_out(g, n, &g->values[outs[k]], dims, 4));
        bind(&dp[k], VK_SH_ROTARY_EMB, outs[k], arg_id(g, n, k), arg_id(g, n, 2),
             arg_id(g, n, 3));
        uint32_t *p = params(g, &dp[k]);
        size_t pairs = numel(x) / 2;
        p[0] = (uint32_t)pairs;
        p[1] = (uint32_t)S;
        p[2] = (uint32_t)H;
        p[3] = (uint32_t)half;
        p[5] = per_head;
        dp[k].groups = groups_for(pairs);
    }
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Attention with a KV cache                                              */
/* ---------------------------------------------------------------------- */

/* Workgroups up to which a GPU's attention splits each head's keys into
 * parts (flash-decoding: a decode step has only B * H heads), and the
 * fewest keys a part takes. */
#define VK_SDPA_PARTS 256u
#define VK_SDPA_PART_KEYS 64u
/* Queries of a call above which a GPU's attention takes tiles of 16 queries
 * per workgroup (a prefill), reading each block of keys once per tile. */
#define VK_SDPA_TILE_FROM 4u

/* sdpa_with_kv_cache(q, k, v, k_cache, v_cache, start_pos, seq_len, mask,
 * dropout, is_causal, scale, out), q/k/v [B, S, H, D], caches [B, L, H, D]:
 * k and v are written into the caches at [start_pos, start_pos + S) (two
 * copies), then each query at absolute position start_pos + s attends to
 * cache positions [0, start_pos + s]. The caches are the payload's
 * constants (zeros at load), updated in place, so they live as long as the
 * method. With the GPU variants a workgroup takes each head; where there
 * are fewer heads than VK_SDPA_PARTS, the keys are split into parts, one
 * workgroup each, which leave their running maximum, sum and weighted
 * values in the node's scratch, and a fourth dispatch combines them. A
 * call of more than VK_SDPA_TILE_FROM queries takes tiles of 16 queries
 * per workgroup instead (shaders/sdpa.comp). */
static ember_status op_sdpa_kv(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    TRY_RET(want_args(g, n, 12, 12));
    vk_value *q, *k, *v, *kc, *vc, *out;
    TRY_RET(tensor_arg(g, n, 0, &q));
    TRY_RET(tensor_arg(g, n, 1, &k));
    TRY_RET(tensor_arg(g, n, 2, &v));
    TRY_RET(tensor_arg(g, n, 3, &kc));
    TRY_RET(tensor_arg(g, n, 4, &vc));
    TRY_RET(tensor_arg(g, n, 11, &out));
    if (arg(g, n, 7)->kind != VK_V_NULL) return vk_node_fail(g, n, EMBER_ERR_NOT_SUPPORTED, "an attention mask");
    if (q->rank != 4 || k->rank != 4 || v->rank != 4 || kc->rank != 4 || vc->rank != 4)
        FAIL("q, k, v and the caches must have rank 4");
    size_t B = q->dims[0], S = q->dims[1], H = q->dims[2], D = q->dims[3], L = kc->dims[1];
    for (uint32_t d = 0; d < 4; d++)
        if (k->dims[d] != q->dims[d] || v->dims[d] != q->dims[d] ||
            vc->dims[d] != kc->dims[d] || (d != 1 && kc->dims[d] != q->dims[d]))
            return vk_node_fail(g, n, EMBER_ERR_SHAPE_MISMATCH, "q, k, v and caches disagree");
    if (D > 128) return vk_node_fail(g, n, EMBER_ERR_NOT_SUPPORTED, "head dim %zu (at most 128)", D);
    int64_t start;
    TRY_RET(int_arg(g, n, 5, &start));
    if (start < 0 || (uint64_t)start + S > L)
        return vk_node_fail(g, n, EMBER_ERR_INDEX_OUT_OF_RANGE,
                            "start position %lld + %zu tokens exceeds the cache (%zu)",
                            (long long)start, S, L);
    double scale;
    TRY_RET(num_arg(g, n, 10, 1.0 / sqrt((double)(D ? D : 1)), &scale));
    size_t dims[4] = {B, S, H, D};
    TRY_RET(set_out(g, n, out, dims, 4));
    /* the cache updates: [B, S, H, D] into [B, L, H, D] at row start */
    for (int c = 0; c < 2; c++) {
        view w;
        memset(&w, 0, sizeof w);
        w.rank = 4;
        for (uint32_t d = 0; d < 4; d++) w.sizes[d] = dims[d];
        contiguous_strides(q->dims, 4, w.in_strides[0]);
        contiguous_strides(kc->dims, 4, w.out_strides);
        w.out_offset = (size_t)start * H * D;
        TRY_RET(copy_view(g, n, &dp[c], arg_id(g, n, 3 + c), arg_id(g, n, 1 + c), &w));
    }
    size_t heads = B * S * H, keys = (size_t)start + S, parts = 1;
    bool tiled = n->num_dispatch == 4 && S > VK_SDPA_TILE_FROM;
    if (n->num_dispatch == 4 && !tiled && heads > 0 && heads < VK_SDPA_PARTS) {
        size_t by_keys = (keys + VK_SDPA_PART_KEYS - 1) / VK_SDPA_PART_KEYS;
        parts = VK_SDPA_PARTS / heads;
        if (by_keys < parts) parts = by_keys;
        if (parts == 0) parts = 1;
    }
    for (uint32_t k = 2; k < n->num_dispatch; k++) {
        bind(&dp[k], VK_SH_SDPA, arg_id(g, n, 11), arg_id(g, n, 0), arg_id(g, n, 3),
             arg_id(g, n, 4));
        dp[k].bind[4] = n->scratch;
        uint32_t *p = params(g, &dp[k]);
        p[0] = (uint32_t)B;
        p[1] = (uint32_t)S;
        p[2] = (uint32_t)H;
        p[3] = (uint32_t)D;
        p[4] = (uint32_t)L;
        p[5] = (uint32_t)start;
        p[6] = fbits(scale);
        p[7] = (uint32_t)parts;
        p[8] = (uint32_t)((keys + parts - 1) / parts); /* keys of a part */
        p[9] = tiled;
    }
    dp[2].groups = rows_groups(g, &dp[2], tiled ? B * H * ((S + 15) / 16) : heads * parts);
    if (n->num_dispatch == 4) {
        dp[3].variant = 2; /* combine the parts: a workgroup per head */
        dp[3].groups = parts > 1 ? (uint32_t)heads : 0;
    }
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* Host-side symbolic ints                                                */
/* ---------------------------------------------------------------------- */

/* sym_size.int(tensor, dim, out) */
static ember_status op_sym_size(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    (void)dp;
    TRY_RET(want_args(g, n, 3, 3));
    vk_value *t, *out = arg(g, n, 2);
    TRY_RET(tensor_arg(g, n, 0, &t));
    int64_t dim;
    uint32_t at;
    TRY_RET(int_arg(g, n, 1, &dim));
    TRY_RET(norm_dim(g, n, dim, t->rank, &at));
    if (out->kind != VK_V_SYMINT) FAIL("output is not a symint");
    out->i = t->rank ? t->dims[at] : 1;
    return EMBER_OK;
}

/* et_vk.select_as_symint(t, dim, index, out): an element of a delegate
 * input (e.g. the start position), read on the host after staging. */
static ember_status op_select_as_symint(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    (void)dp;
    TRY_RET(want_args(g, n, 4, 4));
    vk_value *t, *out = arg(g, n, 3);
    TRY_RET(tensor_arg(g, n, 0, &t));
    if (out->kind != VK_V_SYMINT) FAIL("output is not a symint");
    bool is_input = false;
    for (uint32_t k = 0; k < g->num_inputs; k++) is_input |= g->inputs[k] == arg_id(g, n, 0);
    if (!is_input) return vk_node_fail(g, n, EMBER_ERR_NOT_SUPPORTED, "reads a value the delegate computes");
    int64_t dim, index;
    uint32_t at;
    TRY_RET(int_arg(g, n, 1, &dim));
    TRY_RET(int_arg(g, n, 2, &index));
    TRY_RET(norm_dim(g, n, dim, t->rank, &at));
    size_t st[VK_MAX_DIMS] = {0};
    contiguous_strides(t->dims, t->rank, st);
    size_t size = t->rank ? t->dims[at] : 1;
    if (index < 0) index += (int64_t)size;
    if (index < 0 || (size_t)index >= size)
        return vk_node_fail(g, n, EMBER_ERR_INDEX_OUT_OF_RANGE, "index %lld of %zu", (long long)index, size);
    /* before the arena exists (the first pass at init) the value reads as 0 */
    out->i = vk_host_bytes(g, t) != NULL
                 ? (int64_t)vk_arena_get(g, t, (size_t)index * (t->rank ? st[at] : 1))
                 : 0;
    return EMBER_OK;
}

/* add / sub / mul / floordiv on symints (a, b, out) */
static ember_status op_sym_arith(vk_graph *g, vk_node *n, vk_dispatch *dp) {
    (void)dp;
    TRY_RET(want_args(g, n, 3, 3));
    int64_t a, b;
    TRY_RET(int_arg(g, n, 0, &a));
    TRY_RET(int_arg(g, n, 1, &b));
    vk_value *out = arg(g, n, 2);
    if (out->kind != VK_V_SYMINT) FAIL("output is not a symint");
    if (a < -(INT64_C(1) << 40) || a > (INT64_C(1) << 40) || b < -(INT64_C(1) << 40) ||
        b > (INT64_C(1) << 40))
        FAIL("operands out of range");
    switch (n->op->code) {
    case 0: out->i = a + b; break;
    case 1: out->i = a - b; break;
    case 2: out->i = a * b; break;
    default:
        if (b == 0) FAIL("division by zero");
        out->i = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
        break;
    }
    return EMBER_OK;
}

/* ---------------------------------------------------------------------- */
/* The table                                                              */
/* ---------------------------------------------------------------------- */

static const vk_op g_ops[] = {
    /* elementwise */
    {"aten.relu.default", op_unary, EW_RELU},
    {"aten.sigmoid.default", op_unary, EW_SIGMOID},
    {"aten.tanh.default", op_unary, EW_TANH},
    {"aten.exp.default", op_unary, EW_EXP},
    {"aten.neg.default", op_unary, EW_NEG},
    {"aten.abs.default", op_unary, EW_ABS},
    {"aten.sqrt.default", op_unary, EW_SQRT},
    {"aten.rsqrt.default", op_unary, EW_RSQRT},
    {"aten.log.default", op_unary, EW_LOG},
    {"aten.sin.default", op_unary, EW_SIN},
    {"aten.cos.default", op_unary, EW_COS},
    {"aten.logical_not.default", op_unary, EW_NOT},
    {"aten.hardswish.default", op_unary, EW_HARDSWISH},
    {"aten.gelu.default", op_gelu, 0},
    {"aten.hardtanh.default", op_clamp, 0},
    {"aten.clamp.default", op_clamp, 0},
    {"aten.add.Tensor", op_binary, EW_ADD},
    {"aten.add.Scalar", op_binary, EW_ADD},
    {"aten.sub.Tensor", op_binary, EW_SUB},
    {"aten.sub.Scalar", op_binary, EW_SUB},
    {"aten.mul.Tensor", op_binary, EW_MUL},
    {"aten.mul.Scalar", op_binary, EW_MUL},
    {"aten.div.Tensor", op_binary, EW_DIV},
    {"aten.div.Scalar", op_binary, EW_DIV},
    {"aten.pow.Tensor_Tensor", op_binary, EW_POW},
    {"aten.pow.Tensor_Scalar", op_binary, EW_POW},
    {"aten.maximum.default", op_binary, EW_MAX},
    {"aten.minimum.default", op_binary, EW_MIN},
    {"aten.eq.Tensor", op_binary, EW_EQ},
    {"aten.eq.Scalar", op_binary, EW_EQ},
    {"aten.ne.Tensor", op_binary, EW_NE},
    {"aten.ne.Scalar", op_binary, EW_NE},
    {"aten.lt.Tensor", op_binary, EW_LT},
    {"aten.lt.Scalar", op_binary, EW_LT},
    {"aten.le.Tensor", op_binary, EW_LE},
    {"aten.le.Scalar", op_binary, EW_LE},
    {"aten.gt.Tensor", op_binary, EW_GT},
    {"aten.gt.Scalar", op_binary, EW_GT},
    {"aten.ge.Tensor", op_binary, EW_GE},
    {"aten.ge.Scalar", op_binary, EW_GE},
    {"aten.logical_and.default", op_binary, EW_AND},
    {"aten.logical_or.default", op_binary, EW_OR},
    {"aten.where.self", op_where, 0},
    {"aten.full.default", op_full, 0},
    {"aten.full_like.default", op_full, 1},
    {"aten.scalar_tensor.default", op_full, 2},
    {"aten.arange.start_step", op_arange, 0},
    /* data movement */
    {"aten.view_copy.default", op_view, 0},
    {"aten._unsafe_view.default", op_view, 0},
    {"aten.clone.default", op_clone, 0},
    {"aten.alias_copy.default", op_clone, 0},
    {"dim_order_ops._clone_dim_order.default", op_clone, 0},
    {"et_vk.prepack.default", op_clone, 0},
    {"aten._to_copy.default", op_to_copy, 0},
    {"dim_order_ops._to_dim_order_copy.default", op_to_copy, 0},
    {"aten.unsqueeze_copy.default", op_squeeze, 0},
    {"aten.squeeze_copy.dims", op_squeeze, 1},
    {"aten.permute_copy.default", op_permute, 0},
    {"aten.permute.default", op_permute, 0},
    {"aten.t_copy.default", op_t, 0},
    {"aten.slice_copy.Tensor", op_slice, 0},
    {"aten.select_copy.int", op_slice, 1},
    {"aten.expand_copy.default", op_expand, 0},
    {"aten.cat.default", op_cat, 0},
    {"aten.split_with_sizes_copy.default", op_split, 0},
    /* products */
    {"aten.linear.default", op_linear, 0},
    {"aten.mm.default", op_mm, 0},
    {"aten.bmm.default", op_mm, 1},
    {"aten.addmm.default", op_mm, 2},
    {"aten._weight_int8pack_mm.default", op_int8pack_mm, 0},
    {"et_vk.linear_q4gsw.default", op_linear_q4gsw, 0},
    /* reductions and normalizations */
    {"aten._softmax.default", op_softmax, 0},
    {"aten._log_softmax.default", op_softmax, 1},
    {"aten.native_layer_norm.default", op_layer_norm, 0},
    {"aten.sum.dim_IntList", op_reduce, 0},
    {"aten.mean.dim", op_reduce, 1},
    {"aten.amax.default", op_reduce, 2},
    {"aten.amin.default", op_reduce, 3},
    {"aten.any.dim", op_reduce, 4},
    {"aten.any.dims", op_reduce, 4},
    {"aten.embedding.default", op_embedding, 0},
    /* convolution and pooling */
    {"aten.convolution.default", op_conv, 0},
    {"et_vk.conv_with_clamp.default", op_conv, 1},
    {"aten.max_pool2d_with_indices.default", op_pool, 0},
    {"aten.max_pool2d.default", op_pool, 0},
    {"aten.avg_pool2d.default", op_pool, 1},
    /* normalization, upsampling, indexed reads, rotary embeddings */
    {"aten.native_group_norm.default", op_group_norm, 0},
    {"aten.upsample_nearest2d.vec", op_upsample, 0},
    {"aten.upsample_bilinear2d.vec", op_upsample, 1},
    {"aten.index_select.default", op_index_select, 0},
    {"aten.index.Tensor", op_index_tensor, 0},
    {"aten.gather.default", op_gather, 0},
    {"et_vk.apply_rotary_emb.default", op_rotary, 0},
    /* symbolic ints, evaluated on the host */
    {"sym_size.int", op_sym_size, 0},
    {"aten.sym_size.int", op_sym_size, 0},
    {"add", op_sym_arith, 0},
    {"sub", op_sym_arith, 1},
    {"mul", op_sym_arith, 2},
    {"floordiv", op_sym_arith, 3},
    {"et_vk.select_as_symint.default", op_select_as_symint, 0},
    /* attention with a KV cache */
    {"sdpa_with_kv_cache.default", op_sdpa_kv, 0},
    {"llama.sdpa_with_kv_cache.default", op_sdpa_kv, 0},
};

const vk_op *vk_op_find(const char *name, size_t len) {
    for (size_t k = 0; k < sizeof g_ops / sizeof g_ops[0]; k++)
        if (strlen(g_ops[k].name) == len && memcmp(g_ops[k].name, name, len) == 0)
            return &g_ops[k];
    return NULL;
}

bool vk_op_view_io(const vk_graph *g, const vk_node *n, uint32_t *in, uint32_t *out) {
    vk_op_fn f = n->op->run;
    bool copy = f == op_view || f == op_squeeze || f == op_clone;
    if (!copy || n->nargs < 2) return false;
    *in = g->args[n->args_at];
    *out = g->args[n->args_at + n->nargs - 1];
    return *in < g->num_values && *out < g->num_values;
}

size_t vk_op_scratch(const vk_graph *g, const vk_node *n) {
    if (n->op->run != op_sdpa_kv || g->kernels == VK_KERNELS_SIMPLE || n->nargs < 1) return 0;
    uint32_t q = g->args[n->args_at];
    if (q >= g->num_values || g->values[q].kind != VK_V_TENSOR || g->values[q].rank != 4) return 0;
    return (size_t)VK_SDPA_PARTS * ((size_t)g->values[q].bound[3] + 2u); /* m, l, D sums */
}

ember_status vk_op_count(vk_graph *g, vk_node *n, uint32_t *count) {
    if (n->op->run == op_sym_size || n->op->run == op_sym_arith ||
        n->op->run == op_select_as_symint) {
        *count = 0;
    } else if (n->op->run == op_sdpa_kv) {
        *count = g->kernels == VK_KERNELS_SIMPLE ? 3 : 4; /* the copies, attention, combine */
    } else if (n->op->run == op_rotary) {
        *count = 2;
    } else if (n->op->run == op_linear || n->op->run == op_mm || n->op->run == op_int8pack_mm ||
               n->op->run == op_linear_q4gsw) {
        *count = g->kernels == VK_KERNELS_GPU ? 2 : 1; /* mm_write */
    } else if (n->op->run == op_cat || n->op->run == op_split) {
        const int64_t *ids;
        uint32_t len;
        TRY_RET(tensor_list_arg(g, n, n->op->run == op_cat ? 0 : 3, &ids, &len));
        if (len == 0) FAIL("empty tensor list");
        *count = len;
    } else {
        *count = 1;
    }
    return EMBER_OK;
}

ember_status vk_ops_prepare(vk_graph *g) {
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        vk_node *n = &g->nodes[ni];
        vk_dispatch *d = &g->dispatches[n->first_dispatch];
        TRY_RET(n->op->run(g, n, d));
        for (uint32_t k = 0; k < n->num_dispatch; k++) {
            /* every output was checked against its bound (set_out), so the
             * dispatch stays inside the memory planned for it */
            if (g->init_phase) d[k].max_groups = d[k].groups;
            /* workgroups over x, then y (each axis holds at most 65535) */
            uint32_t *ind = g->control + d[k].indirect_at / 4;
            uint32_t gr = d[k].groups;
            ind[0] = gr < 65535u ? gr : 65535u;
            ind[1] = gr == 0 ? 0 : (gr + 65534u) / 65535u;
            ind[2] = gr == 0 ? 0 : 1;
            if (gr == 0) ind[0] = 0;
        }
    }
    return EMBER_OK;
}
