/*
 * ember/backend.h — the delegate (backend) ABI, for backend authors.
 *
 * A program names each delegate by backend id ("XnnpackBackend"). At method
 * load the runtime finds the registered backend with that id, checks
 * is_available(), and calls init() with the preprocessed payload and compile
 * specs; the payload is released right after init returns, so a backend
 * copies (or packs) whatever it keeps. Data the payload refers to by key
 * (weights in the program's named data, or in a `.ptd` data map) is read at init with
 * ember_backend_get_data(). execute() receives the delegate call's arguments
 * (flattened inputs, then outputs); destroy() runs when the method is
 * destroyed.
 */
#ifndef EMBER_BACKEND_H
#define EMBER_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One compile spec: key and opaque value bytes (valid during init only). */
typedef struct ember_compile_spec {
    const char *key;
    const uint8_t *value;
    size_t value_size;
} ember_compile_spec;

struct ember_threadpool;

/** What a backend gets at init besides its payload. */
typedef struct ember_backend_init_ctx {
    /** The method allocator: memory that lives as long as the method. */
    ember_allocator *allocator;
    /** Index of this delegate in the method's delegate table. */
    size_t delegate_index;
    /** The program the delegate belongs to (for ember_backend_get_data). */
    const ember_program *program;
    /** The threads the method may use (NULL: the calling thread only); it
     * outlives the method, so a backend may keep it for execute(). */
    struct ember_threadpool *threadpool;
    /** The data maps the method was loaded with (ember_method_options), which
     * ember_backend_get_data() searches after the program's named data. */
    const ember_data_map *const *data_maps;
    size_t num_data_maps;
    /** Private: the method being loaded (for ember_backend_request_workspace). */
    struct ember_method *method_;
    /** The method's weight cache (ember_method_options), or NULL; use it
     *  through ember_backend_find_packed() and ember_backend_add_packed(). */
    const ember_weight_cache *weight_cache;
} ember_backend_init_ctx;

/** Named data lent to a backend during init. Fields after size are private. */
typedef struct ember_backend_data {
    const void *data;   /**< the bytes (read-only; may be mapped file pages) */
    size_t size;
    const ember_data_loader *loader_;
    ember_buffer buffer_;
} ember_backend_data;

/**
 * Loads the named data blob `key` (key_len bytes, not NUL-terminated) of the
 * delegate's program, e.g. a weight that an XNNPACK payload names by its
 * hash: from the program's own named data, else from the first of the
 * method's data maps (`.ptd` files) that holds the key. The bytes stay valid
 * until ember_backend_release_data(), which the backend must call before
 * init returns (pack or copy what it keeps).
 * @return EMBER_OK, EMBER_ERR_NOT_FOUND (no such key; the message names it),
 *         EMBER_ERR_INVALID_ARGUMENT, or the loader's status (IO, OUT_OF_MEMORY).
 * Thread-safe as far as the program's data loader is.
 */
ember_status ember_backend_get_data(const ember_backend_init_ctx *ctx, const char *key,
                                    size_t key_len, ember_backend_data *out);

/** Gives back data from ember_backend_get_data(). Safe on a zeroed struct. */
void ember_backend_release_data(ember_backend_data *data);

/**
 * Packed weights kept under key by the method's weight cache on an earlier
 * load: `size` bytes, 64-byte aligned, read-only, valid as long as the
 * method. NULL when the method has no cache, the cache has no such bytes,
 * or what it has is not `size` bytes or not aligned; then pack, and offer
 * the result with ember_backend_add_packed(). A key must name everything
 * the packed bytes depend on (see ember_weight_cache).
 */
const void *ember_backend_find_packed(const ember_backend_init_ctx *ctx, const void *key,
                                      size_t key_len, size_t size);

/** Offers packed weights to the method's weight cache (a no-op without
 *  one); the cache copies what it keeps. */
void ember_backend_add_packed(const ember_backend_init_ctx *ctx, const void *key, size_t key_len,
                              const void *data, size_t size);

/**
 * Whether the runtime wants the running delegate's own events: true only
 * inside execute(), on the thread that called it, while the method has an
 * event tracer that records profiling events. A cheap check (a thread-local
 * read) to skip reading the clock when nobody records; always false in
 * builds without the event tracer.
 */
bool ember_backend_tracing(void);

/**
 * Reports one event from inside a delegate's execute() (a node, a stage),
 * recorded under the delegate call's chain and instruction: the ETDump
 * ProfileEvent the ExecuTorch Inspector shows as a delegated op. Identify it
 * by the node's debug handle (the one the compiler put in the payload) or,
 * when it has none, by a string id. Call it from the thread that runs
 * execute(), not from worker threads.
 * @param[in] name         what ran, e.g. the node type ("FullyConnected"); may be NULL
 * @param[in] debug_handle the node's debug handle, or -1 when debug_id is used
 *                         (handles above INT32_MAX are recorded as -1)
 * @param[in] debug_id     string identifier when there is no handle; NULL otherwise
 * @param[in] start_ns     ember_ticks_ns() when it started
 * @param[in] end_ns       ember_ticks_ns() when it ended
 * @param[in] metadata     opaque bytes kept with the event (copied); may be NULL
 * @return EMBER_OK, also when not tracing (a no-op) or when the tracer's
 *         buffer is full (the tracer counts dropped events; see
 *         ember_event_tracer_status()).
 * Never allocates.
 */
