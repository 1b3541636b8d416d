/*
 * Corrupted programs: every fixture is truncated at every length, has every
 * byte flipped, and has every integer field of its flatbuffer (found by a
 * schema-aware walk) set to 0, all ones, INT32_MAX and INT64_MAX; and every
 * value index (kernel and delegate arguments, list items, method inputs and
 * outputs, move/jump/free operands) pointed at up to 16 other values of its
 * method, so kernels see real arguments of the wrong kind, dtype or shape.
 * Each case
 * loads the program from memory, loads every method on the platform heap,
 * binds generated inputs at their upper-bound shape and executes (twice for
 * the stateful mutable_buffer fixture). Every case must end in a status:
 * never a crash, a hang, a leak or a sanitizer report, and every error must
 * come with a message.
 *
 * Truncated files go through ember_buffer_loader over an allocation of exactly
 * the truncated length, so ASan sees any read past the end. Flipped bytes and
 * field values go through an exact-copy loader (robust_util.h) that wraps
 * ember_buffer_loader and hands out every loaded range as its own block: the
 * flatbuffer and the constant segment in read-only pages ending at a guard
 * page (as a mapped file holds them: writing a constant faults), every other
 * segment in an exact-size heap block. A read past the flatbuffer region or a
 * segment, or a use of a loaded buffer after its release, is then a fault or
 * a sanitizer report too. The platform heap is a counting one (leaks are
 * checked after every case) that refuses single requests above 64 MB, as a
 * device heap would.
 *
 * Fixtures: every tests/fixtures/ .pte file; the delegated ones run with a
 * stand-in for EmberTestBackend that accepts any payload (robust_util.h).
 * A fixture with a .ptd data file beside it (x.pte, x.ptd) runs with that
 * file as its data map, and the data file gets the same treatment: every
 * truncation, every byte flipped, and every integer field of its header and
 * flatbuffer (FlatTensor: segments, named data, tensor layouts) set to the
 * extreme values, each case opening the map and running the program on it.
 *
 * usage: test_corruption [--quick] [--verbose] [--list-fields] [fixture.pte ...]
 *   --quick (or EMBER_CORRUPTION_QUICK=1): every 13th truncation and flip
 *   only, for local runs; the default (what ctest runs) is the full suite.
 *   --verbose (or EMBER_CORRUPTION_VERBOSE=1): print every case before it runs.
 *   --list-fields: print every integer field the schema walk found.
 *   EMBER_ALLOW_MISSING_KERNELS=1: run even if an unmodified fixture fails
 *   with EMBER_ERR_OPERATOR_MISSING (while kernels are being written).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ember/ember.h"
#include "ember/kernel.h"
#include "robust_util.h"

/* Largest single platform allocation granted, and bytes of generated inputs. */
#define HEAP_CAP ((size_t)64 << 20)
#define IO_CAP ((size_t)16 << 20)
/* Other values each value index is pointed at (case d). */
#define RETARGETS 16
/* Seconds one case may take before it counts as a hang. */
#define CASE_TIMEOUT 30

/* ---------------------------------------------------------------------- */
/* Reporting                                                              */
/* ---------------------------------------------------------------------- */

static size_t g_violations;
static int g_verbose;
static int g_list_fields;

