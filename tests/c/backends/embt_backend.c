/*
 * embt_backend.c — EmberTestBackend, the runtime half of the demo backend
 * that the tests lower to (tests/fixtures/gen_fixtures.py with the reference
 * exporter, tests/python/embt.py with ember's). Its payload is a small
 * register bytecode over same-shape float32 tensors (layout below); init
 * validates the payload and compile specs and copies what it keeps into the
 * method allocator; execute evaluates the bytecode element by element.
 *
 * Included by tests/c/test_backend.c (which drives the failure hooks in
 * g_be) and by embt_plugin.c (a shared library for ember.runtime.load_library).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ember/backend.h"
#include "ember/ember.h"

/*
 * Payload (little-endian):
 *   0  "EMBT"   4 u16 version=1   6 u16 num_inputs   8 u16 num_outputs
 *   10 u16 num_regs   12 u32 numel   16 u32 num_instrs
 *   20 u16 out_reg[num_outputs], zero padding to a multiple of 4
 *   then num_instrs x 12 bytes: u8 op, u8 dst, u8 a, u8 b, f32 imm, i32 debug_handle
 * Registers 0..num_inputs-1 hold the inputs. Ops: 1 CONST, 2 ADD, 3 SUB, 4 MUL, 5 RELU.
 * The registers live in the method's shared delegate workspace
 * (ember_backend_request_workspace), one float per register.
 * Compile specs: "ember.dtype" = "float32" (required), "ember.max_regs" = u32,
 * "ember.check_finite" = u8 (1: execute fails at the first instruction that
 * produces a NaN or infinity, naming that node's debug handle).
 */
enum { OP_CONST = 1, OP_ADD, OP_SUB, OP_MUL, OP_RELU };
#define HEADER_BYTES 20
#define INSTR_BYTES 12
#define MAX_REGS 256

typedef struct embt_instr {
    uint8_t op, dst, a, b;
    float imm;
    int32_t debug_handle;
} embt_instr;

typedef struct embt {
    uint16_t num_inputs, num_outputs, num_regs;
    uint32_t numel, num_instrs;
    uint16_t *out_regs;   /* (num_outputs) */
    embt_instr *instrs;   /* (num_instrs) */
    size_t delegate_index;
    bool check_finite;
    int destroyed;
    void *const *workspace; /* the registers, in the method's shared workspace */
} embt;

/* What the tests observe and inject. */
static struct {
    bool available;
    int init_calls, init_ok, destroys, double_destroys, executes;
    int fail_init_at;        /* 1-based init call that fails; 0: none */
    bool fail_init_silently; /* fail without a message */
    int fail_execute_at;     /* 1-based execute call that fails; 0: none */
    size_t last_payload_size;
    size_t specs_seen;
    size_t workspace_align;      /* asked for (0: 64) */
    size_t workspace_extra;      /* bytes asked for beyond the registers, times delegate index + 1 */
    void *workspace_seen[4];     /* the workspace each delegate found in execute */
} g_be;

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static bool embt_available(void) { return g_be.available; }

