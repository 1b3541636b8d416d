/*
 * ember/ember.h — the application API of libember.
 *
 * Load a `.pte` program through a data loader, load one of its methods with
 * the memory it needs, set inputs, execute, read outputs:
 *
 *     ember_file_loader fl;
 *     ember_program *prog;
 *     ember_method *m;
 *     ember_file_loader_open(&fl, "model.pte");
 *     ember_program_load(&fl.base, NULL, &prog);
 *     ember_method_load(prog, "forward", NULL, &m);
 *     ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, sizes, 2, x, sizeof x);
 *     ember_method_execute(m);
 *     ember_method_output(m, 0, &out);
 *
 * The core calls no malloc: memory comes from caller-supplied allocators, or
 * from the platform table's heap when the caller passes NULL (see platform.h).
 * Every function that can fail returns an ember_status; the message of the
 * last failure on this thread is in ember_last_error().
 */
#ifndef EMBER_EMBER_H
#define EMBER_EMBER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/config.h"
#include "ember/platform.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EMBER_VERSION_MAJOR 0
#define EMBER_VERSION_MINOR 1
#define EMBER_VERSION_PATCH 0

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/** Status codes, grouped by range. */
typedef enum ember_status {
    EMBER_OK = 0,

    /* 0x01xx: the caller used the API wrongly. */
    EMBER_ERR_INVALID_ARGUMENT = 0x0100,
    EMBER_ERR_INVALID_STATE = 0x0101,
    EMBER_ERR_NOT_FOUND = 0x0102,
    EMBER_ERR_INDEX_OUT_OF_RANGE = 0x0103,
    EMBER_ERR_TYPE_MISMATCH = 0x0104,
    EMBER_ERR_SHAPE_MISMATCH = 0x0105,

    /* 0x02xx: the program file is malformed. */
    EMBER_ERR_INVALID_PROGRAM = 0x0200,
    EMBER_ERR_TRUNCATED = 0x0201,
    EMBER_ERR_BAD_IDENTIFIER = 0x0202,

    /* 0x03xx: valid, but not supported by this build. */
    EMBER_ERR_NOT_SUPPORTED = 0x0300,
    EMBER_ERR_OPERATOR_MISSING = 0x0301,
    EMBER_ERR_BACKEND_MISSING = 0x0302,

    /* 0x04xx: out of a resource. */
    EMBER_ERR_OUT_OF_MEMORY = 0x0400,
    EMBER_ERR_IO = 0x0401,
    EMBER_ERR_TABLE_FULL = 0x0402,

    /* 0x05xx: execution failed. */
    EMBER_ERR_KERNEL_FAILED = 0x0500,
    EMBER_ERR_DELEGATE_FAILED = 0x0501,
    EMBER_ERR_DATA_OUT_OF_BOUNDS = 0x0502,
    EMBER_ERR_LOOP_LIMIT = 0x0503,
    EMBER_ERR_OUTPUT_MISMATCH = 0x0504 /**< outputs differ from the expected ones */
} ember_status;

/** Short fixed name of a status ("invalid program", ...). Never NULL. */
const char *ember_status_str(ember_status status);

/**
 * Message of the last failure on this thread, naming the offending index,
 * operator or file field. Empty string if none. Valid until the next failing
 * call on this thread.
 */
const char *ember_last_error(void);

/**
 * Debug handle of the node that failed, when the last error on this thread
 * came from a delegate that named one (ember_backend_fail_at); -1 otherwise.
 * The ahead-of-time side maps handles to operators and source lines.
 */
int64_t ember_last_error_debug_handle(void);

/** Clears the last error message (and debug handle) of this thread. */
void ember_clear_error(void);

/**
 * Records the last error message (printf-style) and returns status, for
 * extensions and applications built on the library.
 */
