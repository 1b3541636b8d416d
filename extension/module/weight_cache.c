/*
 * A weight cache in one file per program (ember/weight_cache.h): mapped
 * when a complete file for the program is there, written beside the packing
 * otherwise. What a mapped file lacks (a weight packed for another CPU, a
 * method loaded for the first time) is written to a new file with what the
 * old one holds, renamed into its place at the commit; the old mapping
 * stays valid for the methods that use it.
 */
#ifndef EMBER_PLATFORM_BAREMETAL
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include "ember/weight_cache.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/platform.h"

#define WC_MAGIC "EMBERWC1"
#define WC_VERSION 1u
#define WC_HEADER 64u
#define WC_RECORD 32u
#define WC_ALIGN 64u

/* One entry: where its bytes are in the file, and its key (in the mapped
 * file's index, or a copy of the caller's: owned). */
typedef struct wc_entry {
    uint64_t offset, size;
    const uint8_t *key;
    size_t key_len;
    bool owned;
} wc_entry;

struct ember_file_weight_cache {
    ember_weight_cache iface;
    char *path;
    uint64_t program_hash, min_bytes;
    ember_weight_cache_state state;
    size_t hits, misses;
    char message[256];
    /* mapped: the file and its entries, sorted by key */
    const uint8_t *map;
    size_t map_size;
    wc_entry *entries;
    size_t count;
    uint64_t bytes;
    /* writing: the temporary file, its next free offset, and the entries
     * written to it (then, at the commit, the index of the new file) */
    int fd;
    char *tmp_path;
    uint64_t end;
    wc_entry *wr;
    size_t n_wr, cap_wr;
    uint64_t wr_bytes;
    size_t added; /* entries a mapped file lacked, written to the new one */
    bool committed; /* later adds are ignored */
};

static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int key_cmp(const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c != 0) return c;
    return na < nb ? -1 : na > nb ? 1 : 0;
}

static char *dup_str(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    if (n > SIZE_MAX - m - 1) return NULL;
    char *d = ember_platform_alloc(n + m + 1, 1);
    if (d == NULL) return NULL;
    memcpy(d, s, n);
    memcpy(d + n, suffix, m + 1);
    return d;
}

static void set_message(ember_file_weight_cache *c, const char *msg) {
    snprintf(c->message, sizeof c->message, "%s", msg);
}

#ifndef EMBER_PLATFORM_BAREMETAL

/* Checks the mapped file and indexes its entries; false (with a message)
 * if it is not a complete cache for this program. */
static bool index_file(ember_file_weight_cache *c) {
    const uint8_t *m = c->map;
    const uint64_t size = c->map_size;
    if (size < WC_HEADER || memcmp(m, WC_MAGIC, 8) != 0) {
        set_message(c, "not an ember weight cache");
        return false;
    }
    const uint32_t version = (uint32_t)get64(m + 8);
    if (version != WC_VERSION) {
        set_message(c, "written by another version of ember");
        return false;
    }
    if (get64(m + 16) != c->program_hash) {
        set_message(c, "written for another program");
        return false;
    }
    const uint64_t count = get64(m + 24), index_at = get64(m + 32), index_bytes = get64(m + 40);
    if (get64(m + 48) != size || index_at < WC_HEADER || index_at > size ||
        index_bytes > size - index_at || count > index_bytes / WC_RECORD) {
        set_message(c, "truncated or damaged (its header does not match its size)");
        return false;
    }
    if (count > SIZE_MAX / sizeof(wc_entry)) return false;
    c->entries = ember_platform_alloc(count > 0 ? (size_t)count * sizeof(wc_entry) : 1,
                                      _Alignof(wc_entry));
    if (c->entries == NULL) {
        set_message(c, "too large to index here");
        return false;
    }
    const uint8_t *rec = m + index_at;
    const uint64_t keys_at = index_at + count * WC_RECORD, index_end = index_at + index_bytes;
    for (uint64_t i = 0; i < count; i++, rec += WC_RECORD) {
        wc_entry *e = &c->entries[i];
        e->offset = get64(rec);
        e->size = get64(rec + 8);
        const uint64_t key_at = get64(rec + 16), key_len = get64(rec + 24);
        const bool ok = e->offset % WC_ALIGN == 0 && e->offset >= WC_HEADER &&
                        e->offset <= index_at && e->size <= index_at - e->offset &&
                        key_len > 0 && key_at >= keys_at && key_at <= index_end &&
                        key_len <= index_end - key_at;
        if (!ok) {
            set_message(c, "damaged (an entry lies outside the file)");
            return false;
        }
        e->key = m + key_at;
        e->key_len = (size_t)key_len;
        if (i > 0 && key_cmp(e[-1].key, e[-1].key_len, e->key, e->key_len) >= 0) {
            set_message(c, "damaged (its index is not in order)");
            return false;
        }
        c->bytes += e->size;
    }
    c->count = (size_t)count;
    return true;
}