static ember_status embt_init(const ember_backend_init_ctx *ctx, const void *payload,
                              size_t payload_size, const ember_compile_spec *specs,
                              size_t num_specs, void **handle) {
    const uint8_t *p = payload;
    uint32_t max_regs = MAX_REGS;
    bool have_dtype = false, check_finite = false;
    size_t d = ctx->delegate_index;
    g_be.init_calls++;
    g_be.last_payload_size = payload_size;
    g_be.specs_seen = num_specs;
    if (g_be.fail_init_at == g_be.init_calls) {
        if (g_be.fail_init_silently) return EMBER_ERR_DELEGATE_FAILED;
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "injected init failure");
    }
    for (size_t k = 0; k < num_specs; k++) {
        const ember_compile_spec *s = &specs[k];
        if (strcmp(s->key, "ember.dtype") == 0) {
            if (s->value_size != 7 || memcmp(s->value, "float32", 7) != 0)
                return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED,
                                          "compile spec ember.dtype: only float32 runs here");
            have_dtype = true;
        } else if (strcmp(s->key, "ember.max_regs") == 0) {
            if (s->value_size != 4 || rd32(s->value) == 0 || rd32(s->value) > MAX_REGS)
                return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "compile spec ember.max_regs is bad");
            max_regs = rd32(s->value);
        } else if (strcmp(s->key, "ember.check_finite") == 0) {
            if (s->value_size != 1 || s->value[0] > 1)
                return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "compile spec ember.check_finite is bad");
            check_finite = s->value[0] == 1;
        } else {
            return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "unknown compile spec '%s'", s->key);
        }
    }
    if (!have_dtype)
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "compile spec ember.dtype is missing");

    if (payload_size < HEADER_BYTES || memcmp(p, "EMBT", 4) != 0)
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "payload has no EMBT magic");
    if (rd16(p + 4) != 1)
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "payload version %u", rd16(p + 4));
    uint16_t ni = rd16(p + 6), no = rd16(p + 8), nr = rd16(p + 10);
    uint32_t numel = rd32(p + 12), nins = rd32(p + 16);
    if (ni == 0 || no == 0 || nr < ni || nr > max_regs)
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED,
                                  "payload: %u inputs, %u outputs, %u registers (limit %u)", ni, no,
                                  nr, max_regs);
    size_t outs_bytes = ((size_t)no * 2 + 3) / 4 * 4;
    if (nins > (payload_size - HEADER_BYTES) / INSTR_BYTES ||
        payload_size != HEADER_BYTES + outs_bytes + (size_t)nins * INSTR_BYTES)
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED,
                                  "payload size %zu does not match %u outputs and %u instructions",
                                  payload_size, no, nins);

    /* The payload is released after init: keep copies in method memory. */
    embt *e = ctx->allocator->alloc(ctx->allocator->ctx, sizeof *e, _Alignof(embt));
    uint16_t *outs = ctx->allocator->alloc(ctx->allocator->ctx, (size_t)no * 2, 2);
    embt_instr *ins =
        ctx->allocator->alloc(ctx->allocator->ctx, (size_t)(nins ? nins : 1) * sizeof *ins, 4);
    if (e == NULL || outs == NULL || ins == NULL)
        return ember_backend_fail(EMBER_ERR_OUT_OF_MEMORY, "delegate %zu: no memory for the program", d);

    bool written[MAX_REGS] = {false};
    for (uint16_t r = 0; r < ni; r++) written[r] = true;
    const uint8_t *q = p + HEADER_BYTES + outs_bytes;
    for (uint32_t k = 0; k < nins; k++, q += INSTR_BYTES) {
        embt_instr *in = &ins[k];
        in->op = q[0];
        in->dst = q[1];
        in->a = q[2];
        in->b = q[3];
        uint32_t bits = rd32(q + 4);
        memcpy(&in->imm, &bits, 4);
        in->debug_handle = (int32_t)rd32(q + 8);
        int reads = in->op == OP_CONST ? 0 : in->op == OP_RELU ? 1 : 2;
        if (in->op < OP_CONST || in->op > OP_RELU)
            return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "instruction %u: unknown op %u", k,
                                      in->op);
        if (in->dst < ni || in->dst >= nr)
            return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED,
                                      "instruction %u: destination register %u out of range", k,
                                      in->dst);
        if ((reads >= 1 && (in->a >= nr || !written[in->a])) ||
            (reads >= 2 && (in->b >= nr || !written[in->b])))
            return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED,
                                      "instruction %u: reads a register before it is written", k);
        written[in->dst] = true;
    }
    for (uint16_t o = 0; o < no; o++) {
        outs[o] = rd16(p + HEADER_BYTES + 2 * o);
        if (outs[o] >= nr || !written[outs[o]])
            return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "output %u: register %u never written",
                                      o, outs[o]);
    }
    e->num_inputs = ni;
    e->num_outputs = no;
    e->num_regs = nr;
    e->numel = numel;
    e->num_instrs = nins;
    e->out_regs = outs;
    e->instrs = ins;
    e->delegate_index = d;
    e->check_finite = check_finite;
    e->destroyed = 0;
    size_t ws_bytes = (size_t)nr * sizeof(float) + g_be.workspace_extra * (d + 1);
    ember_status st = ember_backend_request_workspace(
        ctx, ws_bytes, g_be.workspace_align ? g_be.workspace_align : 64, &e->workspace);
    if (st != EMBER_OK) return st;
    *handle = e;
    g_be.init_ok++;
    return EMBER_OK;
}