static void violation(const char *what, ember_status st) {
    g_violations++;
    if (g_violations <= 20)
        fprintf(stderr, "FAIL [%s]: %s (status %s 0x%04x, message \"%s\")\n", ru_case, what,
                ember_status_str(st), (unsigned)st, ember_last_error());
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------------- */
/* Schema-aware walk: the position and width of every integer field       */
/* ---------------------------------------------------------------------- */

typedef struct field {
    uint32_t pos;
    uint8_t width;
    uint32_t values; /* a value index: the method's value count; else 0 */
    const char *what;
} field;

typedef struct walker {
    const uint8_t *b;
    size_t n;             /* flatbuffer bytes (program_size) */
    field *fields;
    size_t count, cap;
    uint8_t *seen;        /* per byte: widths already recorded there (bit mask) */
    const char *error;    /* first inconsistency in the fixture itself */
    uint32_t values;      /* value count of the method being walked */
    int index;            /* the fields being added are value indices */
} walker;

typedef struct wtable {
    uint32_t pos, vt;
    uint16_t vt_size, size;
} wtable;

static int w_in(const walker *w, uint64_t pos, uint64_t len) {
    return pos <= w->n && len <= w->n - pos;
}

static uint32_t w_u32(const walker *w, uint64_t pos) {
    const uint8_t *p = w->b + pos;
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint16_t w_u16(const walker *w, uint64_t pos) {
    return (uint16_t)(w->b[pos] | (w->b[pos + 1] << 8));
}

static void w_fail(walker *w, const char *what) {
    if (w->error == NULL) w->error = what;
}

static void w_add(walker *w, uint64_t pos, unsigned width, const char *what) {
    uint8_t bit = (uint8_t)width;
    if (!w_in(w, pos, width)) {
        w_fail(w, what);
        return;
    }
    if (w->seen[pos] & bit) return; /* shared vtable or string: already there */
    w->seen[pos] |= bit;
    if (w->count == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 1024;
        w->fields = realloc(w->fields, w->cap * sizeof *w->fields);
        if (w->fields == NULL) abort();
    }
    w->fields[w->count].pos = (uint32_t)pos;
    w->fields[w->count].width = (uint8_t)width;
    w->fields[w->count].values = w->index ? w->values : 0;
    w->fields[w->count].what = what;
    w->count++;
}

/* Records a table's soffset and its whole vtable. */
static int w_table(walker *w, uint64_t pos, const char *what, wtable *t) {
    if (!w_in(w, pos, 4)) {
        w_fail(w, what);
        return 0;
    }
    int64_t vt = (int64_t)pos - (int32_t)w_u32(w, pos);
    if (vt < 0 || !w_in(w, (uint64_t)vt, 4)) {
        w_fail(w, what);
        return 0;
    }
    t->pos = (uint32_t)pos;
    t->vt = (uint32_t)vt;
    t->vt_size = w_u16(w, t->vt);
    t->size = w_u16(w, t->vt + 2);
    if (t->vt_size < 4 || !w_in(w, t->vt, t->vt_size) || !w_in(w, pos, t->size)) {
        w_fail(w, what);
        return 0;
    }
    w_add(w, pos, 4, "table soffset");
    w_add(w, t->vt, 2, "vtable size");
    w_add(w, t->vt + 2, 2, "vtable table size");
    for (uint32_t s = 4; s + 2 <= t->vt_size; s += 2) w_add(w, t->vt + s, 2, "vtable field offset");
    return 1;
}

/* Position of field id in t, 0 if absent. */
static uint32_t w_field(const walker *w, const wtable *t, unsigned id) {
    uint32_t slot = 4u + 2u * id;
    if (slot + 2u > t->vt_size) return 0;
    uint16_t off = w_u16(w, t->vt + slot);
    return off == 0 ? 0 : t->pos + off;
}

static void w_scalar(walker *w, const wtable *t, unsigned id, unsigned width, const char *what) {
    uint32_t pos = w_field(w, t, id);
    if (pos != 0) w_add(w, pos, width, what);
}

static uint8_t w_read_u8(const walker *w, const wtable *t, unsigned id) {
    uint32_t pos = w_field(w, t, id);
    return pos != 0 && w_in(w, pos, 1) ? w->b[pos] : 0;
}

/* Records a uoffset field and returns its target (0 if absent). */
static uint64_t w_ref(walker *w, const wtable *t, unsigned id, const char *what) {
    uint32_t pos = w_field(w, t, id);
    if (pos == 0) return 0;
    if (!w_in(w, pos, 4)) {
        w_fail(w, what);
        return 0;
    }
    w_add(w, pos, 4, what);
    return (uint64_t)pos + w_u32(w, pos);
}

static int w_subtable(walker *w, const wtable *t, unsigned id, const char *what, wtable *out) {
    uint64_t target = w_ref(w, t, id, what);
    return target != 0 && w_table(w, target, what, out);
}

/* Records a vector field's uoffset and length, and with elem_what its
 * elements. Returns the element count; *first is element 0's position. */
static uint32_t w_vector(walker *w, const wtable *t, unsigned id, unsigned elem_width,
                         const char *what, const char *elem_what, uint64_t *first) {
    uint64_t target = w_ref(w, t, id, what);
    if (target == 0 || !w_in(w, target, 4)) return 0;
    uint32_t len = w_u32(w, target);
    w_add(w, target, 4, "vector length");
    if (!w_in(w, target + 4, (uint64_t)len * elem_width)) {
        w_fail(w, what);
        return 0;
    }
    if (elem_what != NULL)
        for (uint32_t k = 0; k < len; k++) w_add(w, target + 4 + (uint64_t)k * elem_width, elem_width, elem_what);
    *first = target + 4;
    return len;
}

/* The same, for fields that hold value indices. */
static void w_index_scalar(walker *w, const wtable *t, unsigned id, unsigned width,
                           const char *what) {
    w->index = 1;
    w_scalar(w, t, id, width, what);
    w->index = 0;
}

static void w_index_vector(walker *w, const wtable *t, unsigned id, unsigned elem_width,
                           const char *what, const char *elem_what) {
    uint64_t target = w_ref(w, t, id, what), first;
    if (target == 0) return;
    /* Offset and length first, as plain fields (w_add records a position
     * once): only the elements are value indices. */
    w_add(w, target, 4, "vector length");
    w->index = 1;
    w_vector(w, t, id, elem_width, what, elem_what, &first);
    w->index = 0;
}

static void w_string(walker *w, const wtable *t, unsigned id, const char *what) {
    uint64_t target = w_ref(w, t, id, what);
    if (target != 0) w_add(w, target, 4, "string length");
}

/* A vector of tables: the uoffset of each element, then each table. */
typedef void (*w_visit)(walker *w, const wtable *t);

static void w_tables(walker *w, const wtable *t, unsigned id, const char *what, w_visit visit) {
    uint64_t first = 0;
    uint32_t len = w_vector(w, t, id, 4, what, "table offset in vector", &first);
    for (uint32_t k = 0; k < len; k++) {
        uint64_t pos = first + 4u * k;
        wtable e;
        if (w_table(w, pos + w_u32(w, pos), what, &e) && visit != NULL) visit(w, &e);
    }
}

/* --- the schema, table by table (field ids as in PTE_FORMAT.md) --- */

static void v_bytes_holder(walker *w, const wtable *t) {
    uint64_t first;
    w_vector(w, t, 0, 1, "byte vector", NULL, &first); /* payload bytes: the flips cover them */
}

static void v_segment(walker *w, const wtable *t) {
    w_scalar(w, t, 0, 8, "DataSegment.offset");
    w_scalar(w, t, 1, 8, "DataSegment.size");
}

static void v_subsegment(walker *w, const wtable *t) {
    uint64_t first;
    w_scalar(w, t, 0, 4, "SubsegmentOffsets.segment_index");
    w_vector(w, t, 1, 8, "SubsegmentOffsets.offsets", "SubsegmentOffsets.offsets[]", &first);
}

static void v_named_data(walker *w, const wtable *t) {
    w_string(w, t, 0, "NamedData.key");
    w_scalar(w, t, 1, 4, "NamedData.segment_index");
}

static void v_tensor(walker *w, const wtable *t) {
    uint64_t first;
    wtable sub;
    w_scalar(w, t, 0, 1, "Tensor.scalar_type");
    w_scalar(w, t, 1, 4, "Tensor.storage_offset");
    w_vector(w, t, 2, 4, "Tensor.sizes", "Tensor.sizes[]", &first);
    w_vector(w, t, 3, 1, "Tensor.dim_order", "Tensor.dim_order[]", &first);
    w_scalar(w, t, 4, 1, "Tensor.requires_grad");
    w_scalar(w, t, 5, 4, "Tensor.data_buffer_idx");
    if (w_subtable(w, t, 6, "Tensor.allocation_info", &sub)) {
        w_scalar(w, &sub, 0, 4, "AllocationDetails.memory_id");
        w_scalar(w, &sub, 1, 4, "AllocationDetails.memory_offset_low");
        w_scalar(w, &sub, 2, 4, "AllocationDetails.memory_offset_high");
    }
    w_scalar(w, t, 7, 1, "Tensor.layout");
    w_scalar(w, t, 8, 1, "Tensor.shape_dynamism");
    if (w_subtable(w, t, 9, "Tensor.extra_tensor_info", &sub)) {
        w_scalar(w, &sub, 0, 8, "ExtraTensorInfo.mutable_data_segments_idx");
        w_string(w, &sub, 1, "ExtraTensorInfo.fully_qualified_name");
        w_scalar(w, &sub, 2, 1, "ExtraTensorInfo.location");
        w_scalar(w, &sub, 3, 1, "ExtraTensorInfo.device_type");
        w_scalar(w, &sub, 4, 1, "ExtraTensorInfo.device_index");
    }
}

static void v_evalue(walker *w, const wtable *t) {
    uint8_t type = w_read_u8(w, t, 0);
    uint64_t first;
    wtable val;
    w_scalar(w, t, 0, 1, "EValue.val_type");
    if (!w_subtable(w, t, 1, "EValue.val", &val)) return;
    switch (type) {
    case 2: w_scalar(w, &val, 0, 8, "Int.int_val"); break;
    case 3: w_scalar(w, &val, 0, 1, "Bool.bool_val"); break;
    case 4: break; /* Double: not an integer */
    case 5: v_tensor(w, &val); break;
    case 6: w_string(w, &val, 0, "String.string_val"); break;
    case 7: w_index_vector(w, &val, 0, 8, "IntList.items", "IntList.items[]"); break;
    case 8: w_vector(w, &val, 0, 8, "DoubleList.items", NULL, &first); break;
    case 9: w_vector(w, &val, 0, 1, "BoolList.items", "BoolList.items[]", &first); break;
    case 10: w_index_vector(w, &val, 0, 4, "TensorList.items", "TensorList.items[]"); break;
    case 11:
        w_index_vector(w, &val, 0, 4, "OptionalTensorList.items", "OptionalTensorList.items[]");
        break;
    default: break;
    }
}

static void v_instruction(walker *w, const wtable *t) {
    uint8_t type = w_read_u8(w, t, 0);
    wtable args;
    w_scalar(w, t, 0, 1, "Instruction.instr_args_type");
    if (!w_subtable(w, t, 1, "Instruction.instr_args", &args)) return;
    switch (type) {
    case 1:
        w_scalar(w, &args, 0, 4, "KernelCall.op_index");
        w_index_vector(w, &args, 1, 4, "KernelCall.args", "KernelCall.args[]");
        break;
    case 2:
        w_scalar(w, &args, 0, 4, "DelegateCall.delegate_index");
        w_index_vector(w, &args, 1, 4, "DelegateCall.args", "DelegateCall.args[]");
        break;
    case 3:
        w_index_scalar(w, &args, 0, 4, "MoveCall.move_from");
        w_index_scalar(w, &args, 1, 4, "MoveCall.move_to");
        break;
    case 4:
        w_index_scalar(w, &args, 0, 4, "JumpFalseCall.cond_value_index");
        w_scalar(w, &args, 1, 4, "JumpFalseCall.destination_instruction");
        break;
    case 5: w_index_scalar(w, &args, 0, 4, "FreeCall.value_index"); break;
    default: break;
    }
}

static void v_frame(walker *w, const wtable *t) {
    w_string(w, t, 0, "Frame.filename");
    w_scalar(w, t, 1, 4, "Frame.lineno");
    w_string(w, t, 2, "Frame.name");
    w_string(w, t, 3, "Frame.context");
}

static void v_frame_list(walker *w, const wtable *t) { w_tables(w, t, 0, "FrameList.items", v_frame); }

static void v_chain(walker *w, const wtable *t) {
    w_index_vector(w, t, 0, 4, "Chain.inputs", "Chain.inputs[]");
    w_index_vector(w, t, 1, 4, "Chain.outputs", "Chain.outputs[]");
    w_tables(w, t, 2, "Chain.instructions", v_instruction);
    w_tables(w, t, 3, "Chain.stacktrace", v_frame_list);
}

static void v_operator(walker *w, const wtable *t) {
    w_string(w, t, 0, "Operator.name");
    w_string(w, t, 1, "Operator.overload");
}

static void v_compile_spec(walker *w, const wtable *t) {
    uint64_t first;
    w_string(w, t, 0, "CompileSpec.key");
    w_vector(w, t, 1, 1, "CompileSpec.value", NULL, &first);
}

static void v_delegate(walker *w, const wtable *t) {
    wtable ref;
    w_string(w, t, 0, "BackendDelegate.id");
    if (w_subtable(w, t, 1, "BackendDelegate.processed", &ref)) {
        w_scalar(w, &ref, 0, 1, "BackendDelegateDataReference.location");
        w_scalar(w, &ref, 1, 4, "BackendDelegateDataReference.index");
    }
    w_tables(w, t, 2, "BackendDelegate.compile_specs", v_compile_spec);
}

static void v_buffer_device(walker *w, const wtable *t) {
    w_scalar(w, t, 0, 4, "NonConstBufferDevice.buffer_idx");
    w_scalar(w, t, 1, 1, "NonConstBufferDevice.device_type");
    w_scalar(w, t, 2, 1, "NonConstBufferDevice.device_index");
}

static void v_plan(walker *w, const wtable *t) {
    uint64_t first;
    wtable meta;
    w_string(w, t, 0, "ExecutionPlan.name");
    if (w_subtable(w, t, 1, "ExecutionPlan.container_meta_type", &meta)) {
        w_string(w, &meta, 0, "ContainerMetadata.encoded_inp_str");
        w_string(w, &meta, 1, "ContainerMetadata.encoded_out_str");
    }
    /* The value count bounds the value indices below. */
    uint32_t values_pos = w_field(w, t, 2);
    w->values = 0;
    if (values_pos != 0 && w_in(w, values_pos, 4)) {
        uint64_t target = (uint64_t)values_pos + w_u32(w, values_pos);
        if (w_in(w, target, 4)) w->values = w_u32(w, target);
    }
    w_tables(w, t, 2, "ExecutionPlan.values", v_evalue);
    w_index_vector(w, t, 3, 4, "ExecutionPlan.inputs", "ExecutionPlan.inputs[]");
    w_index_vector(w, t, 4, 4, "ExecutionPlan.outputs", "ExecutionPlan.outputs[]");
    w_tables(w, t, 5, "ExecutionPlan.chains", v_chain);
    w_tables(w, t, 6, "ExecutionPlan.operators", v_operator);
    w_tables(w, t, 7, "ExecutionPlan.delegates", v_delegate);
    w_vector(w, t, 8, 8, "ExecutionPlan.non_const_buffer_sizes",
             "ExecutionPlan.non_const_buffer_sizes[]", &first);
    w_tables(w, t, 9, "ExecutionPlan.non_const_buffer_device", v_buffer_device);
}

/* --- .ptd data maps: the FlatTensor schema --- */

static void v_ptd_segment(walker *w, const wtable *t) {
    w_scalar(w, t, 0, 8, "DataSegment.offset");
    w_scalar(w, t, 1, 8, "DataSegment.size");
}

static void v_ptd_named_data(walker *w, const wtable *t) {
    wtable layout;
    uint64_t first;
    w_string(w, t, 0, "NamedData.key");
    w_scalar(w, t, 1, 4, "NamedData.segment_index");
    if (w_subtable(w, t, 2, "NamedData.tensor_layout", &layout)) {
        w_scalar(w, &layout, 0, 1, "TensorLayout.scalar_type");
        w_vector(w, &layout, 1, 4, "TensorLayout.sizes", "TensorLayout.sizes[]", &first);
        w_vector(w, &layout, 2, 1, "TensorLayout.dim_order", "TensorLayout.dim_order[]", &first);
    }
}

/* Walks a .ptd file: header fields, then the FlatTensor flatbuffer. */
static int walk_ptd(walker *w, const uint8_t *file, size_t size) {
    wtable root;
    memset(w, 0, sizeof *w);
    w->b = file;
    w->n = size;
    w->seen = calloc(size + 1, 1);
    if (w->seen == NULL) abort();
    if (size < 48 || memcmp(file + 4, "FT01", 4) != 0 || memcmp(file + 8, "FH01", 4) != 0) {
        w->error = "not an FT01 file with an FH01 header";
        return 0;
    }
    w_add(w, 0, 4, "ptd root offset");
    w_add(w, 12, 4, "FlatTensorHeader.length");
    w_add(w, 16, 8, "FlatTensorHeader.flatbuffer_offset");
    w_add(w, 24, 8, "FlatTensorHeader.flatbuffer_size");
    w_add(w, 32, 8, "FlatTensorHeader.segment_base_offset");
    w_add(w, 40, 8, "FlatTensorHeader.segment_data_size");
    uint64_t fb_offset = 0, fb_size = 0;
    for (int k = 7; k >= 0; k--) {
        fb_offset = (fb_offset << 8) | file[16 + k];
        fb_size = (fb_size << 8) | file[24 + k];
    }
    if (fb_offset > size || fb_size > size - fb_offset) {
        w->error = "flatbuffer beyond the file";
        return 0;
    }
    w->n = (size_t)(fb_offset + fb_size);
    if (!w_table(w, w_u32(w, 0), "FlatTensor", &root)) return 0;
    w_scalar(w, &root, 0, 4, "FlatTensor.version");
    w_tables(w, &root, 1, "FlatTensor.segments", v_ptd_segment);
    w_tables(w, &root, 2, "FlatTensor.named_data", v_ptd_named_data);
    return w->error == NULL;
}

static void v_program(walker *w, const wtable *t) {
    wtable cs;
    w_scalar(w, t, 0, 4, "Program.version");
    w_tables(w, t, 1, "Program.execution_plan", v_plan);
    w_tables(w, t, 2, "Program.constant_buffer", v_bytes_holder);
    w_tables(w, t, 3, "Program.backend_delegate_data", v_bytes_holder);
    w_tables(w, t, 4, "Program.segments", v_segment);
    if (w_subtable(w, t, 5, "Program.constant_segment", &cs)) v_subsegment(w, &cs);
    w_tables(w, t, 6, "Program.mutable_data_segments", v_subsegment);
    w_tables(w, t, 7, "Program.named_data", v_named_data);
}

/* --- XNNPACK delegate payloads: the XNNGraph schema (backends/xnnpack) --- */

static void v_xnn_tensor(walker *w, const wtable *t) {
    uint64_t first;
    w_scalar(w, t, 0, 2, "XNNTensorValue.datatype");
    w_scalar(w, t, 1, 4, "XNNTensorValue.num_dims");
    w_vector(w, t, 2, 4, "XNNTensorValue.dims", "XNNTensorValue.dims[]", &first);
    w_scalar(w, t, 3, 4, "XNNTensorValue.constant_buffer_idx");
    w_scalar(w, t, 4, 4, "XNNTensorValue.external_id");
    w_scalar(w, t, 5, 4, "XNNTensorValue.flags");
    w_scalar(w, t, 6, 4, "XNNTensorValue.id_out");
    w_scalar(w, t, 7, 2, "XNNTensorValue.dq_datatype");
}

static void v_xnn_value(walker *w, const wtable *t) {
    wtable v, q;
    uint8_t type = w_read_u8(w, t, 0);
    w_scalar(w, t, 0, 1, "XValue.xvalue_union_type");
    if (!w_subtable(w, t, 1, "XValue.xvalue_union", &v)) return;
    if (type == 1) {
        v_xnn_tensor(w, &v);
        return;
    }
    wtable tv;
    uint64_t first;
    if (w_subtable(w, &v, 0, "XNNQuantizedTensorValue.tensor_value", &tv)) v_xnn_tensor(w, &tv);
    const uint8_t qtype = w_read_u8(w, &v, 1);
    w_scalar(w, &v, 1, 1, "XNNQuantizedTensorValue.quant_params_type");
    if (!w_subtable(w, &v, 2, "XNNQuantizedTensorValue.quant_params", &q)) return;
    switch (qtype) {
    case 1: /* PerChannelQuant */
        w_vector(w, &q, 0, 4, "PerChannelQuant.scale", "PerChannelQuant.scale[]", &first);
        w_scalar(w, &q, 1, 4, "PerChannelQuant.channel_dim");
        w_scalar(w, &q, 2, 4, "PerChannelQuant.scale_buffer_idx");
        w_scalar(w, &q, 3, 4, "PerChannelQuant.num_scales");
        break;
    case 2: /* PerTensorQuant */
        w_scalar(w, &q, 0, 4, "PerTensorQuant.scale");
        w_scalar(w, &q, 1, 4, "PerTensorQuant.zero_point");
        break;
    case 3: /* PerTokenDynamicQuant */
        w_scalar(w, &q, 0, 4, "PerTokenDynamicQuant.num_nonbatch_dims");
        break;
    case 4: /* PerChannelGroupQuant */
        w_vector(w, &q, 0, 4, "PerChannelGroupQuant.scale", "PerChannelGroupQuant.scale[]",
                 &first);
        w_scalar(w, &q, 1, 4, "PerChannelGroupQuant.channel_dim");
        w_scalar(w, &q, 2, 4, "PerChannelGroupQuant.group_size");
        w_vector(w, &q, 3, 2, "PerChannelGroupQuant.scale_bf16", "PerChannelGroupQuant.scale_bf16[]",
                 &first);
        w_scalar(w, &q, 4, 4, "PerChannelGroupQuant.scale_buffer_idx");
        w_scalar(w, &q, 5, 4, "PerChannelGroupQuant.num_scales");
        break;
    default:
        for (unsigned id = 0; id < 6; id++) w_scalar(w, &q, id, 4, "quant params field");
    }
}

/* Node tables: which field ids hold 4-byte scalars and which uint vectors. */
static void v_xnn_node(walker *w, const wtable *t) {
    wtable n, mm;
    uint8_t type = w_read_u8(w, t, 0);
    uint64_t first;
    w_scalar(w, t, 0, 1, "XNode.xnode_union_type");
    w_scalar(w, t, 2, 4, "XNode.debug_handle");
    if (w_subtable(w, t, 3, "XNode.output_min_max", &mm)) {
        w_scalar(w, &mm, 0, 4, "OutputMinMax.output_min");
        w_scalar(w, &mm, 1, 4, "OutputMinMax.output_max");
    }
    if (!w_subtable(w, t, 1, "XNode.xnode_union", &n)) return;
    /* vectors: transpose perm, reshape new_shape (id 1); slice offsets and
     * sizes (1, 2); pad pre and post (0, 1) */
    int vec_a = -1, vec_b = -1;
    if (type == 5 || type == 20) vec_a = 1;
    if (type == 35) vec_a = 1, vec_b = 2;
    if (type == 10) vec_a = 0, vec_b = 1;
    for (unsigned id = 0; id < 20; id++) {
        if ((int)id == vec_a || (int)id == vec_b)
            w_vector(w, &n, id, 4, "node vector", "node vector[]", &first);
        else
            w_scalar(w, &n, id, 4, "node field");
    }
}

static void v_xnn_constant(walker *w, const wtable *t) {
    w_scalar(w, t, 0, 8, "ConstantDataOffset.offset");
    w_scalar(w, t, 1, 8, "ConstantDataOffset.size");
    w_string(w, t, 2, "ConstantDataOffset.named_key");
}

static void v_xnn_graph(walker *w, const wtable *t) {
    uint64_t first;
    w_string(w, t, 0, "XNNGraph.version");
    w_tables(w, t, 1, "XNNGraph.xnodes", v_xnn_node);
    w_tables(w, t, 2, "XNNGraph.xvalues", v_xnn_value);
    w_scalar(w, t, 3, 4, "XNNGraph.num_externs");
    w_vector(w, t, 4, 4, "XNNGraph.input_ids", "XNNGraph.input_ids[]", &first);
    w_vector(w, t, 5, 4, "XNNGraph.output_ids", "XNNGraph.output_ids[]", &first);
    w_tables(w, t, 6, "XNNGraph.constant_buffer", v_bytes_holder);
    w_vector(w, t, 7, 4, "XNNGraph.mem_buffer_sizes", "XNNGraph.mem_buffer_sizes[]", &first);
    w_tables(w, t, 8, "XNNGraph.constant_data", v_xnn_constant);
}

/* Finds the XNNPACK payloads of a file (the "XH00" magic 4 bytes into a
 * 16-aligned block) and adds their header and flatbuffer fields to w, at
 * file positions. */
static void walk_xnnpack(walker *w, const uint8_t *file, size_t size) {
    for (size_t at = 0; at + 30 <= size; at += 16) {
        if (memcmp(file + at + 4, "XH00", 4) != 0) continue;
        uint32_t fbo = (uint32_t)file[at + 10] | (uint32_t)file[at + 11] << 8 |
                       (uint32_t)file[at + 12] << 16 | (uint32_t)file[at + 13] << 24;
        uint32_t fbs = (uint32_t)file[at + 14] | (uint32_t)file[at + 15] << 8 |
                       (uint32_t)file[at + 16] << 16 | (uint32_t)file[at + 17] << 24;
        if (fbo > size - at || fbs > size - at - fbo) continue;
        static const struct { unsigned off, width; const char *what; } header[] = {
            {8, 2, "XNNHeader.header_length"}, {10, 4, "XNNHeader.flatbuffer_offset"},
            {14, 4, "XNNHeader.flatbuffer_size"}, {18, 4, "XNNHeader.constant_data_offset"},
            {22, 8, "XNNHeader.constant_data_size"}};
        walker sub;
        memset(&sub, 0, sizeof sub);
        sub.b = file + at + fbo;
        sub.n = fbs;
        sub.seen = calloc(fbs + 1, 1);
        if (sub.seen == NULL) abort();
        wtable root;
        w_add(&sub, 0, 4, "XNNGraph root offset");
        if (w_table(&sub, w_u32(&sub, 0), "XNNGraph", &root)) v_xnn_graph(&sub, &root);
        if (sub.error != NULL) w_fail(w, sub.error);
        /* the file positions of everything found */
        size_t n = w->n;
        w->n = size;
        for (size_t k = 0; k < sizeof header / sizeof header[0]; k++)
            w_add(w, at + header[k].off, header[k].width, header[k].what);
        for (size_t f = 0; f < sub.count; f++)
            w_add(w, at + fbo + sub.fields[f].pos, sub.fields[f].width, sub.fields[f].what);
        w->n = n;
        free(sub.seen);
        free(sub.fields);
    }
}

/* Walks the whole file; returns 0 (with w->error) if the fixture is odd. */
static int walk_program(walker *w, const uint8_t *file, size_t size) {
    wtable root;
    memset(w, 0, sizeof *w);
    w->b = file;
    w->n = size;
    w->seen = calloc(size + 1, 1);
    if (w->seen == NULL) abort();
    if (size < 8 || memcmp(file + 4, "ET12", 4) != 0) {
        w->error = "not an ET12 file";
        return 0;
    }
    w_add(w, 0, 4, "header root offset");
    if (size >= 40 && memcmp(file + 8, "eh00", 4) == 0) {
        uint64_t program_size = 0;
        w_add(w, 12, 4, "extended header length");
        w_add(w, 16, 8, "extended header program_size");
        w_add(w, 24, 8, "extended header segment_base_offset");
        w_add(w, 32, 8, "extended header segment_data_size");
        for (int k = 7; k >= 0; k--) program_size = (program_size << 8) | file[16 + k];
        if (program_size > size) {
            w->error = "program_size beyond the file";
            return 0;
        }
        w->n = (size_t)program_size; /* the flatbuffer ends here */
    }
    if (!w_table(w, w_u32(w, 0), "Program", &root)) return 0;
    v_program(w, &root);
    walk_xnnpack(w, file, size);
    return w->error == NULL;
}

/* ---------------------------------------------------------------------- */
/* Cases                                                                  */
/* ---------------------------------------------------------------------- */

typedef struct tally {
    size_t cases;
    size_t loaded;       /* program and every method loaded */
    size_t rejected;     /* program or a method load returned an error */
    size_t exec_ok;      /* method executions ending in OK */
    size_t exec_failed;  /* method executions (or input binding) ending in an error */
    size_t exec_skipped; /* methods whose inputs were above the cap */
} tally;

static void tally_add(tally *t, const tally *u) {
    t->cases += u->cases;
    t->loaded += u->loaded;
    t->rejected += u->rejected;
    t->exec_ok += u->exec_ok;
    t->exec_failed += u->exec_failed;
    t->exec_skipped += u->exec_skipped;
}

/* The .ptd data file of the fixture being run (NULL: none); its cases
 * replace it with a corrupted copy. */
static const uint8_t *g_ptd;
static size_t g_ptd_size;

/* Runs one case on data[0..size) (with the data file ptd[0..ptd_size) if
 * ptd is not NULL) and checks for leaks afterwards: through the zero-copy
 * buffer loader, or with exact_copy through the exact-copy loader (every
 * loaded range its own heap block, so ASan sees a read past the flatbuffer
 * region or a segment, or a use after release). */
static void run_case_data(const uint8_t *data, size_t size, const uint8_t *ptd, size_t ptd_size,
                          int executions, int exact_copy, tally *t) {
    ember_buffer_loader plain, plain_ptd;
    ru_exact_loader exact, exact_ptd;
    ru_result res;
    int map_failed = 0;
    if (g_verbose) fprintf(stderr, "case %s\n", ru_case);
    ember_buffer_loader_init(&plain, data, size);
    ru_exact_loader_init(&exact, data, size, 1);
    ember_buffer_loader_init(&plain_ptd, ptd, ptd_size);
    ru_exact_loader_init(&exact_ptd, ptd, ptd_size, 1);
    alarm(CASE_TIMEOUT);
    if (ptd == NULL)
        ru_run_program(exact_copy ? &exact.base : &plain.base, executions, IO_CAP, &res);
    else
        ru_run_program_data(exact_copy ? &exact.base : &plain.base,
                            exact_copy ? &exact_ptd.base : &plain_ptd.base, executions, IO_CAP,
                            &res, &map_failed);
    alarm(0);
    if (exact.live != 0 || exact_ptd.live != 0) {
        g_violations++;
        fprintf(stderr, "FAIL [%s]: %lld loaded buffers never released\n", ru_case,
                (long long)(exact.live + exact_ptd.live));
    }
    t->cases++;
    if (!map_failed && res.program_loaded && res.methods_loaded == res.methods)
        t->loaded++;
    else
        t->rejected++;
    t->exec_ok += res.executed_ok;
    t->exec_failed += res.execute_failed;
    t->exec_skipped += res.skipped;
    if (ru_heap_state.live != 0) {
        g_violations++;
        fprintf(stderr, "FAIL [%s]: %lld platform blocks leaked\n", ru_case,
                (long long)ru_heap_state.live);
        ru_heap_state.live = 0;
    }
}

static void run_case(const uint8_t *data, size_t size, int executions, int exact_copy, tally *t) {
    run_case_data(data, size, g_ptd, g_ptd_size, executions, exact_copy, t);
}

/* Width-appropriate values for a field: 0, all ones, INT32_MAX, INT64_MAX
 * (truncated to the width), without duplicates. Returns how many. */
static size_t field_values(unsigned width, uint64_t out[4]) {
    static const uint64_t wanted[4] = {0, UINT64_MAX, INT32_MAX, INT64_MAX};
    uint64_t mask = width == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * width)) - 1;
    size_t n = 0;
    for (size_t i = 0; i < 4; i++) {
        uint64_t v = wanted[i] & mask;
        /* INT32_MAX in a narrower field: the field's own signed maximum. */
        if (wanted[i] == (uint64_t)INT32_MAX && width < 4) v = mask >> 1;
        int dup = 0;
        for (size_t k = 0; k < n; k++) dup |= out[k] == v;
        if (!dup) out[n++] = v;
    }
    return n;
}