/* Maps path if it is a complete cache for the program. */
static bool map_file(ember_file_weight_cache *c) {
    int fd = open(c->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false; /* none yet */
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
              (uint64_t)st.st_size <= SIZE_MAX;
    void *m = MAP_FAILED;
    if (ok) m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        set_message(c, "unreadable (it cannot be mapped)");
        return false;
    }
    c->map = m;
    c->map_size = (size_t)st.st_size;
    if (index_file(c)) return true;
    munmap((void *)c->map, c->map_size);
    c->map = NULL;
    c->map_size = 0;
    ember_platform_free(c->entries);
    c->entries = NULL;
    c->count = 0;
    c->bytes = 0;
    return false;
}

/* Creates the directories above path that are missing (mkdir -p); what
 * fails shows when the file is created. */
static void make_parents(const char *path) {
    char dir[4096];
    const size_t n = strlen(path);
    if (n >= sizeof dir) return;
    memcpy(dir, path, n + 1);
    for (size_t i = 1; i < n; i++) {
        if (dir[i] != '/') continue;
        dir[i] = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return;
        dir[i] = '/';
    }
}

static bool write_all(int fd, const void *data, size_t n, uint64_t at) {
    const uint8_t *p = data;
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
        at += (uint64_t)w;
    }
    return true;
}

/* Gives up writing: the temporary file goes, the message says why (NULL:
 * state and message stay). A mapped file stays mapped (and is not
 * extended). */
static void abandon(ember_file_weight_cache *c, const char *why) {
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
        unlink(c->tmp_path);
    }
    for (size_t i = 0; i < c->n_wr; i++)
        if (c->wr[i].owned) ember_platform_free((void *)c->wr[i].key);
    ember_platform_free(c->wr);
    c->wr = NULL;
    c->n_wr = c->cap_wr = 0;
    c->wr_bytes = 0;
    c->added = 0;
    if (why != NULL) {
        if (c->state == EMBER_WEIGHT_CACHE_PENDING) c->state = EMBER_WEIGHT_CACHE_NOT_WRITTEN;
        if (c->state == EMBER_WEIGHT_CACHE_MAPPED) c->state = EMBER_WEIGHT_CACHE_MAPPED_ONLY;
        snprintf(c->message, sizeof c->message, "%s", why);
    }
}

/* Appends an entry to the written list; false when out of memory. */
static bool wr_push(ember_file_weight_cache *c, wc_entry e) {
    if (c->n_wr == c->cap_wr) {
        const size_t cap = c->cap_wr ? 2 * c->cap_wr : 64;
        wc_entry *grown = cap <= SIZE_MAX / sizeof *grown
                              ? ember_platform_alloc(cap * sizeof *grown, _Alignof(wc_entry))
                              : NULL;
        if (grown == NULL) return false;
        if (c->n_wr > 0) memcpy(grown, c->wr, c->n_wr * sizeof *grown);
        ember_platform_free(c->wr);
        c->wr = grown;
        c->cap_wr = cap;
    }
    c->wr[c->n_wr++] = e;
    c->wr_bytes += e.size;
    return true;
}

/* Writes size bytes at the next 64-byte offset of the temporary file
 * (created on the first write); false (abandoned, with a message) on
 * failure. */