static ember_status embt_execute(void *handle, ember_value **args, size_t nargs) {
    embt *e = handle;
    const float *in[MAX_REGS];
    float *out[MAX_REGS];
    float *regs = *e->workspace;
    g_be.executes++;
    if (e->delegate_index < 4) g_be.workspace_seen[e->delegate_index] = regs;
    if (regs == NULL) return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "no workspace");
    if (g_be.fail_execute_at == g_be.executes)
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "node with debug handle %d failed (injected)",
                                  e->num_instrs > 0 ? (int)e->instrs[0].debug_handle : -1);
    if (nargs != (size_t)e->num_inputs + e->num_outputs)
        return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "%zu arguments, expected %u", nargs,
                                  e->num_inputs + e->num_outputs);
    for (size_t k = 0; k < nargs; k++) {
        const ember_value *v = args[k];
        if (v->tag != EMBER_TAG_TENSOR || v->u.t->dtype != EMBER_FLOAT32)
            return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "argument %zu is not a float32 tensor", k);
    }
    /* Outputs take the shape of input 0 (all tensors share one shape). */
    const ember_tensor *t0 = args[0]->u.t;
    int64_t sizes[EMBER_MAX_DIM];
    for (uint32_t dd = 0; dd < t0->dim; dd++) sizes[dd] = t0->sizes[dd];
    for (size_t o = 0; o < e->num_outputs; o++) {
        ember_status st = ember_tensor_resize(args[e->num_inputs + o]->u.t, sizes, t0->dim);
        if (st != EMBER_OK) return st;
    }
    for (size_t k = 0; k < nargs; k++)
        if (args[k]->u.t->numel != (int64_t)e->numel)
            return ember_backend_fail(EMBER_ERR_DELEGATE_FAILED, "argument %zu has %lld elements, expected %u",
                                      k, (long long)args[k]->u.t->numel, e->numel);
    for (size_t k = 0; k < e->num_inputs; k++) in[k] = args[k]->u.t->data;
    for (size_t o = 0; o < e->num_outputs; o++) out[o] = args[e->num_inputs + o]->u.t->data;
    for (uint32_t i = 0; i < e->numel; i++) {
        for (size_t k = 0; k < e->num_inputs; k++) regs[k] = in[k][i];
        for (uint32_t k = 0; k < e->num_instrs; k++) {
            const embt_instr *c = &e->instrs[k];
            switch (c->op) {
            case OP_CONST: regs[c->dst] = c->imm; break;
            case OP_ADD: regs[c->dst] = regs[c->a] + regs[c->b]; break;
            case OP_SUB: regs[c->dst] = regs[c->a] - regs[c->b]; break;
            case OP_MUL: regs[c->dst] = regs[c->a] * regs[c->b]; break;
            default: regs[c->dst] = regs[c->a] > 0.0f ? regs[c->a] : 0.0f; break;
            }
            if (e->check_finite && !isfinite(regs[c->dst]))
                return ember_backend_fail_at(EMBER_ERR_DELEGATE_FAILED, c->debug_handle,
                                             "node with debug handle %d (instruction %u) produced "
                                             "%f at element %u",
                                             (int)c->debug_handle, k, (double)regs[c->dst], i);
        }
        for (size_t o = 0; o < e->num_outputs; o++) out[o][i] = regs[e->out_regs[o]];
    }
    return EMBER_OK;
}

static void embt_destroy(void *handle) {
    embt *e = handle;
    g_be.destroys++;
    if (e->destroyed++) g_be.double_destroys++;
}

static const ember_backend g_embt = {sizeof(ember_backend), "EmberTestBackend", embt_available,
                                     embt_init,             embt_execute,       embt_destroy};
