/*
 * A strict .npy reader and writer (format versions 1.0, 2.0, 3.0).
 *
 * The file is untrusted input: the header is parsed by hand (no eval), every
 * count is checked for overflow, and the data must fill the file exactly.
 */
#include "npy.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char k_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* Supported element types. One-byte types are written with '|' by NumPy;
 * the reader also accepts '<' for them. */
static const struct npy_type {
    const char *descr;
    int dtype;
    size_t size;
} k_types[] = {
    {"<f2", EMBER_FLOAT16, 2}, {"<f4", EMBER_FLOAT32, 4}, {"<f8", EMBER_FLOAT64, 8},
    {"|i1", EMBER_INT8, 1},    {"<i2", EMBER_INT16, 2},   {"<i4", EMBER_INT32, 4},
    {"<i8", EMBER_INT64, 8},   {"|u1", EMBER_UINT8, 1},   {"<u2", EMBER_UINT16, 2},
    {"<u4", EMBER_UINT32, 4},  {"<u8", EMBER_UINT64, 8},  {"|b1", EMBER_BOOL, 1},
};
#define NUM_TYPES (sizeof k_types / sizeof k_types[0])

static int fail(char *err, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(char *err, size_t cap, const char *fmt, ...) {
    if (err != NULL && cap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static bool host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static bool mul_overflow(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return true;
    *out = a * b;
    return false;
}

/* 16-byte aligned memory of at least n bytes (n may be 0). */
static void *alloc_aligned(size_t n) {
    size_t rounded = (n + 15u) & ~(size_t)15u;
    if (rounded < n) return NULL;
    if (rounded == 0) rounded = 16;
    return aligned_alloc(16, rounded);
}

const char *npy_descr(int dtype) {
    for (size_t i = 0; i < NUM_TYPES; i++)
        if (k_types[i].dtype == dtype) return k_types[i].descr;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Header parsing: a Python dict literal with three known keys.              */
/* ------------------------------------------------------------------------ */

typedef struct cursor {
    const char *p;
    const char *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool take(cursor *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

static bool take_word(cursor *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, word, n) == 0) {
        c->p += n;
        return true;
    }
    return false;
}

/* A quoted string without escapes (none of the values we accept need them). */
static bool parse_string(cursor *c, const char **s, size_t *len) {
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char q = *c->p++;
    const char *start = c->p;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || *c->p == '\n') return false;
        c->p++;
    }
    if (c->p >= c->end) return false;
    *s = start;
    *len = (size_t)(c->p - start);
    c->p++;
    return true;
}

static bool parse_dim(cursor *c, int64_t *v) {
    skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return false;
    int64_t x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        int d = *c->p - '0';
        if (x > (INT64_MAX - d) / 10) return false;
        x = x * 10 + d;
        c->p++;
    }
    if (c->p < c->end && *c->p == 'L') c->p++; /* written by Python 2 */
    *v = x;
    return true;
}

static int parse_shape(cursor *c, npy_array *out, char *err, size_t cap) {
    if (!take(c, '(')) return fail(err, cap, "shape is not a tuple");
    size_t n = 0;
    bool trailing_comma = false;
    for (;;) {
        if (take(c, ')')) break;
        if (n == NPY_MAX_DIM) return fail(err, cap, "shape has more than %d dimensions", NPY_MAX_DIM);
        if (!parse_dim(c, &out->shape[n])) return fail(err, cap, "shape entry %zu is not a non-negative integer", n);
        n++;
        trailing_comma = take(c, ',');
        if (!trailing_comma) {
            if (!take(c, ')')) return fail(err, cap, "shape tuple is malformed");
            break;
        }
    }
    if (n == 1 && !trailing_comma) return fail(err, cap, "shape (n) is not a tuple; expected (n,)");
    out->dim = n;
    return 0;
}

static int parse_descr(const char *s, size_t len, npy_array *out, size_t *elsize, char *err,
                       size_t cap) {
    if (len != 3)
        return fail(err, cap, "unsupported dtype '%.*s'", (int)(len < 32 ? len : 32), s);
    if (s[0] == '>')
        return fail(err, cap, "big-endian dtype '%.3s' is not supported; save little-endian data", s);
    for (size_t i = 0; i < NUM_TYPES; i++) {
        const char *d = k_types[i].descr;
        if (memcmp(s + 1, d + 1, 2) != 0) continue;
        bool ok = s[0] == d[0] || (k_types[i].size == 1 && (s[0] == '<' || s[0] == '|'));
        if (!ok) break;
        out->dtype = k_types[i].dtype;
        *elsize = k_types[i].size;
        return 0;
    }
    return fail(err, cap, "unsupported dtype '%.3s'", s);
}

static int parse_header(const char *h, size_t len, npy_array *out, size_t *elsize, char *err,
                        size_t cap) {
    cursor c = {h, h + len};
    bool have_descr = false, have_order = false, have_shape = false;
    if (!take(&c, '{')) return fail(err, cap, "header is not a dict");
    for (;;) {
        if (take(&c, '}')) break;
        const char *key;
        size_t klen;
        if (!parse_string(&c, &key, &klen)) return fail(err, cap, "header key is not a string");
        if (!take(&c, ':')) return fail(err, cap, "header: missing ':' after key");
        skip_ws(&c);
        if (klen == 5 && memcmp(key, "descr", 5) == 0) {
            if (have_descr) return fail(err, cap, "header: duplicate key 'descr'");
            if (c.p < c.end && *c.p == '[') return fail(err, cap, "structured dtypes are not supported");
            const char *s;
            size_t slen;
            if (!parse_string(&c, &s, &slen)) return fail(err, cap, "header: descr is not a string");
            if (parse_descr(s, slen, out, elsize, err, cap) != 0) return -1;
            have_descr = true;
        } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) {
            if (have_order) return fail(err, cap, "header: duplicate key 'fortran_order'");
            if (take_word(&c, "True"))
                return fail(err, cap, "fortran_order arrays are not supported; save with np.ascontiguousarray()");
            if (!take_word(&c, "False")) return fail(err, cap, "header: fortran_order is not True or False");
            have_order = true;
        } else if (klen == 5 && memcmp(key, "shape", 5) == 0) {
            if (have_shape) return fail(err, cap, "header: duplicate key 'shape'");
            if (parse_shape(&c, out, err, cap) != 0) return -1;
            have_shape = true;
        } else {
            return fail(err, cap, "header: unknown key '%.*s'", (int)(klen < 32 ? klen : 32), key);
        }
        if (take(&c, ',')) continue;
        if (take(&c, '}')) break;
        return fail(err, cap, "header: expected ',' or '}'");
    }
    skip_ws(&c);
    if (c.p != c.end) return fail(err, cap, "header: unexpected text after the dict");
    if (!have_descr) return fail(err, cap, "header: missing key 'descr'");
    if (!have_order) return fail(err, cap, "header: missing key 'fortran_order'");
    if (!have_shape) return fail(err, cap, "header: missing key 'shape'");
    return 0;
}