static bool wr_data(ember_file_weight_cache *c, const void *data, uint64_t size, uint64_t *at) {
    if (c->fd < 0) {
        make_parents(c->tmp_path);
        c->fd = open(c->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (c->fd < 0) {
            char why[200];
            snprintf(why, sizeof why, "cannot create it: %s", strerror(errno));
            abandon(c, why);
            return false;
        }
        c->end = WC_HEADER;
    }
    *at = (c->end + WC_ALIGN - 1) / WC_ALIGN * WC_ALIGN;
    if (size > SIZE_MAX || !write_all(c->fd, data, (size_t)size, *at)) {
        char why[200];
        snprintf(why, sizeof why, "cannot write it: %s", strerror(errno));
        abandon(c, why);
        return false;
    }
    c->end = *at + size;
    return true;
}

static const void *wc_find(void *ctx, const void *key, size_t key_len, size_t size) {
    ember_file_weight_cache *c = ctx;
    if (c->state != EMBER_WEIGHT_CACHE_MAPPED && c->state != EMBER_WEIGHT_CACHE_MAPPED_ONLY)
        return NULL;
    size_t lo = 0, hi = c->count;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const wc_entry *e = &c->entries[mid];
        const int cmp = key_cmp(e->key, e->key_len, key, key_len);
        if (cmp == 0) {
            if (e->size != size) break;
            c->hits++;
            return c->map + e->offset;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    c->misses++;
    return NULL;
}

static void wc_add(void *ctx, const void *key, size_t key_len, const void *data, size_t size) {
    ember_file_weight_cache *c = ctx;
    if (c->committed ||
        (c->state != EMBER_WEIGHT_CACHE_PENDING && c->state != EMBER_WEIGHT_CACHE_MAPPED))
        return;
    for (size_t i = 0; i < c->n_wr; i++) /* one weight packed twice is kept once */
        if (key_cmp(c->wr[i].key, c->wr[i].key_len, key, key_len) == 0) return;
    uint8_t *key_copy = ember_platform_alloc(key_len, 1);
    uint64_t at;
    if (key_copy == NULL) {
        abandon(c, "no memory for its index");
        return;
    }
    if (!wr_data(c, data, size, &at)) {
        ember_platform_free(key_copy);
        return;
    }
    memcpy(key_copy, key, key_len);
    if (!wr_push(c, (wc_entry){at, size, key_copy, key_len, true})) {
        ember_platform_free(key_copy);
        abandon(c, "no memory for its index");
        return;
    }
    if (c->state == EMBER_WEIGHT_CACHE_MAPPED) c->added++;
}

static int entry_order(const void *a, const void *b) {
    const wc_entry *x = a, *y = b;
    return key_cmp(x->key, x->key_len, y->key, y->key_len);
}

/* A mapped file's entries that the new one keeps (those not packed again
 * under the same key), copied after what was added. */
static bool copy_mapped(ember_file_weight_cache *c) {
    const size_t n_new = c->n_wr;
    for (size_t i = 0; i < c->count; i++) {
        const wc_entry *e = &c->entries[i];
        bool again = false;
        for (size_t j = 0; j < n_new && !again; j++)
            again = key_cmp(c->wr[j].key, c->wr[j].key_len, e->key, e->key_len) == 0;
        if (again) continue;
        uint64_t at;
        if (!wr_data(c, c->map + e->offset, e->size, &at)) return false;
        if (!wr_push(c, (wc_entry){at, e->size, e->key, e->key_len, false})) {
            abandon(c, "no memory for its index");
            return false;
        }
    }
    return true;
}

void ember_file_weight_cache_commit(ember_file_weight_cache *c) {
    if (c == NULL || c->committed) return;
    c->committed = true;
    const bool extend = c->state == EMBER_WEIGHT_CACHE_MAPPED && c->n_wr > 0;
    if (c->state != EMBER_WEIGHT_CACHE_PENDING && !extend) return;
    if (!extend && (c->n_wr == 0 || c->wr_bytes < c->min_bytes)) {
        char why[160];
        if (c->n_wr == 0)
            snprintf(why, sizeof why, "no delegate packed weights it could keep");
        else
            snprintf(why, sizeof why, "%.1f MiB of packed weights, under the %.1f MiB worth keeping",
                     (double)c->wr_bytes / 1048576.0, (double)c->min_bytes / 1048576.0);
        abandon(c, why);
        return;
    }
    if (extend && !copy_mapped(c)) return;
    qsort(c->wr, c->n_wr, sizeof *c->wr, entry_order);
    /* the index: records, then the keys */
    uint64_t keys = 0;
    for (size_t i = 0; i < c->n_wr; i++) keys += c->wr[i].key_len;
    const uint64_t index_at = c->end, records = (uint64_t)c->n_wr * WC_RECORD;
    const uint64_t index_bytes = records + keys;
    uint8_t *index = index_bytes <= SIZE_MAX ? ember_platform_alloc((size_t)index_bytes, 8) : NULL;
    if (index == NULL) {
        abandon(c, "no memory for its index");
        return;
    }
    uint64_t key_at = index_at + records;
    for (size_t i = 0; i < c->n_wr; i++) {
        const wc_entry *e = &c->wr[i];
        uint8_t *rec = index + i * WC_RECORD;
        put64(rec, e->offset);
        put64(rec + 8, e->size);
        put64(rec + 16, key_at);
        put64(rec + 24, e->key_len);
        memcpy(index + (key_at - index_at), e->key, e->key_len);
        key_at += e->key_len;
    }
    uint8_t header[WC_HEADER];
    memset(header, 0, sizeof header);
    memcpy(header, WC_MAGIC, 8);
    put64(header + 8, WC_VERSION);
    put64(header + 16, c->program_hash);
    put64(header + 24, c->n_wr);
    put64(header + 32, index_at);
    put64(header + 40, index_bytes);
    put64(header + 48, index_at + index_bytes);
    bool ok = write_all(c->fd, index, (size_t)index_bytes, index_at) &&
              write_all(c->fd, header, sizeof header, 0);
    ember_platform_free(index);
    ok = close(c->fd) == 0 && ok;
    c->fd = -1;
    if (!ok || rename(c->tmp_path, c->path) != 0) {
        char why[200];
        snprintf(why, sizeof why, "cannot write it: %s", strerror(errno));
        unlink(c->tmp_path);
        abandon(c, why);
        return;
    }
    c->state = extend ? EMBER_WEIGHT_CACHE_EXTENDED : EMBER_WEIGHT_CACHE_WRITTEN;
    if (extend)
        snprintf(c->message, sizeof c->message, "%zu packed weight%s it lacked added", c->added,
                 c->added == 1 ? "" : "s");
}

ember_status ember_file_weight_cache_open(const char *path, uint64_t program_hash,
                                          uint64_t min_bytes, ember_file_weight_cache **out) {
    if (path == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "weight cache: NULL argument");
    *out = NULL;
    ember_file_weight_cache *c = ember_platform_alloc(sizeof *c, _Alignof(ember_file_weight_cache));
    if (c == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "weight cache: no memory");
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->program_hash = program_hash;
    c->min_bytes = min_bytes;
    char suffix[48];
    snprintf(suffix, sizeof suffix, ".%ld.tmp", (long)getpid());
    c->path = dup_str(path, "");
    c->tmp_path = dup_str(path, suffix);
    if (c->path == NULL || c->tmp_path == NULL) {
        ember_file_weight_cache_close(c);
        return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "weight cache: no memory");
    }
    c->iface.ctx = c;
    c->iface.find = wc_find;
    c->iface.add = wc_add;
    c->state = map_file(c) ? EMBER_WEIGHT_CACHE_MAPPED : EMBER_WEIGHT_CACHE_PENDING;
    *out = c;
    return EMBER_OK;
}

void ember_file_weight_cache_close(ember_file_weight_cache *c) {
    if (c == NULL) return;
    abandon(c, NULL); /* a pending write and its entries go */
    if (c->map != NULL) munmap((void *)c->map, c->map_size);
    ember_platform_free(c->entries);
    ember_platform_free(c->path);
    ember_platform_free(c->tmp_path);
    ember_platform_free(c);
}

#else /* EMBER_PLATFORM_BAREMETAL */

ember_status ember_file_weight_cache_open(const char *path, uint64_t program_hash,
                                          uint64_t min_bytes, ember_file_weight_cache **out) {
    (void)path, (void)program_hash, (void)min_bytes;
    if (out != NULL) *out = NULL;
    return ember_error_set(EMBER_ERR_NOT_SUPPORTED, "weight cache: no files in this build");
}

void ember_file_weight_cache_commit(ember_file_weight_cache *c) { (void)c; }

void ember_file_weight_cache_close(ember_file_weight_cache *c) { (void)c; }

#endif

const ember_weight_cache *ember_file_weight_cache_get(ember_file_weight_cache *c) {
    return c != NULL ? &c->iface : NULL;
}

void ember_file_weight_cache_info(const ember_file_weight_cache *c, ember_weight_cache_info *out) {
    if (out == NULL) return;
    memset(out, 0, sizeof *out);
    out->message = "";
    if (c == NULL) return;
    out->state = c->state;
    out->path = c->path;
    out->hits = c->hits;
    out->misses = c->misses;
    const bool written =
        c->state == EMBER_WEIGHT_CACHE_WRITTEN || c->state == EMBER_WEIGHT_CACHE_EXTENDED;
    out->entries = written ? c->n_wr : c->count;
    out->bytes = written ? c->wr_bytes : c->bytes;
    out->added = c->added;
    out->message = c->message;
}
