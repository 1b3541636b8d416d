/*
 * ember/module.h — the module helper: run a model file in a few lines.
 *
 * A module owns everything between a file name and a runnable method: the
 * data loader (a memory map of the file, or a file loader where this build
 * has no mmap), the verified program, and each method, loaded on first use
 * with memory from the platform heap:
 *
 *     ember_module *mod;
 *     ember_method *m;
 *     const ember_value *out;
 *     ember_module_load("model.pte", &mod);
 *     ember_module_method(mod, "forward", &m);
 *     ember_method_set_input_tensor(m, 0, EMBER_FLOAT32, sizes, 2, x, sizeof x);
 *     ember_method_execute(m);
 *     ember_method_output(m, 0, &out);
 *     ember_module_destroy(mod);
 *
 * Methods run on a thread pool the module owns, one thread per CPU core by
 * default (ember_module_load_with() sets the count; 1 runs everything on
 * the calling thread).
 * The first successful ember_module_load() in a process registers the
 * portable kernel library (ember_portable_kernels_register()), the optimized
 * kernels above it (ember_optimized_kernels_register()) and the CPU backend
 * (ember_xnnpack_backend_register()); later loads do not register them
 * again. Kernel tables registered after that first load
 * take precedence over the built-in kernels, so register custom operators
 * or overrides after it. After ember_kernels_clear(), register the kernels
 * you need yourself.
 *
 * The module helper allocates (from the platform heap, see platform.h); use
 * the core API in ember.h where every byte must come from the caller.
 */
#ifndef EMBER_MODULE_H
#define EMBER_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"
#include "ember/weight_cache.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A loaded program file and its methods (opaque). */
typedef struct ember_module ember_module;

/**
 * Opens a `.pte` file, loads and verifies its program, and (the first time
 * in the process) registers the portable kernels. Methods are not loaded
 * yet: ember_module_method() loads each on first use.
 *
 * The file is memory-mapped (ember_mmap_loader_open()); where this build has
 * no mmap it is read with the file loader instead.
 *
 * @param[in]  path  file name; not kept after the call
 * @param[out] out   the module on success (owned by the caller, release it
 *                   with ember_module_destroy()); untouched on failure
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (path or out NULL);
 *         EMBER_ERR_IO (cannot open, stat or map the file);
 *         EMBER_ERR_OUT_OF_MEMORY (the platform heap is missing or full);
 *         any status of ember_program_load() (EMBER_ERR_TRUNCATED,
 *         EMBER_ERR_BAD_IDENTIFIER, EMBER_ERR_INVALID_PROGRAM, ...);
 *         any status of ember_portable_kernels_register().
 *         On failure ember_last_error() says what went wrong.
 * Allocates from the platform heap. Not thread-safe the first time it is
 * called (kernel registration); later calls may run on any thread.
 */
ember_status ember_module_load(const char *path, ember_module **out);

/** Options for ember_module_load_with(); zero them, then set struct_size. */
typedef struct ember_module_options {
    size_t struct_size;
    /** Threads the methods' kernels and delegates may use, the caller's
     * included: 0 for one per online CPU core, 1 for no thread pool. */
    size_t num_threads;
    /**
     * `.ptd` files holding what the program keeps outside itself (weights
     * exported as external constants, delegate data), opened as data maps
     * (ember_data_map_open(), memory-mapped like the program) and given to
     * every method in this order; NULL with num_data_files 0 for none. The
     * paths are not kept after the call. (Added after num_threads: a
     * struct_size that ends before this field means none.)
     */
    const char *const *data_files;
    size_t num_data_files;
    /**
     * A directory for the weight cache (ember/weight_cache.h): the packed
     * weights of this program are kept in "<dir>/<model>-<hash>.ewc", named
     * after the model file and ember_program_hash(); written on the first
     * load, mapped on later ones. NULL for none. A cache that cannot be
     * opened or written does not fail the load (see
     * ember_module_weight_cache_info()). (Added after num_data_files.)
     */
    const char *weight_cache_dir;
    /** Write the cache only when it would hold at least this many bytes
     *  of packed weights (0: always); smaller models pack in milliseconds. */
    uint64_t weight_cache_min_bytes;
} ember_module_options;

/**
 * ember_module_load() with options; options NULL is the same as
 * ember_module_load(). The module's thread pool (if any) is created here
 * and destroyed with the module; its methods must not run at the same time
 * as each other. Data files are opened and verified here and closed with
 * the module.
 * @return as ember_module_load(), and EMBER_ERR_INVALID_ARGUMENT for a wrong
 *         struct_size or a NULL data file path, EMBER_ERR_OUT_OF_MEMORY if
 *         the threads cannot start; for a data file, any status of
 *         ember_data_map_open() (the message names the file).
 */
ember_status ember_module_load_with(const char *path, const ember_module_options *options,
                                    ember_module **out);

/**
 * Returns the named method, loading it on first use with platform-heap
 * memory (ember_method_load() with NULL memory). Later calls with the same
 * name return the same method, with its inputs and state as the last run
 * left them.
 *
 * @param[in,out] module the module
 * @param[in]     name   method name, e.g. "forward"
 * @param[out]    out    the method; owned by the module, valid until
 *                       ember_module_destroy(); use it from one thread at a
 *                       time
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument);
 *         any status of ember_method_load(): EMBER_ERR_NOT_FOUND (no such
 *         method), EMBER_ERR_OPERATOR_MISSING, EMBER_ERR_BACKEND_MISSING,
 *         EMBER_ERR_DELEGATE_FAILED, EMBER_ERR_OUT_OF_MEMORY, EMBER_ERR_IO.
 *         A method that failed to load is tried again on the next call.
 * Allocates on first use of a name. Not thread-safe for one module.
 */
ember_status ember_module_method(ember_module *module, const char *name, ember_method **out);

/**
 * The module's program, for its method names and meta
 * (ember_program_method_count(), ember_program_input_meta(), ...).
 *
 * @param[in] module the module
 * @return the program, owned by the module and valid until
 *         ember_module_destroy(); NULL if module is NULL.
 * Never allocates.
 */
const ember_program *ember_module_program(const ember_module *module);

/**
 * What the module's weight cache did (ember_module_options.weight_cache_dir):
 * mapped, written, or not written and why. A module without one reports
 * EMBER_WEIGHT_CACHE_OFF (message: why it could not open, or ""). The
 * strings stay valid until ember_module_destroy(). Never allocates.
 */
void ember_module_weight_cache_info(const ember_module *module, ember_weight_cache_info *out);

/**
 * Destroys every method the module loaded, then its program, then closes
 * the file. Pointers from ember_module_method(), ember_module_program() and
 * ember_method_output() become invalid. NULL is a no-op.
 *
 * @param[in] module the module, or NULL
 */
void ember_module_destroy(ember_module *module);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_MODULE_H */
