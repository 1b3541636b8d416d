/*
 * File loader: pread into buffers from the platform heap, and mmap loader:
 * zero-copy views of one read-only mapping. POSIX builds only.
 */
#ifndef EMBER_PLATFORM_BAREMETAL
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include "core/internal.h"

/* Buffers for loaded data are aligned for any tensor element type and for
 * the constant segment's own alignment. */
#define LOAD_ALIGN 64

#ifndef EMBER_PLATFORM_BAREMETAL

static ember_status check_range(uint64_t file_size, uint64_t offset, size_t size) {
    if (offset > file_size || size > file_size - offset)
        return ember_set_error(EMBER_ERR_TRUNCATED,
                               "load of %zu bytes at offset %llu past end of %llu-byte file", size,
                               (unsigned long long)offset, (unsigned long long)file_size);
    return EMBER_OK;
}

static ember_status open_size(const char *path, int *fd, uint64_t *size) {
    if (path == NULL) return ember_set_error(EMBER_ERR_INVALID_ARGUMENT, "path is NULL");
    *fd = open(path, O_RDONLY);
    if (*fd < 0) return ember_set_error(EMBER_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return ember_set_error(EMBER_ERR_IO, "%s is not a regular file", path);
    }
    *size = (uint64_t)st.st_size;
    return EMBER_OK;
}

static ember_status file_size(void *ctx, uint64_t *out) {
    *out = ((const ember_file_loader *)ctx)->file_size;
    return EMBER_OK;
}

static ember_status file_load(void *ctx, uint64_t offset, size_t size, ember_segment_kind kind,
                              ember_buffer *out) {
    ember_file_loader *l = ctx;
    (void)kind;
    ember_status st = check_range(l->file_size, offset, size);
    if (st != EMBER_OK) return st;
    uint8_t *buf = ember_platform_alloc(size == 0 ? 1 : size, LOAD_ALIGN);
    if (buf == NULL)
        return ember_set_error(EMBER_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes to load", size);
    size_t done = 0;
    while (done < size) {
        ssize_t n = pread(l->fd, buf + done, size - done, (off_t)(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ember_platform_free(buf);
            return ember_set_error(EMBER_ERR_IO, "read of %zu bytes at offset %llu failed", size,
                                   (unsigned long long)offset);
        }
        done += (size_t)n;
    }
    out->data = buf;
    out->size = size;
    out->owner = buf;
    return EMBER_OK;
}

static void file_release(void *ctx, ember_buffer *buf) {
    (void)ctx;
    ember_platform_free(buf->owner);
    buf->owner = NULL;
    buf->data = NULL;
}

ember_status ember_file_loader_open(ember_file_loader *loader, const char *path) {
    loader->fd = -1;
    ember_status st = open_size(path, &loader->fd, &loader->file_size);
    if (st != EMBER_OK) return st;
    loader->base.struct_size = sizeof(ember_data_loader);
    loader->base.ctx = loader;
    loader->base.size = file_size;
    loader->base.load = file_load;
    loader->base.release = file_release;
    return EMBER_OK;
}

void ember_file_loader_close(ember_file_loader *loader) {
    if (loader->fd >= 0) close(loader->fd);
    loader->fd = -1;
}

static ember_status mmap_size(void *ctx, uint64_t *out) {
    *out = ((const ember_mmap_loader *)ctx)->file_size;
    return EMBER_OK;
}

static ember_status mmap_load(void *ctx, uint64_t offset, size_t size, ember_segment_kind kind,
                              ember_buffer *out) {
    const ember_mmap_loader *l = ctx;
    ember_status st = check_range(l->file_size, offset, size);
    if (st != EMBER_OK) return st;
    out->data = (const uint8_t *)l->map + offset;
    out->size = size;
    /* named data (delegate weights) is read once, packed, and given back:
     * release drops its pages (see mmap_release) */
    out->owner = kind == EMBER_SEGMENT_NAMED_DATA ? (void *)l : NULL;
    return EMBER_OK;
}

/* Gives back the pages of a named-data blob: a delegate has packed what it
 * keeps, so the file's copy need not stay resident. The mapping is private
 * and read-only, so a later read of those bytes (another delegate loading
 * the same key, a neighbouring segment sharing an edge page) faults them in
 * from the file again, unchanged; only pages wholly inside the blob are
 * dropped. */
static void mmap_release(void *ctx, ember_buffer *buf) {
    (void)ctx;
    if (buf->owner == NULL || buf->data == NULL) return;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t start = (uintptr_t)buf->data, end = start + buf->size;
    uintptr_t first = (start + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t last = end & ~((uintptr_t)page - 1);
    if (last > first) madvise((void *)first, last - first, MADV_DONTNEED);
}

ember_status ember_mmap_loader_open(ember_mmap_loader *loader, const char *path) {
    int fd;
    loader->map = NULL;
    ember_status st = open_size(path, &fd, &loader->file_size);
    if (st != EMBER_OK) return st;
    if (loader->file_size > SIZE_MAX) {
        close(fd);
        return ember_set_error(EMBER_ERR_IO, "%s is too large to map", path);
    }
    if (loader->file_size > 0) {
        void *map = mmap(NULL, (size_t)loader->file_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            close(fd);
            return ember_set_error(EMBER_ERR_IO, "cannot map %s: %s", path, strerror(errno));
        }
        loader->map = map;
    }
    close(fd);
    loader->base.struct_size = sizeof(ember_data_loader);
    loader->base.ctx = loader;
    loader->base.size = mmap_size;
    loader->base.load = mmap_load;
    loader->base.release = mmap_release;
    return EMBER_OK;
}

void ember_mmap_loader_close(ember_mmap_loader *loader) {
    if (loader->map != NULL) munmap(loader->map, (size_t)loader->file_size);
    loader->map = NULL;
}

#else /* EMBER_PLATFORM_BAREMETAL */

ember_status ember_file_loader_open(ember_file_loader *loader, const char *path) {
    (void)path;
    loader->fd = -1;
    return ember_set_error(EMBER_ERR_NOT_SUPPORTED, "no file system in this build");
}

void ember_file_loader_close(ember_file_loader *loader) { (void)loader; }

ember_status ember_mmap_loader_open(ember_mmap_loader *loader, const char *path) {
    (void)path;
    loader->map = NULL;
    return ember_set_error(EMBER_ERR_NOT_SUPPORTED, "no mmap in this build");
}

void ember_mmap_loader_close(ember_mmap_loader *loader) { (void)loader; }

#endif