static int run_fixture(const char *path, int quick, tally *total) {
    size_t size = 0;
    uint8_t *file = ru_read_file(path, &size);
    tally trunc = {0}, flip = {0}, fld = {0}, idx = {0}, dtrunc = {0}, dflip = {0}, dfld = {0};
    walker w;
    ru_result base;
    ember_buffer_loader loader, data_loader;
    const size_t stride = quick ? 13 : 1;
    int executions = strstr(path, "mutable_buffer") != NULL ? 2 : 1;
    int map_failed = 0;
    char ptd_path[512];
    double t0 = now_s();

    if (file == NULL) {
        fprintf(stderr, "FAIL: cannot read %s (run from the repository root)\n", path);
        return 1;
    }
    g_ptd = NULL;
    g_ptd_size = 0;
    if (ru_data_path(path, ptd_path, sizeof ptd_path)) {
        uint8_t *ptd = ru_read_file(ptd_path, &g_ptd_size);
        if (ptd == NULL) {
            fprintf(stderr, "FAIL: cannot read %s\n", ptd_path);
            free(file);
            return 1;
        }
        g_ptd = ptd;
    }
    /* The unmodified file must load and run: otherwise the cases test little. */
    snprintf(ru_case, sizeof ru_case, "%s unmodified", path);
    ember_buffer_loader_init(&loader, file, size);
    ember_buffer_loader_init(&data_loader, g_ptd, g_ptd_size);
    if (g_ptd != NULL)
        ru_run_program_data(&loader.base, &data_loader.base, executions, IO_CAP, &base, &map_failed);
    else
        ru_run_program(&loader.base, executions, IO_CAP, &base);
    if (map_failed || !base.program_loaded || base.methods_loaded != base.methods ||
        base.executed_ok != base.methods) {
        /* While kernels are being written, EMBER_ALLOW_MISSING_KERNELS=1
         * still runs the cases (they then stop at method load). */
        int allowed = base.first_error == EMBER_ERR_OPERATOR_MISSING &&
                      getenv("EMBER_ALLOW_MISSING_KERNELS") != NULL;
        fprintf(stderr, "corruption: %s: unmodified %s does not run: %s (%s)\n",
                allowed ? "note" : "FAIL", path, ember_status_str(base.first_error),
                ember_last_error());
        if (!allowed) {
            free((void *)g_ptd);
            g_ptd = NULL;
            free(file);
            return 1;
        }
    }

    if (!walk_program(&w, file, size)) {
        fprintf(stderr, "FAIL: walking %s: %s\n", path, w.error ? w.error : "?");
        free(w.seen);
        free(w.fields);
        free((void *)g_ptd);
        g_ptd = NULL;
        free(file);
        return 1;
    }
    if (g_list_fields)
        for (size_t f = 0; f < w.count; f++)
            printf("field %s %u bytes at %u: %s\n", path, w.fields[f].width, w.fields[f].pos,
                   w.fields[f].what);

    /* (a) Truncations: each in an exactly-sized allocation, so that ASan
     * sees any read past the end. */
    for (size_t len = 0; len < size; len += stride) {
        uint8_t *copy = malloc(len > 0 ? len : 1);
        if (copy == NULL) abort();
        memcpy(copy, file, len);
        snprintf(ru_case, sizeof ru_case, "%s truncated to %zu bytes", path, len);
        run_case(copy, len, executions, 0, &trunc);
        free(copy);
    }

    /* (b) Every byte flipped, one at a time (through the exact-copy loader). */
    uint8_t *copy = malloc(size);
    if (copy == NULL) abort();
    memcpy(copy, file, size);
    for (size_t pos = 0; pos < size; pos += stride) {
        copy[pos] ^= 0xFF;
        snprintf(ru_case, sizeof ru_case, "%s byte %zu flipped (0x%02x -> 0x%02x)", path, pos,
                 file[pos], copy[pos]);
        run_case(copy, size, executions, 1, &flip);
        copy[pos] = file[pos];
    }

    /* (c) Every integer field set to each extreme value (exact-copy loader). */
    for (size_t f = 0; f < w.count; f++) {
        const field *fd = &w.fields[f];
        uint64_t values[4], orig = 0;
        size_t nv = field_values(fd->width, values);
        for (unsigned k = fd->width; k-- > 0;) orig = (orig << 8) | file[fd->pos + k];
        for (size_t v = 0; v < nv; v++) {
            if (values[v] == orig) continue; /* the unmodified file: run above */
            for (unsigned k = 0; k < fd->width; k++) copy[fd->pos + k] = (uint8_t)(values[v] >> (8 * k));
            snprintf(ru_case, sizeof ru_case, "%s %s (%u bytes at %u) 0x%llx -> 0x%llx", path,
                     fd->what, fd->width, fd->pos, (unsigned long long)orig,
                     (unsigned long long)values[v]);
            run_case(copy, size, executions, 1, &fld);
            memcpy(copy + fd->pos, file + fd->pos, fd->width);
        }
    }
    /* (d) Every value index retargeted to other values of the method, so
     * kernels and delegates get real arguments of the wrong kind, dtype or
     * shape: its neighbours and values spread over the whole range. */
    for (size_t f = 0; f < w.count; f++) {
        const field *fd = &w.fields[f];
        uint64_t orig = 0, cand[RETARGETS];
        size_t nc = 0;
        if (fd->values < 2) continue;
        for (unsigned k = fd->width; k-- > 0;) orig = (orig << 8) | file[fd->pos + k];
        for (size_t k = 0; k < RETARGETS; k++) {
            int64_t c = k < 4 ? (int64_t)orig + (k < 2 ? -1 - (int64_t)k : (int64_t)k - 1)
                              : (int64_t)((uint64_t)(k - 4) * fd->values / (RETARGETS - 4));
            int dup = c < 0 || c >= (int64_t)fd->values || (uint64_t)c == orig;
            for (size_t j = 0; j < nc && !dup; j++) dup = cand[j] == (uint64_t)c;
            if (!dup) cand[nc++] = (uint64_t)c;
        }
        for (size_t v = 0; v < nc; v++) {
            for (unsigned k = 0; k < fd->width; k++) copy[fd->pos + k] = (uint8_t)(cand[v] >> (8 * k));
            snprintf(ru_case, sizeof ru_case, "%s %s (%u bytes at %u) value %llu -> %llu", path,
                     fd->what, fd->width, fd->pos, (unsigned long long)orig,
                     (unsigned long long)cand[v]);
            run_case(copy, size, executions, 1, &idx);
            memcpy(copy + fd->pos, file + fd->pos, fd->width);
        }
    }
    free(copy);

    tally fx = {0};
    tally_add(&fx, &trunc);
    tally_add(&fx, &flip);
    tally_add(&fx, &fld);
    tally_add(&fx, &idx);
    printf("corruption: %-34s %6zu bytes, %5zu fields: %7zu cases (truncate %zu, flip %zu, "
           "fields %zu, retarget %zu), loaded %zu, rejected %zu; executions ok %zu, failed %zu, "
           "skipped %zu; %.1f s\n",
           path, size, w.count, fx.cases, trunc.cases, flip.cases, fld.cases, idx.cases, fx.loaded,
           fx.rejected, fx.exec_ok, fx.exec_failed, fx.exec_skipped, now_s() - t0);
    fflush(stdout);
    tally_add(total, &fx);
    free(w.seen);
    free(w.fields);

    /* The data file: the program stays intact, its map is corrupted. */
    if (g_ptd != NULL) {
        walker dw;
        const uint8_t *ptd = g_ptd;
        size_t psize = g_ptd_size;
        t0 = now_s();
        if (!walk_ptd(&dw, ptd, psize)) {
            fprintf(stderr, "FAIL: walking %s: %s\n", ptd_path, dw.error ? dw.error : "?");
            free(dw.seen);
            free(dw.fields);
            free((void *)g_ptd);
            g_ptd = NULL;
            free(file);
            return 1;
        }
        if (g_list_fields)
            for (size_t f = 0; f < dw.count; f++)
                printf("field %s %u bytes at %u: %s\n", ptd_path, dw.fields[f].width,
                       dw.fields[f].pos, dw.fields[f].what);
        /* (e) Truncations, each in an exactly-sized allocation. */
        for (size_t len = 0; len < psize; len += stride) {
            uint8_t *cut = malloc(len > 0 ? len : 1);
            if (cut == NULL) abort();
            memcpy(cut, ptd, len);
            snprintf(ru_case, sizeof ru_case, "%.150s truncated to %zu bytes", ptd_path, len);
            run_case_data(file, size, cut, len, executions, 0, &dtrunc);
            free(cut);
        }
        /* (f) Every byte flipped (exact-copy loaders). */
        uint8_t *dcopy = malloc(psize);
        if (dcopy == NULL) abort();
        memcpy(dcopy, ptd, psize);
        for (size_t pos = 0; pos < psize; pos += stride) {
            dcopy[pos] ^= 0xFF;
            snprintf(ru_case, sizeof ru_case, "%.150s byte %zu flipped (0x%02x -> 0x%02x)", ptd_path,
                     pos, ptd[pos], dcopy[pos]);
            run_case_data(file, size, dcopy, psize, executions, 1, &dflip);
            dcopy[pos] = ptd[pos];
        }
        /* (g) Every integer field set to each extreme value. */
        for (size_t f = 0; f < dw.count; f++) {
            const field *fd = &dw.fields[f];
            uint64_t values[4], orig = 0;
            size_t nv = field_values(fd->width, values);
            for (unsigned k = fd->width; k-- > 0;) orig = (orig << 8) | ptd[fd->pos + k];
            for (size_t v = 0; v < nv; v++) {
                if (values[v] == orig) continue;
                for (unsigned k = 0; k < fd->width; k++)
                    dcopy[fd->pos + k] = (uint8_t)(values[v] >> (8 * k));
                snprintf(ru_case, sizeof ru_case, "%.150s %.40s (%u bytes at %u) 0x%llx -> 0x%llx",
                         ptd_path, fd->what, fd->width, fd->pos, (unsigned long long)orig,
                         (unsigned long long)values[v]);
                run_case_data(file, size, dcopy, psize, executions, 1, &dfld);
                memcpy(dcopy + fd->pos, ptd + fd->pos, fd->width);
            }
        }
        free(dcopy);
        tally dx = {0};
        tally_add(&dx, &dtrunc);
        tally_add(&dx, &dflip);
        tally_add(&dx, &dfld);
        printf("corruption: %-34s %6zu bytes, %5zu fields: %7zu cases (truncate %zu, flip %zu, "
               "fields %zu), loaded %zu, rejected %zu; executions ok %zu, failed %zu, "
               "skipped %zu; %.1f s\n",
               ptd_path, psize, dw.count, dx.cases, dtrunc.cases, dflip.cases, dfld.cases,
               dx.loaded, dx.rejected, dx.exec_ok, dx.exec_failed, dx.exec_skipped, now_s() - t0);
        fflush(stdout);
        tally_add(total, &dx);
        free(dw.seen);
        free(dw.fields);
        free((void *)g_ptd);
        g_ptd = NULL;
    }
    free(file);
    return 0;
}