int npy_parse(const void *buf, size_t len, npy_array *out, char *err, size_t cap) {
    const unsigned char *b = buf;
    npy_array a;
    memset(&a, 0, sizeof a);
    if (out == NULL || (buf == NULL && len != 0)) return fail(err, cap, "invalid argument");
    memset(out, 0, sizeof *out);

    if (len < 10 || memcmp(b, k_magic, sizeof k_magic) != 0)
        return fail(err, cap, "not a .npy file (bad magic)");
    unsigned major = b[6], minor = b[7];
    size_t prefix, hlen;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        prefix = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return fail(err, cap, "truncated .npy header");
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        prefix = 12;
    } else {
        return fail(err, cap, ".npy format version %u.%u is not supported", major, minor);
    }
    if (minor != 0) return fail(err, cap, ".npy format version %u.%u is not supported", major, minor);
    if (hlen > len - prefix) return fail(err, cap, "truncated .npy header (%zu bytes declared)", hlen);

    size_t elsize = 0;
    if (parse_header((const char *)b + prefix, hlen, &a, &elsize, err, cap) != 0) return -1;

    size_t numel = 1;
    for (size_t i = 0; i < a.dim; i++) {
        if ((uint64_t)a.shape[i] > SIZE_MAX || mul_overflow(numel, (size_t)a.shape[i], &numel))
            return fail(err, cap, "shape is too large");
    }
    size_t nbytes;
    if (mul_overflow(numel, elsize, &nbytes)) return fail(err, cap, "shape is too large");
    size_t have = len - prefix - hlen;
    if (have < nbytes)
        return fail(err, cap, "truncated .npy data: shape needs %zu bytes, file has %zu", nbytes, have);
    if (have > nbytes)
        return fail(err, cap, ".npy file has %zu bytes after the data", have - nbytes);

    a.numel = numel;
    a.nbytes = nbytes;
    a.data = alloc_aligned(nbytes);
    if (a.data == NULL) return fail(err, cap, "out of memory (%zu bytes)", nbytes);
    if (nbytes > 0) memcpy(a.data, b + prefix + hlen, nbytes);

    if (!host_is_little_endian() && elsize > 1) {
        unsigned char *p = a.data;
        for (size_t i = 0; i < numel; i++, p += elsize)
            for (size_t j = 0; j < elsize / 2; j++) {
                unsigned char t = p[j];
                p[j] = p[elsize - 1 - j];
                p[elsize - 1 - j] = t;
            }
    }
    *out = a;
    return 0;
}