ember_status ember_backend_log_event(const char *name, int64_t debug_handle, const char *debug_id,
                                     uint64_t start_ns, uint64_t end_ns, const void *metadata,
                                     size_t metadata_len);

/**
 * Whether the runtime wants the running delegate's intermediate outputs:
 * true only inside execute(), on the thread that called it, while the
 * method's event tracer records debug outputs (EMBER_TRACE_DEBUG_OUTPUTS or
 * EMBER_TRACE_DEBUG_STATS). Always false in builds without the event tracer.
 */
bool ember_backend_tracing_outputs(void);

/**
 * Reports the output of one node inside a delegate, right after the node
 * ran: the tracer copies the tensor (or its fingerprint) into its debug
 * buffer as an ETDump DebugEvent under the delegate call's instruction,
 * identified like ember_backend_log_event() (the node's debug handle, or a
 * string id). The tensor describes the delegate's own buffer in the layout
 * the delegate keeps it (e.g. channels-last sizes for an NHWC value); only
 * data, dtype, dim, sizes, strides, numel and nbytes are read, and the data
 * must be nbytes contiguous bytes. Call it from the thread that runs
 * execute().
 * @return EMBER_OK, also when not tracing outputs (a no-op) or when the
 *         tracer's buffers are full (counted as dropped events);
 *         EMBER_ERR_INVALID_ARGUMENT for a NULL tensor while tracing.
 * Never allocates.
 */
ember_status ember_backend_log_output(const char *name, int64_t debug_handle,
                                      const char *debug_id, const ember_tensor *tensor);

/**
 * Asks for `bytes` of workspace shared by all the method's delegates: memory
 * a delegate may use as it likes during its execute(), whose contents do not
 * survive to the next delegate call (intermediate values, per-node scratch).
 * Delegates run one after the other, so the method allocates one region, as
 * large as the largest request and aligned to the strictest, once every
 * delegate is initialized; a model cut into many delegates then pays for
 * one delegate's intermediates, not for all of them. Call it from init().
 * *base receives the address of the method's pointer to that region: it is
 * NULL during init and set before the first execute(), so read it in
 * execute(). align must be a power of two.
 * @return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT.
 */
ember_status ember_backend_request_workspace(const ember_backend_init_ctx *ctx, size_t bytes,
                                             size_t align, void *const **base);

/** A backend. Fill in struct_size = sizeof(ember_backend). */
typedef struct ember_backend {
    size_t struct_size;
    const char *id;
    /** Whether the backend can run here (hardware present, ...). */
    bool (*is_available)(void);
    /**
     * Prepares a delegate. On failure, set a message with
     * ember_backend_fail() and return its status.
     */
    ember_status (*init)(const ember_backend_init_ctx *ctx, const void *payload,
                         size_t payload_size, const ember_compile_spec *specs,
                         size_t num_specs, void **handle);
    /** Runs a delegate on its arguments (inputs, then outputs). */
    ember_status (*execute)(void *handle, ember_value **args, size_t nargs);
    /** Releases what init acquired outside the method allocator. May be NULL. */
    void (*destroy)(void *handle);
} ember_backend;

/**
 * Registers a backend (not copied: it must outlive its use). A later
 * registration with the same id replaces the earlier one.
 * @return EMBER_OK, EMBER_ERR_TABLE_FULL, EMBER_ERR_INVALID_ARGUMENT.
 */
ember_status ember_backend_register(const ember_backend *backend);

/**
 * Registers ember's CPU backend under the id "XnnpackBackend": it runs the
 * payloads of ExecuTorch's XNNPACK delegate (float32 subgraphs) on ember's
 * own optimized kernels, splitting work over the method's thread pool.
 * @return as ember_backend_register().
 */
ember_status ember_xnnpack_backend_register(void);

/**
 * Registers ember's GPU backend under the id "VulkanBackend": it runs the
 * payloads of ExecuTorch's Vulkan delegate (VK00 graphs) with its own
 * compute shaders on the first Vulkan device with a compute queue
 * (discrete GPU, then integrated, virtual, CPU). In builds without Vulkan
 * it registers a backend whose is_available() is false.
 * @return as ember_backend_register().
 */
ember_status ember_vulkan_backend_register(void);

/**
 * The name of the Vulkan device VulkanBackend runs on (e.g. "llvmpipe
 * (LLVM 15.0.7, 256 bits)"), or NULL where there is none or the build has
 * no Vulkan. The first call opens the device to find out. Thread-safe.
 */
const char *ember_vulkan_device_name(void);

