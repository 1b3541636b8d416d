/*
 * ember/weight_cache.h — a weight cache (ember_weight_cache, ember.h) kept
 * in one file per program: what the delegates pack on the first load is
 * written there, and later loads map the file and use the packed weights in
 * place, so they neither read the raw weights nor pack them again.
 *
 * The file is named by the caller (ember_module names it after the model
 * and ember_program_hash()) and records that hash: a file written for
 * another program is not used. Entries are found by the backends' keys,
 * which name the packed bytes' sources by content hash (see
 * ember_weight_cache). Weights a mapped file lacks (packed for another CPU,
 * or by a method it was not written for) are written with the file's own to
 * a new file that replaces it at the commit. A file that is not whole (wrong magic, version or
 * hash, a size or an entry out of range) is ignored and replaced. It is
 * written to a temporary name beside it and renamed when complete, so
 * another process never maps half a file; a cache that cannot be written
 * (a read-only directory, a full disk) costs nothing but the packing.
 *
 * File layout, little-endian: a 64-byte header ("EMBERWC1", version,
 * program hash, entry count, index offset and size, file size), the packed
 * bytes (each entry at a multiple of 64), then the index: one 32-byte
 * record per entry (data offset, data size, key offset, key length), sorted
 * by key, followed by the keys.
 *
 * POSIX builds (mmap); elsewhere open reports EMBER_ERR_NOT_SUPPORTED.
 * Allocates from the platform heap while open; not thread-safe.
 */
#ifndef EMBER_WEIGHT_CACHE_H
#define EMBER_WEIGHT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ember_file_weight_cache ember_file_weight_cache;

/** What became of a weight cache file. */
typedef enum ember_weight_cache_state {
    EMBER_WEIGHT_CACHE_OFF = 0,     /**< no cache (none asked for, or it could not open) */
    EMBER_WEIGHT_CACHE_MAPPED,      /**< a complete file was found and mapped */
    EMBER_WEIGHT_CACHE_PENDING,     /**< none found: collecting what is packed */
    EMBER_WEIGHT_CACHE_WRITTEN,     /**< none found: the packed weights were written */
    EMBER_WEIGHT_CACHE_NOT_WRITTEN, /**< none found, none written (see message) */
    EMBER_WEIGHT_CACHE_EXTENDED,    /**< a file was mapped, and the weights it lacked
                                         were written with its own to a new one */
    EMBER_WEIGHT_CACHE_MAPPED_ONLY  /**< a file was mapped; what it lacked could
                                         not be written (see message) */
} ember_weight_cache_state;

/** A report on a weight cache (ember_file_weight_cache_info()). */
typedef struct ember_weight_cache_info {
    ember_weight_cache_state state;
    const char *path;      /**< the file (valid while the cache is open), or NULL */
    size_t hits, misses;   /**< lookups answered from the file, and not */
    size_t entries;        /**< packed weights in the file (mapped or written) */
    uint64_t bytes;        /**< their bytes */
    size_t added;          /**< EXTENDED: entries the mapped file lacked */
    const char *message;   /**< why a file found was not used, or why none was
                                written; "" otherwise */
} ember_weight_cache_info;

/**
 * Opens the cache file `path` for the program whose ember_program_hash() is
 * program_hash: maps it if it is complete and for this program, otherwise
 * prepares to write a new one (nothing is created before the first add).
 * A commit writes it only if it would hold at least min_bytes of packed
 * weights (0: any).
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (NULL), EMBER_ERR_OUT_OF_MEMORY,
 *         EMBER_ERR_NOT_SUPPORTED (no mmap in this build). A missing or
 *         unusable file is not an error.
 */
ember_status ember_file_weight_cache_open(const char *path, uint64_t program_hash,
                                          uint64_t min_bytes, ember_file_weight_cache **out);

/** The cache to put in ember_method_options.weight_cache; valid until close. */
const ember_weight_cache *ember_file_weight_cache_get(ember_file_weight_cache *cache);

/**
 * Writes the file from what was added, when no complete file was found and
 * at least min_bytes were added, and renames it into place; when a file was
 * mapped and weights it lacked were added, writes them with its own to a new
 * file in its place (the mapping stays valid). Call it once the methods are
 * loaded; later adds are ignored. A failure to write is
 * reported by the state and message, not by a status: the methods run the
 * same from their own packed weights.
 */
void ember_file_weight_cache_commit(ember_file_weight_cache *cache);

/** Fills *out (a NULL cache reports EMBER_WEIGHT_CACHE_OFF). */
void ember_file_weight_cache_info(const ember_file_weight_cache *cache,
                                  ember_weight_cache_info *out);

/** Unmaps the file and frees the cache; a pending write is dropped. Methods
 *  that use its packed weights must be destroyed first. NULL is a no-op. */
void ember_file_weight_cache_close(ember_file_weight_cache *cache);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_WEIGHT_CACHE_H */