ember_status ember_error_set(ember_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ------------------------------------------------------------------------ */
/* Scalar types                                                              */
/* ------------------------------------------------------------------------ */

/** Tensor element types; the codes are the file format's ScalarType. */
typedef enum ember_dtype {
    EMBER_UINT8 = 0,
    EMBER_INT8 = 1,
    EMBER_INT16 = 2,
    EMBER_INT32 = 3,
    EMBER_INT64 = 4,
    EMBER_FLOAT16 = 5,
    EMBER_FLOAT32 = 6,
    EMBER_FLOAT64 = 7,
    EMBER_BOOL = 11,
    EMBER_QINT8 = 12,
    EMBER_QUINT8 = 13,
    EMBER_QINT32 = 14,
    EMBER_BFLOAT16 = 15,
    EMBER_QUINT4X2 = 16,
    EMBER_QUINT2X4 = 17,
    EMBER_BITS16 = 22,
    EMBER_FLOAT8_E5M2 = 23,
    EMBER_FLOAT8_E4M3FN = 24,
    EMBER_FLOAT8_E5M2FNUZ = 25,
    EMBER_FLOAT8_E4M3FNUZ = 26,
    EMBER_UINT16 = 27,
    EMBER_UINT32 = 28,
    EMBER_UINT64 = 29
} ember_dtype;

/** Bytes per element of dtype; 0 for codes this build does not know. */
size_t ember_dtype_size(int dtype);

/** Lower-case name ("float32"); "unknown" for unknown codes. */
const char *ember_dtype_name(int dtype);

/* ------------------------------------------------------------------------ */
/* Tensors and values                                                        */
/* ------------------------------------------------------------------------ */

/** How a tensor's shape may change at run time (file format codes). */
typedef enum ember_dynamism {
    EMBER_SHAPE_STATIC = 0,
    EMBER_SHAPE_DYNAMIC_BOUND = 1,
    EMBER_SHAPE_DYNAMIC_UNBOUND = 2
} ember_dynamism;

/** Where a tensor's storage comes from. */
typedef enum ember_storage {
    EMBER_STORAGE_NONE = 0,    /**< bound at run time (unplanned input/output) */
    EMBER_STORAGE_CONSTANT = 1,/**< read-only program data; never write */
    EMBER_STORAGE_PLANNED = 2  /**< a slice of a planned buffer */
} ember_storage;

/**
 * A tensor. The runtime owns every tensor of a method; kernels read and write
 * them, and may change their shape only through ember_tensor_resize(). All
 * arrays have `dim` entries. Strides are in elements, derived from sizes and
 * dim_order (the file stores no strides).
 */
typedef struct ember_tensor {
    void *data;              /**< element storage, NULL until bound */
    int32_t *sizes;          /**< current sizes */
    const int32_t *bounds;   /**< upper bounds of sizes (the file's sizes) */
    const uint8_t *dim_order;/**< outermost to innermost dimension */
    int64_t *strides;        /**< derived strides, in elements */
    int64_t numel;           /**< product of sizes */
    size_t nbytes;           /**< numel * element size */
    size_t capacity;         /**< bytes the storage can hold (0 if unbound) */
    uint32_t dim;            /**< rank, at most EMBER_MAX_DIM */
    uint8_t dtype;           /**< ember_dtype */
    uint8_t dynamism;        /**< ember_dynamism */
    uint8_t storage;         /**< ember_storage */
} ember_tensor;

/**
 * Changes a tensor's shape. The rank must stay the same; every dimension is
 * checked against its bound (static tensors must keep their sizes), and
 * numel * element size against the storage capacity. Strides are recomputed.
 * @return EMBER_OK, EMBER_ERR_SHAPE_MISMATCH (rank differs, a size is negative
 *         or above its bound, or the bytes exceed capacity).
 * Never allocates.
 */
ember_status ember_tensor_resize(ember_tensor *t, const int64_t *sizes, size_t dim);

/** True if the strides are those of a row-major (dim order 0..n-1) layout. */
bool ember_tensor_is_contiguous(const ember_tensor *t);

/** Value kinds (file format EValue tags; Null and NONE both become NONE). */
typedef enum ember_tag {
    EMBER_TAG_NONE = 0,
    EMBER_TAG_INT = 2,
    EMBER_TAG_BOOL = 3,
    EMBER_TAG_DOUBLE = 4,
    EMBER_TAG_TENSOR = 5,
    EMBER_TAG_STRING = 6,
    EMBER_TAG_INT_LIST = 7,
    EMBER_TAG_DOUBLE_LIST = 8,
    EMBER_TAG_BOOL_LIST = 9,
    EMBER_TAG_TENSOR_LIST = 10,
    EMBER_TAG_OPTIONAL_TENSOR_LIST = 11
} ember_tag;

/**
 * A method value (the file's EValue). Lists of ints are boxed: their items
 * point at Int values, so symbolic sizes computed at run time flow into them;
 * ember_value_int_list() gives the current integers.
 */
typedef struct ember_value {
    uint32_t tag; /**< ember_tag */
    union {
        int64_t i;
        bool b;
        double d;
        ember_tensor *t;
        struct { const char *data; size_t len; } str;
        struct { struct ember_value **items; int64_t *unboxed; size_t len; } int_list;
        struct { const double *items; size_t len; } double_list;
        struct { const bool *items; size_t len; } bool_list;
        /** Tensor lists; in optional lists a NULL item means None. */
        struct { struct ember_value **items; size_t len; } tensor_list;
    } u;
} ember_value;

/**
 * Current integers of an IntList value.
 * @param[in,out] v     an EMBER_TAG_INT_LIST value
 * @param[out]    items the integers (valid until the next call on v)
 * @param[out]    len   their count
 * @return EMBER_OK or EMBER_ERR_TYPE_MISMATCH. Never allocates.
 */
ember_status ember_value_int_list(ember_value *v, const int64_t **items, size_t *len);

/* ------------------------------------------------------------------------ */
/* Allocators                                                                */
/* ------------------------------------------------------------------------ */

/**
 * A source of memory that is released all at once by its owner. alloc
 * returns size bytes aligned to align (a power of two), or NULL when full.
 */
typedef struct ember_allocator {
    void *ctx;
    void *(*alloc)(void *ctx, size_t size, size_t align);
} ember_allocator;

/**
 * A bump allocator over caller-owned memory (for static arrays on embedded
 * targets). Fields are private; declare one and call ember_arena_init().
 */
typedef struct ember_arena {
    ember_allocator base; /**< pass &arena.base where an allocator is wanted */
    uint8_t *buf;
    size_t size;
    size_t used;
    size_t peak;
} ember_arena;

/** Initializes an arena over buf[0..size). buf may be NULL when size is 0. */
void ember_arena_init(ember_arena *arena, void *buf, size_t size);

/** Forgets every allocation (the memory is reused). */
void ember_arena_reset(ember_arena *arena);

/* ------------------------------------------------------------------------ */
/* Data loaders                                                              */
/* ------------------------------------------------------------------------ */

/** What a load request is for (a loader may place kinds differently). */
typedef enum ember_segment_kind {
    EMBER_SEGMENT_PROGRAM = 0,
    EMBER_SEGMENT_CONSTANT = 1,
    EMBER_SEGMENT_BACKEND = 2,
    EMBER_SEGMENT_MUTABLE = 3,
    EMBER_SEGMENT_NAMED_DATA = 4 /**< data a backend looks up by key (weights) */
} ember_segment_kind;

/** Bytes handed out by a loader; give them back with the loader's release. */
typedef struct ember_buffer {
    const void *data;
    size_t size;
    void *owner; /**< loader-private (what release needs) */
} ember_buffer;

/**
 * A data loader: where a program's bytes come from. Write your own by
 * filling in this table (struct_size = sizeof(ember_data_loader)).
 */
typedef struct ember_data_loader {
    size_t struct_size;
    void *ctx;
    /** Total size of the file in bytes. */
    ember_status (*size)(void *ctx, uint64_t *out);
    /** Makes bytes [offset, offset+size) available in *out. */
    ember_status (*load)(void *ctx, uint64_t offset, size_t size, ember_segment_kind kind,
                         ember_buffer *out);
    /** Gives back a buffer from load (may be NULL if nothing to release). */
    void (*release)(void *ctx, ember_buffer *buf);
} ember_data_loader;

/** Zero-copy loader over bytes in memory (may be read-only flash). */
typedef struct ember_buffer_loader {
    ember_data_loader base;
    const uint8_t *data;
    size_t size;
} ember_buffer_loader;

/**
 * Sets up a buffer loader. data must outlive every program loaded from it.
 * Never allocates; loads return pointers into data.
 */
void ember_buffer_loader_init(ember_buffer_loader *loader, const void *data, size_t size);

/**
 * File loader: each load reads with pread into memory from the platform heap.
 * Fields are private.
 */
typedef struct ember_file_loader {
    ember_data_loader base;
    int fd;
    uint64_t file_size;
} ember_file_loader;

/**
 * Opens path for a file loader.
 * @return EMBER_OK, EMBER_ERR_IO (cannot open or stat), EMBER_ERR_NOT_SUPPORTED
 *         (no POSIX file API in this build).
 */
ember_status ember_file_loader_open(ember_file_loader *loader, const char *path);

/** Closes the file. Programs loaded from it must be destroyed first. */
void ember_file_loader_close(ember_file_loader *loader);

/** Memory-mapped file loader: loads are zero-copy views of one mapping. */
typedef struct ember_mmap_loader {
    ember_data_loader base;
    void *map;
    uint64_t file_size;
} ember_mmap_loader;

/**
 * Maps path read-only for an mmap loader.
 * @return EMBER_OK, EMBER_ERR_IO, EMBER_ERR_NOT_SUPPORTED (no mmap here).
 */
ember_status ember_mmap_loader_open(ember_mmap_loader *loader, const char *path);

/** Unmaps the file. Programs loaded from it must be destroyed first. */
void ember_mmap_loader_close(ember_mmap_loader *loader);

/* ------------------------------------------------------------------------ */
/* Programs                                                                  */
/* ------------------------------------------------------------------------ */

/** An immutable, verified program. Safe to share between threads. */
typedef struct ember_program ember_program;

/** Options for ember_program_load(); NULL means all defaults. */
typedef struct ember_program_options {
    size_t struct_size;
    /**
     * Memory for the program's own structures; NULL to use the platform heap.
     * An arena must outlive the program.
     */
    ember_allocator *allocator;
} ember_program_options;

/**
 * Loads and fully verifies a program: header, segments, and every offset,
 * length, index, dtype, rank, dim order and size in every method.
 * @param[in]  loader  source of the bytes; must outlive the program
 * @param[in]  options NULL for defaults
 * @param[out] out     the program on success
 * @return EMBER_OK; EMBER_ERR_TRUNCATED, EMBER_ERR_BAD_IDENTIFIER,
 *         EMBER_ERR_INVALID_PROGRAM (message names the field), EMBER_ERR_IO,
 *         EMBER_ERR_OUT_OF_MEMORY, EMBER_ERR_NOT_SUPPORTED.
 * Allocates from options->allocator or the platform heap; loads the flatbuffer
 * and the constant segment through the loader.
 */
ember_status ember_program_load(const ember_data_loader *loader,
                                const ember_program_options *options, ember_program **out);

/** Releases a program's loaded data and memory. NULL is a no-op. */
void ember_program_destroy(ember_program *program);

/** Number of methods. */
size_t ember_program_method_count(const ember_program *program);

/**
 * A 64-bit fingerprint (FNV-1a) of the program's flatbuffer, everything but
 * its segments: its graphs, tensors, constant tables and the keys of its
 * named data. It tells one program from another, e.g. to name files kept
 * for it (ember_module's weight cache); it is no check of the segments'
 * bytes. 0 for NULL. Reads the loaded flatbuffer; never allocates.
 */
uint64_t ember_program_hash(const ember_program *program);

/** Name of method i (NUL-terminated, lives as long as the program). */
ember_status ember_program_method_name(const ember_program *program, size_t i,
                                       const char **name);

/** Shape and type facts about one method input or output. */
typedef struct ember_value_meta {
    uint32_t tag;           /**< ember_tag of the value */
    uint8_t dtype;          /**< for tensors */
    uint8_t dynamism;       /**< for tensors */
    bool planned;           /**< tensor storage is memory-planned */
    uint32_t dim;           /**< for tensors */
    int32_t sizes[EMBER_MAX_DIM];    /**< sizes (upper bounds if dynamic) */
    uint8_t dim_order[EMBER_MAX_DIM];
    size_t nbytes;          /**< bytes at the upper-bound shape */
} ember_value_meta;

/** What a method needs and does, read without loading it. */
typedef struct ember_method_meta {
    const char *name;
    size_t num_inputs;
    size_t num_outputs;
    size_t num_planned_buffers; /**< buffers for memory ids 1..N */
    size_t num_operators;
    size_t num_delegates;
    size_t num_instructions;
    size_t num_values;
} ember_method_meta;

/** Fills *meta for the named method. @return EMBER_OK, EMBER_ERR_NOT_FOUND. */
ember_status ember_program_method_meta(const ember_program *program, const char *method,
                                       ember_method_meta *meta);

/** Meta of input i of a method. @return EMBER_OK, NOT_FOUND, INDEX_OUT_OF_RANGE. */
ember_status ember_program_input_meta(const ember_program *program, const char *method,
                                      size_t i, ember_value_meta *meta);

/** Meta of output i of a method. */
ember_status ember_program_output_meta(const ember_program *program, const char *method,
                                       size_t i, ember_value_meta *meta);

/** Size in bytes of planned buffer i (for memory id i + 1). */
ember_status ember_program_planned_buffer_size(const ember_program *program,
                                               const char *method, size_t i, size_t *bytes);

/**
 * Operator i of a method as its kernel key ("aten::add.out") written into
 * buf (NUL-terminated, truncated to cap bytes).
 */
ember_status ember_program_operator_name(const ember_program *program, const char *method,
                                         size_t i, char *buf, size_t cap);

/**
 * The backend id of delegate i of a method ("XnnpackBackend") written into
 * buf (NUL-terminated, truncated to cap bytes), as the file names it.
 * @return EMBER_OK, EMBER_ERR_NOT_FOUND, EMBER_ERR_INDEX_OUT_OF_RANGE,
 *         EMBER_ERR_INVALID_PROGRAM, EMBER_ERR_INVALID_ARGUMENT (no buffer).
 */
ember_status ember_program_delegate_name(const ember_program *program, const char *method,
                                         size_t i, char *buf, size_t cap);

/**
 * Exact bytes of method allocator that ember_method_load() will take for this
 * method (values, tensors, argument tables), excluding what delegates ask for
 * at init, for an allocator whose memory is aligned to 16 bytes. It builds
 * the tables once to count them, in memory from the platform heap: run it on
 * a host to size static arenas for a target without a heap.
 * @return EMBER_OK, EMBER_ERR_NOT_FOUND, EMBER_ERR_OUT_OF_MEMORY (no heap).
 */
ember_status ember_program_method_arena_size(const ember_program *program,
                                             const char *method, size_t *bytes);

/* ------------------------------------------------------------------------ */
/* Data maps (.ptd files)                                                    */
/* ------------------------------------------------------------------------ */

/**
 * A named data map: a `.ptd` file (ExecuTorch's "flat tensor" format,
 * identifier FT01) that holds data a program keeps outside itself, each blob
 * found by a key: weights of constant tensors marked EXTERNAL (keyed by their
 * fully qualified name, e.g. "fc1.weight") and data delegates look up at
 * init (ember_backend_get_data()). Pass maps to ember_method_load_with()
 * (ember_method_options.data_maps). Immutable once open: safe to share
 * between threads and between programs.
 */
typedef struct ember_data_map ember_data_map;

/** Options for ember_data_map_open(); NULL means all defaults. */
typedef struct ember_data_map_options {
    size_t struct_size;
    /**
     * Memory for the map's own structure (one small block); NULL to use the
     * platform heap. An arena must outlive the map.
     */
    ember_allocator *allocator;
} ember_data_map_options;

/**
 * Opens and fully verifies a data map: header, flatbuffer, and every
 * segment (offset and size inside the file), key (present and
 * NUL-terminated), segment index and tensor layout (known dtype, rank,
 * sizes, dim order a permutation, bytes overflow-checked and inside the
 * segment). Blob bytes are not read until used.
 * @param[in]  loader  source of the bytes; must outlive the map
 * @param[in]  options NULL for defaults
 * @param[out] out     the map on success; NULL on failure
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL argument, bad loader or
 *         options struct_size); EMBER_ERR_TRUNCATED (the file is shorter than
 *         its header says); EMBER_ERR_BAD_IDENTIFIER (not FT01, or no FH01
 *         header); EMBER_ERR_INVALID_PROGRAM (a malformed field: the message
 *         names it); EMBER_ERR_NOT_SUPPORTED (a newer schema version, or a
 *         file too large for this machine); EMBER_ERR_IO,
 *         EMBER_ERR_OUT_OF_MEMORY.
 * Allocates one block from options->allocator or the platform heap; loads
 * the header and the flatbuffer through the loader and keeps them until
 * ember_data_map_close().
 */
ember_status ember_data_map_open(const ember_data_loader *loader,
                                 const ember_data_map_options *options, ember_data_map **out);

/**
 * Releases a map's loaded bytes and memory. Methods loaded with the map must
 * be destroyed first. NULL is a no-op.
 */
void ember_data_map_close(ember_data_map *map);

/** Number of keys (entries) in the map; 0 for NULL. Never fails. */
size_t ember_data_map_key_count(const ember_data_map *map);

/**
 * Key of entry i.
 * @param[out] key NUL-terminated, lives as long as the map
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT, EMBER_ERR_INDEX_OUT_OF_RANGE.
 */
ember_status ember_data_map_key(const ember_data_map *map, size_t i, const char **key);

/** What a data map says about one entry. */
typedef struct ember_data_info {
    size_t size;          /**< bytes of the blob */
    bool has_layout;      /**< the entry describes a tensor (the fields below) */
    uint8_t dtype;        /**< ember_dtype */
    uint32_t dim;         /**< rank, at most EMBER_MAX_DIM */
    int32_t sizes[EMBER_MAX_DIM];
    uint8_t dim_order[EMBER_MAX_DIM];
    size_t nbytes;        /**< bytes of the tensor (at most size) */
} ember_data_info;

/**
 * Looks up an entry by key. When two entries share a key, the first wins.
 * @param[in]  key  NUL-terminated
 * @param[out] info what the map says about it
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT, EMBER_ERR_NOT_FOUND (the
 *         message names the key). Never allocates; thread-safe.
 */
ember_status ember_data_map_info(const ember_data_map *map, const char *key,
                                 ember_data_info *info);

/**
 * Loads the blob of `key` through the map's loader (a view for the buffer
 * and mmap loaders, a heap copy for the file loader).
 * @param[out] out the bytes; give them back with ember_data_map_release()
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT, EMBER_ERR_NOT_FOUND, or the
 *         loader's status (EMBER_ERR_IO, EMBER_ERR_OUT_OF_MEMORY, ...).
 * Thread-safe as far as the loader is.
 */
ember_status ember_data_map_load(const ember_data_map *map, const char *key, ember_buffer *out);

/** Gives back bytes from ember_data_map_load(). Safe on a zeroed buffer. */
void ember_data_map_release(const ember_data_map *map, ember_buffer *buf);

/* ------------------------------------------------------------------------ */
/* Methods                                                                   */
/* ------------------------------------------------------------------------ */

/** A loaded method. Use it from one thread at a time. */
typedef struct ember_method ember_method;

/**
 * Memory a method runs in; NULL (or NULL fields) selects the platform heap.
 * planned_buffers[k-1] backs memory id k and must hold at least
 * ember_program_planned_buffer_size(k-1) bytes, aligned to 16.
 */
typedef struct ember_memory {
    size_t struct_size;
    ember_allocator *method_allocator; /**< values, tensors, tables, delegates */
    void **planned_buffers;            /**< num_planned_buffers pointers */
    size_t num_planned_buffers;
    void *scratch;                     /**< per-instruction scratch memory */
    size_t scratch_size;
} ember_memory;

struct ember_threadpool;

/**
 * A store for the weights delegates pack at init (reordered, with scales
 * and sums folded in, into the layout their kernels stream), so that a
 * later load of the same weights maps the packed bytes instead of packing
 * them again. A backend names each packed result by a key it builds from
 * everything the bytes depend on (the content hash the program gives the
 * raw weights, shapes, quantization, the layout's version), so one key
 * always names the same bytes. ember_module_load_with() implements it with
 * a file (ember/module.h); an application may give its own.
 */
typedef struct ember_weight_cache {
    void *ctx;
    /** The bytes kept under key (key_len bytes) if they are `size` bytes,
     *  64-byte aligned and valid, read-only, for as long as the cache;
     *  NULL when there are none. */
    const void *(*find)(void *ctx, const void *key, size_t key_len, size_t size);
    /** Offers `size` bytes packed under key; the cache copies what it
     *  keeps before returning. Whether it keeps them is its own business. */
    void (*add)(void *ctx, const void *key, size_t key_len, const void *data, size_t size);
} ember_weight_cache;

/** Options for ember_method_load_with(); zero them, then set struct_size. */
typedef struct ember_method_options {
    size_t struct_size;
    /** Memory to run in; NULL selects the platform heap (see ember_method_load). */
    const ember_memory *memory;
    /**
     * Threads that kernels and delegates may split their work across
     * (ember/threadpool.h); NULL runs everything on the calling thread. The
     * pool must outlive the method, and two methods sharing a pool must not
     * execute at the same time.
     */
    struct ember_threadpool *threadpool;
    /**
     * Data maps (`.ptd` files, see ember_data_map_open()) holding what the
     * program keeps outside itself: EXTERNAL constant tensors, found by
     * fully qualified name (dtype, sizes and dim order checked against the
     * program's tensor), and keys that delegates look up with
     * ember_backend_get_data(). A key is searched in the program's own named
     * data first, then in data_maps[0], data_maps[1], ... The maps must
     * outlive the method. NULL with num_data_maps 0 for none. (Added after
     * threadpool: a struct_size that ends before this field means none.)
     */
    const ember_data_map *const *data_maps;
    size_t num_data_maps;
    /**
     * An event tracer (ember/devtools.h) that records the load (a run named
     * "load:<method>": load and init times, and allocations when it asks
     * for them) and stays attached for every execute, until
     * ember_method_set_event_tracer() changes it. NULL for none. It must
     * outlive the method or be detached first. (Added after data_maps: a
     * struct_size that ends before this field means none.)
     */
    struct ember_event_tracer *event_tracer;
    /**
     * Where delegates look for weights they packed on an earlier load, and
     * offer what they pack now (ember_weight_cache); NULL: pack every time.
     * It must outlive the method: packed weights found there are used in
     * place. (Added after event_tracer: a struct_size that ends before this
     * field means none.)
     */
    const ember_weight_cache *weight_cache;
} ember_method_options;

/**
 * Loads a method: builds its values, resolves every operator to a registered
 * kernel (reporting all missing operators at once), initializes delegates,
 * binds planned memory and copies the initial contents of mutable tensors.
 * @param[in]  program the program; must outlive the method
 * @param[in]  name    method name, e.g. "forward"
 * @param[in]  memory  memory to use, or NULL for the platform heap (planned
 *                     buffers are then allocated at the sizes the program
 *                     declares: for an untrusted program, check them with
 *                     ember_program_planned_buffer_size() first)
 * @param[out] out     the method
 * @return EMBER_OK, EMBER_ERR_NOT_FOUND, EMBER_ERR_OPERATOR_MISSING,
 *         EMBER_ERR_BACKEND_MISSING, EMBER_ERR_DELEGATE_FAILED,
 *         EMBER_ERR_OUT_OF_MEMORY, EMBER_ERR_INVALID_ARGUMENT (planned buffer
 *         count or sizes wrong), EMBER_ERR_IO.
 */
ember_status ember_method_load(const ember_program *program, const char *name,
                               const ember_memory *memory, ember_method **out);

/**
 * ember_method_load() with options (memory, thread pool, data maps); options
 * NULL is the same as ember_method_load(program, name, NULL, out). EXTERNAL
 * constant tensors are bound to their blobs in the data maps (loaded through
 * each map's loader and kept until the method is destroyed); EXTERNAL
 * planned tensors get their initial contents copied from them.
 * @return as ember_method_load(), and EMBER_ERR_INVALID_ARGUMENT for an
 *         options struct_size this library does not know or a NULL data map;
 *         EMBER_ERR_NOT_FOUND (an EXTERNAL tensor whose name no data map
 *         holds: the message names it); EMBER_ERR_TYPE_MISMATCH /
 *         EMBER_ERR_SHAPE_MISMATCH (the map's tensor differs from the
 *         program's in dtype, or in sizes, dim order or bytes);
 *         EMBER_ERR_NOT_SUPPORTED (the blob is misaligned for its dtype);
 *         the loader's status.
 */
ember_status ember_method_load_with(const ember_program *program, const char *name,
                                    const ember_method_options *options, ember_method **out);

/** Destroys delegates and frees heap memory of the method. NULL is a no-op. */
void ember_method_destroy(ember_method *method);

/**
 * Name of the method (its execution plan's name, e.g. "forward"):
 * NUL-terminated, lives as long as the program. "" for NULL. Never fails.
 */
const char *ember_method_name(const ember_method *method);

/** Number of inputs / outputs. */
size_t ember_method_input_count(const ember_method *method);
size_t ember_method_output_count(const ember_method *method);

/**
 * Sets tensor input i. If the input is memory-planned the data is copied in,
 * and must be set again before every execute: the memory plan may reuse an
 * input's bytes for intermediates once the input has been read.
 * Otherwise the method keeps data (which must stay valid and unchanged until
 * the next execute returns). The dtype must match and every size must be
 * within the input's bounds (equal, for static inputs).
 * @return EMBER_OK, EMBER_ERR_INDEX_OUT_OF_RANGE, EMBER_ERR_TYPE_MISMATCH,
 *         EMBER_ERR_SHAPE_MISMATCH, EMBER_ERR_INVALID_ARGUMENT (nbytes wrong).
 */
ember_status ember_method_set_input_tensor(ember_method *method, size_t i, ember_dtype dtype,
                                           const int64_t *sizes, size_t dim, const void *data,
                                           size_t nbytes);

/** Sets scalar input i (an Int, Double or Bool value; type must match). */
ember_status ember_method_set_input_int(ember_method *method, size_t i, int64_t v);
ember_status ember_method_set_input_double(ember_method *method, size_t i, double v);
ember_status ember_method_set_input_bool(ember_method *method, size_t i, bool v);

/**
 * Gives unplanned output i its storage (capacity bytes). Planned outputs need
 * nothing. @return EMBER_OK, INDEX_OUT_OF_RANGE, TYPE_MISMATCH, INVALID_ARGUMENT.
 */
ember_status ember_method_set_output_buffer(ember_method *method, size_t i, void *data,
                                            size_t capacity);

/**
 * Runs every instruction of the method. Allocates nothing. State in mutable
 * planned tensors persists to the next call.
 * @return EMBER_OK; EMBER_ERR_INVALID_STATE (an input or output unbound),
 *         EMBER_ERR_KERNEL_FAILED / EMBER_ERR_DELEGATE_FAILED /
 *         EMBER_ERR_DATA_OUT_OF_BOUNDS / EMBER_ERR_SHAPE_MISMATCH from the
 *         failing instruction (the message names it), EMBER_ERR_LOOP_LIMIT.
 */
ember_status ember_method_execute(ember_method *method);

/** Output i after execute (points into the method; valid until next execute). */
ember_status ember_method_output(const ember_method *method, size_t i,
                                 const ember_value **out);

/** Input value i (to inspect its meta or bound data). */
ember_status ember_method_input(const ember_method *method, size_t i, const ember_value **out);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_EMBER_H */