int main(int argc, char **argv) {
    int quick = getenv("EMBER_CORRUPTION_QUICK") != NULL && getenv("EMBER_CORRUPTION_QUICK")[0] != '0';
    char *paths[64];
    size_t npaths = 0, listed = 0;
    tally total = {0};
    int failed = 0;
    double t0 = now_s();

    g_verbose = getenv("EMBER_CORRUPTION_VERBOSE") != NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--verbose") == 0)
            g_verbose = 1;
        else if (strcmp(argv[i], "--list-fields") == 0)
            g_list_fields = 1;
        else if (npaths < sizeof paths / sizeof paths[0])
            paths[npaths++] = argv[i];
    }
    if (npaths == 0) {
        npaths = listed = ru_list_fixtures("tests/fixtures", paths, sizeof paths / sizeof paths[0]);
        if (npaths == 0) {
            fprintf(stderr, "FAIL: no tests/fixtures/*.pte (run from the repository root)\n");
            return 1;
        }
    }

    ru_install_crash_report("corruption");
    ru_heap_install(HEAP_CAP);
    ru_violation = violation;
    if (!ru_register()) {
        fprintf(stderr, "FAIL: cannot register the kernels and backend: %s\n", ember_last_error());
        return 1;
    }
    if (quick) printf("corruption: quick mode: every 13th truncation and byte flip only\n");

    for (size_t i = 0; i < npaths; i++) failed |= run_fixture(paths[i], quick, &total);

    printf("corruption: %zu cases, 0 crashes (loaded %zu, rejected %zu); executions ok %zu, "
           "failed cleanly %zu, skipped %zu; %zu contract violations; %.1f s\n",
           total.cases, total.loaded, total.rejected, total.exec_ok, total.exec_failed,
           total.exec_skipped, g_violations, now_s() - t0);
    for (size_t i = 0; i < listed; i++) free(paths[i]);
    if (g_violations > 0) {
        fprintf(stderr, "FAIL: %zu contract violations (missing messages or leaks)\n", g_violations);
        failed = 1;
    }
    return failed ? 1 : 0;
}