/** What VulkanBackend holds on its device (ember_vulkan_info_get()). */
typedef struct ember_vulkan_info {
    /** The device's name, as ember_vulkan_device_name(). */
    const char *device;
    /** Whether delegates loaded now hold float16 tensors as 16-bit floats on
     *  the device (it has storageBuffer16BitAccess, and EMBER_VULKAN_STORAGE
     *  is not "float32"); else they are widened to 32-bit. */
    bool float16_storage;
    /** Bytes of the weights buffers of the Vulkan delegates loaded now. */
    size_t weights_bytes;
    /** Bytes of their arenas (inputs, outputs and intermediates). */
    size_t arena_bytes;
    /** Vulkan delegates loaded now. */
    size_t delegates;
    /** Vulkan objects VulkanBackend holds now: the device context's
     *  (instance, device, shader modules, layouts, pipeline cache, cached
     *  pipelines) and the
     *  loaded delegates' (buffers, memory, descriptor and command pools,
     *  fences, query pools). */
    size_t objects;
    /** Compute pipelines in the context's cache (some may be unused). */
    size_t pipelines;
    /** Vulkan instances VulkanBackend has made since the process started:
     *  one, unless ember_vulkan_device_release() let one go. */
    size_t instances_made;
    /** Bytes of pipeline cache data the device context took from the
     *  pipeline cache file (ember_vulkan_set_pipeline_cache_file()) when it
     *  was made, and from files named since: 0 where there was none or it
     *  was ignored (damaged, cut short, or from another device or driver). */
    size_t pipeline_cache_loaded;
} ember_vulkan_info;

/**
 * Fills *info (zeroed first). The first call opens the device. Thread-safe.
 * @return EMBER_OK, or EMBER_ERR_BACKEND_MISSING where there is no Vulkan
 *         device or the build has no Vulkan.
 */
ember_status ember_vulkan_info_get(ember_vulkan_info *info);

/**
 * Destroys VulkanBackend's device context: its Vulkan instance and device,
 * shader modules and cached pipelines. The context is made on first use and
 * stays when the last Vulkan delegate is destroyed, so that loading the next
 * program neither loads the driver again nor makes a new device (both cost
 * far more than loading a program, and some drivers keep memory for every
 * load). Call this to give the driver's memory and threads back; the next
 * Vulkan delegate makes the context anew. Thread-safe.
 * @return EMBER_OK (also where there is no context, or the build has no
 *         Vulkan); EMBER_ERR_INVALID_STATE, releasing nothing, while a
 *         Vulkan delegate is loaded.
 */
ember_status ember_vulkan_device_release(void);

/**
 * Names the file that keeps VulkanBackend's compiled pipelines between
 * processes, so that a program's second load in a new process skips most of
 * the driver's shader compilation. The device context reads it when it is
 * made (the first Vulkan load, or the first after
 * ember_vulkan_device_release()); a file named while the context exists is
 * read into it at once. The context writes it back where it holds pipelines
 * the file lacks: after a delegate's init that compiled pipelines, and at
 * ember_vulkan_device_release(). Writes go to a temporary file next to it
 * (path + ".<pid>.tmp") that is renamed over it when whole, so the file is
 * never left half-written. A file that is damaged, cut short, or made by
 * another device or driver version is ignored (and replaced at the next
 * write); failing to write it is logged as a warning and fails nothing.
 * Until this is called, the context takes the path from the environment
 * variable EMBER_VULKAN_PIPELINE_CACHE when it is made; once it is called,
 * the environment is not read again. Call it before or between loads.
 * Thread-safe.
 * @param[in] path  the file (copied), or NULL or "" for none: pipelines are
 *                  then cached in memory only, for the context's lifetime.
 * @return EMBER_OK (also where the file is missing or ignored, or the build
 *         has no Vulkan); EMBER_ERR_INVALID_ARGUMENT, changing nothing,
 *         where path has 1024 bytes or more; EMBER_ERR_OUT_OF_MEMORY or
 *         EMBER_ERR_DELEGATE_FAILED where the context exists and the driver
 *         failed to take the file's pipelines (the path is set all the same).
 */
ember_status ember_vulkan_set_pipeline_cache_file(const char *path);

/** Removes every registered backend. */
void ember_backends_clear(void);

/** Finds a backend by id (len bytes); NULL if none. */
const ember_backend *ember_backend_find(const char *id, size_t len);

/**
 * Records a delegate failure message (printf-style) and returns status.
 * Name the failing node by its debug handle where there is one.
 */
ember_status ember_backend_fail(ember_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/**
 * Records that a delegate's payload is malformed and returns
 * EMBER_ERR_INVALID_PROGRAM: the message is "<backend> payload: <detail>",
 * the detail printf-style. The payload readers report every defect they
 * find this way, so a bad file always fails cleanly with its backend named.
 */
ember_status ember_backend_bad_payload(const char *backend, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/**
 * Like ember_backend_fail, and also records the debug handle of the node
 * that failed (the handle the compiler gave the node; backends receive it in
 * their payload), readable with ember_last_error_debug_handle() after the
 * method's error returns. A negative handle records none.
 */
ember_status ember_backend_fail_at(ember_status status, int64_t debug_handle, const char *fmt,
                                   ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif /* EMBER_BACKEND_H */
