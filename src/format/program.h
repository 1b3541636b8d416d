/*
 * The loaded program and the decoders shared by verification (at program
 * load) and method load. Every decoder checks what it reads, so the same
 * code that verifies the file builds the method.
 */
#ifndef EMBER_FORMAT_PROGRAM_H
#define EMBER_FORMAT_PROGRAM_H

#include "core/internal.h"
#include "format/flatbuffer.h"

/* Field ids of the schema (field order = id; a union takes two ids). */
enum {
    PROGRAM_VERSION = 0, PROGRAM_EXECUTION_PLAN = 1, PROGRAM_CONSTANT_BUFFER = 2,
    PROGRAM_DELEGATE_DATA = 3, PROGRAM_SEGMENTS = 4, PROGRAM_CONSTANT_SEGMENT = 5,
    PROGRAM_MUTABLE_SEGMENTS = 6, PROGRAM_NAMED_DATA = 7,
    NAMED_DATA_KEY = 0, NAMED_DATA_SEGMENT = 1,
    PLAN_NAME = 0, PLAN_VALUES = 2, PLAN_INPUTS = 3, PLAN_OUTPUTS = 4, PLAN_CHAINS = 5,
    PLAN_OPERATORS = 6, PLAN_DELEGATES = 7, PLAN_BUFFER_SIZES = 8,
    EVALUE_TYPE = 0, EVALUE_VAL = 1,
    TENSOR_SCALAR_TYPE = 0, TENSOR_STORAGE_OFFSET = 1, TENSOR_SIZES = 2, TENSOR_DIM_ORDER = 3,
    TENSOR_DATA_BUFFER_IDX = 5, TENSOR_ALLOCATION = 6, TENSOR_DYNAMISM = 8, TENSOR_EXTRA = 9,
    ALLOC_MEMORY_ID = 0, ALLOC_OFFSET_LOW = 1, ALLOC_OFFSET_HIGH = 2,
    EXTRA_FQN = 1, EXTRA_LOCATION = 2,
    OPERATOR_NAME = 0, OPERATOR_OVERLOAD = 1,
    CHAIN_INSTRUCTIONS = 2,
    INSTR_TYPE = 0, INSTR_ARGS = 1,
    DELEGATE_ID = 0, DELEGATE_PROCESSED = 1, DELEGATE_SPECS = 2,
    DATAREF_LOCATION = 0, DATAREF_INDEX = 1,
    SPEC_KEY = 0, SPEC_VALUE = 1,
    SEGMENT_OFFSET = 0, SEGMENT_SIZE = 1,
    SUBSEG_INDEX = 0, SUBSEG_OFFSETS = 1
};

/* Instruction kinds (union tags). */
enum { INSTR_KERNEL = 1, INSTR_DELEGATE = 2, INSTR_MOVE = 3, INSTR_JUMP_FALSE = 4, INSTR_FREE = 5 };

/* One execution plan, located and counted at load. */
typedef struct pte_plan {
    fb_table table;
    const char *name;
    fb_vec values, inputs, outputs, chains, operators, delegates, buffer_sizes;
    size_t num_instructions;
    uint32_t num_external;       /* EXTERNAL constant tensors (bound from data maps) */
} pte_plan;

struct ember_program {
    const ember_data_loader *loader;
    ember_heap_allocator heap;   /* used when no allocator was given */
    ember_buffer flatbuffer;     /* bytes [0, program_size) */
    ember_buffer constants;      /* constant segment, if any */
    fb_reader r;
    fb_table root;
    uint64_t file_size;
    uint64_t segment_base;
    uint64_t segment_data_size;
    fb_vec segments;             /* DataSegment tables */
    fb_vec constant_offsets;     /* constant_segment.offsets */
    fb_vec constant_buffers;     /* legacy inline Buffer tables */
    bool use_constant_segment;
    fb_vec mutable_offsets;      /* mutable_data_segments[0].offsets */
    uint32_t mutable_segment;    /* its segment index */
    bool has_mutable;
    fb_vec delegate_data;        /* BackendDelegateInlineData tables */
    fb_vec named_data;           /* NamedData tables: key -> segment */
    pte_plan *plans;
    size_t num_plans;
};

/* A decoded tensor: everything the file says about it, validated. */
typedef struct pte_tensor {
    uint8_t dtype;
    uint8_t dynamism;
    uint8_t storage;             /* ember_storage */
    uint32_t dim;
    int32_t sizes[EMBER_MAX_DIM];
    uint8_t dim_order[EMBER_MAX_DIM];
    int64_t numel;
    size_t nbytes;
    const uint8_t *constant;     /* constant data (storage CONSTANT) */
    uint32_t memory_id;          /* planned: buffer id (>= 1) */
    uint64_t memory_offset;      /* planned: offset in that buffer */
    uint32_t mutable_index;      /* planned: initial data index, 0 if none */
    bool external;               /* data (constant, or planned initial contents) lives in
                                    a data map under fqn; constant is then NULL */
    fb_str fqn;                  /* fully qualified name (external tensors) */
} pte_tensor;

/* A decoded value. Lists keep their flatbuffer vector. */
typedef struct pte_value {
    uint32_t tag;
    union {
        int64_t i;
        bool b;
        double d;
        pte_tensor t;
        fb_str s;
        fb_vec list;
    } u;
} pte_value;

/* A decoded instruction. */
typedef struct pte_instr {
    uint8_t kind;
    int32_t a;        /* op index, delegate index, move from, cond, value index */
    int32_t b;        /* move to, jump destination */
    fb_vec args;      /* kernel / delegate arguments */
} pte_instr;

/* A decoded delegate reference. */
typedef struct pte_delegate {
    fb_str id;
    uint8_t location; /* 0 inline, 1 segment */
    uint32_t index;
    fb_vec specs;
} pte_delegate;

ember_status pte_find_plan(const ember_program *p, const char *name, const pte_plan **out);
ember_status pte_decode_value(const ember_program *p, const pte_plan *plan, uint32_t i, pte_value *out);
ember_status pte_value_tag(const ember_program *p, const pte_plan *plan, int64_t i, uint32_t *tag);
ember_status pte_instruction(const ember_program *p, const pte_plan *plan, uint32_t chain,
                             uint32_t i, pte_instr *out, uint32_t *chain_len);
ember_status pte_operator(const ember_program *p, const pte_plan *plan, uint32_t i, fb_str *name,
                          fb_str *overload);
ember_status pte_delegate_ref(const ember_program *p, const pte_plan *plan, uint32_t i,
                              pte_delegate *out);
ember_status pte_buffer_size(const ember_program *p, const pte_plan *plan, uint32_t id,
                             size_t *bytes);
ember_status pte_load_segment(const ember_program *p, uint32_t index, ember_segment_kind kind,
                              ember_buffer *out);
void pte_release(const ember_program *p, ember_buffer *buf);

/* The segment that named data `key` (len bytes) lives in: the first entry of
 * that key. EMBER_ERR_NOT_FOUND (message names the key) if there is none. */
ember_status pte_named_data(const ember_program *p, const char *key, size_t len,
                            uint32_t *segment);

/* The same without a message: false if the program has no such key. */
bool pte_find_named_data(const ember_program *p, const char *key, size_t len, uint32_t *segment);

#endif /* EMBER_FORMAT_PROGRAM_H */