int npy_load(const char *path, npy_array *out, char *err, size_t cap) {
    if (path == NULL || out == NULL) return fail(err, cap, "invalid argument");
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (f == NULL) return fail(err, cap, "cannot open '%s'", path);

    size_t size = 0, capacity = 1 << 16;
    unsigned char *buf = malloc(capacity);
    int rc = 0;
    if (buf == NULL) {
        rc = fail(err, cap, "'%s': out of memory", path);
    } else {
        for (;;) {
            if (size == capacity) {
                if (capacity > SIZE_MAX / 2) {
                    rc = fail(err, cap, "'%s': file is too large", path);
                    break;
                }
                unsigned char *nb = realloc(buf, capacity * 2);
                if (nb == NULL) {
                    rc = fail(err, cap, "'%s': out of memory", path);
                    break;
                }
                buf = nb;
                capacity *= 2;
            }
            size_t n = fread(buf + size, 1, capacity - size, f);
            size += n;
            if (n == 0) {
                if (ferror(f)) rc = fail(err, cap, "'%s': read error", path);
                break;
            }
        }
    }
    fclose(f);
    if (rc == 0 && npy_parse(buf, size, out, err, cap) != 0) {
        /* Prefix the parser's message with the file name. */
        if (err != NULL && cap > 0) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", err);
            snprintf(err, cap, "'%s': %s", path, msg);
        }
        rc = -1;
    }
    free(buf);
    return rc;
}

void npy_free(npy_array *a) {
    if (a == NULL) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

int npy_save(const char *path, int dtype, const int64_t *shape, size_t dim, const void *data,
             char *err, size_t cap) {
    const char *descr = npy_descr(dtype);
    size_t elsize = 0;
    for (size_t i = 0; i < NUM_TYPES; i++)
        if (k_types[i].dtype == dtype) elsize = k_types[i].size;
    if (path == NULL || descr == NULL) return fail(err, cap, "cannot write dtype %d as .npy", dtype);
    if (dim > NPY_MAX_DIM || (dim > 0 && shape == NULL))
        return fail(err, cap, "invalid shape for '%s'", path);

    /* {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */
    char header[64 + NPY_MAX_DIM * 24 + 64];
    size_t n = (size_t)snprintf(header, sizeof header,
                                "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    size_t numel = 1;
    for (size_t i = 0; i < dim; i++) {
        if (shape[i] < 0 || (uint64_t)shape[i] > SIZE_MAX ||
            mul_overflow(numel, (size_t)shape[i], &numel))
            return fail(err, cap, "invalid shape for '%s'", path);
        n += (size_t)snprintf(header + n, sizeof header - n, i == 0 ? "%lld" : ", %lld",
                              (long long)shape[i]);
    }
    n += (size_t)snprintf(header + n, sizeof header - n, "%s), }", dim == 1 ? "," : "");
    size_t nbytes;
    if (mul_overflow(numel, elsize, &nbytes)) return fail(err, cap, "invalid shape for '%s'", path);
    if (nbytes > 0 && data == NULL) return fail(err, cap, "no data for '%s'", path);

    /* Pad with spaces so the data starts on a 64-byte boundary; end with '\n'. */
    size_t total = 10 + n + 1;
    size_t pad = (64 - total % 64) % 64;
    if (n + pad + 1 > sizeof header) return fail(err, cap, "header too long for '%s'", path);
    memset(header + n, ' ', pad);
    n += pad;
    header[n++] = '\n';

    unsigned char prefix[10];
    memcpy(prefix, k_magic, 6);
    prefix[6] = 1;
    prefix[7] = 0;
    prefix[8] = (unsigned char)(n & 0xff);
    prefix[9] = (unsigned char)(n >> 8);

    FILE *f = fopen(path, "wb");
    if (f == NULL) return fail(err, cap, "cannot create '%s'", path);
    bool ok = fwrite(prefix, 1, sizeof prefix, f) == sizeof prefix && fwrite(header, 1, n, f) == n;
    if (ok && nbytes > 0) {
        if (host_is_little_endian() || elsize == 1) {
            ok = fwrite(data, 1, nbytes, f) == nbytes;
        } else {
            const unsigned char *p = data;
            unsigned char tmp[8];
            for (size_t i = 0; ok && i < numel; i++, p += elsize) {
                for (size_t j = 0; j < elsize; j++) tmp[j] = p[elsize - 1 - j];
                ok = fwrite(tmp, 1, elsize, f) == elsize;
            }
        }
    }
    if (fclose(f) != 0) ok = false;
    if (!ok) return fail(err, cap, "write error on '%s'", path);
    return 0;
}
