/*
 * Named data maps (`.ptd` files) and the one lookup that searches a
 * program's own named data and then its method's data maps.
 */
#ifndef EMBER_FORMAT_DATA_MAP_H
#define EMBER_FORMAT_DATA_MAP_H

#include "format/program.h"

struct ember_data_map {
    const ember_data_loader *loader;
    ember_heap_allocator heap;   /* used when no allocator was given */
    ember_buffer flatbuffer;     /* bytes [0, flatbuffer end), header included */
    fb_reader r;
    fb_table root;
    uint64_t file_size;
    uint64_t segment_base;
    uint64_t segment_data_size;
    fb_vec segments;             /* DataSegment tables */
    fb_vec named_data;           /* NamedData tables */
};

/* Where the bytes of a key are: an entry of a data map, or (map NULL) a
 * segment of the program. */
typedef struct named_ref {
    const ember_data_map *map;
    uint32_t index;              /* map entry, or program segment */
} named_ref;

/* Finds key (len bytes) in p's named data (p may be NULL), then in
 * maps[0..n). EMBER_ERR_NOT_FOUND with a message naming the key. */
ember_status named_find(const ember_program *p, const ember_data_map *const *maps, size_t n,
                        const char *key, size_t len, named_ref *out);

/* What the map (or program) says about a found key (verified at load). */
void named_info(const ember_program *p, const named_ref *ref, ember_data_info *info);

/* Loads the bytes of a found key; *loader is what releases them. */
ember_status named_load(const ember_program *p, const named_ref *ref, ember_segment_kind kind,
                        ember_buffer *out, const ember_data_loader **loader);

#endif /* EMBER_FORMAT_DATA_MAP_H */
