/*
 * copy_util.c — data movement: strided block copies (with casts), tensor
 * copies and fills (declared in kernel_util.h).
 */
#include "kernel_util.h"

#include <string.h>

/* ------------------------------------------------------------------------ */
/* Data movement                                                             */
/* ------------------------------------------------------------------------ */

/* Copies len elements of es bytes, ds and ss elements apart (memmove: a
 * malformed program may hand the same tensor twice). */
static void copy_run(char *d, int64_t ds, const char *s, int64_t ss, int64_t len, size_t es) {
    if (ds == 1 && ss == 1) {
        memmove(d, s, (size_t)len * es);
        return;
    }
    int64_t e = (int64_t)es;
    /* constant-size moves compile to single loads and stores */
    switch (es) {
    case 1:
        for (int64_t i = 0; i < len; i++) memmove(d + i * ds, s + i * ss, 1);
        break;
    case 2:
        for (int64_t i = 0; i < len; i++) memmove(d + i * ds * 2, s + i * ss * 2, 2);
        break;
    case 4:
        for (int64_t i = 0; i < len; i++) memmove(d + i * ds * 4, s + i * ss * 4, 4);
        break;
    case 8:
        for (int64_t i = 0; i < len; i++) memmove(d + i * ds * 8, s + i * ss * 8, 8);
        break;
    default:
        for (int64_t i = 0; i < len; i++) memmove(d + i * ds * e, s + i * ss * e, es);
        break;
    }
}

/* Tile edge for strided (transposing) copies: a tile of both sides fits in L1. */
#define EK_COPY_TILE 32

void ek_copy_block(void *dst, int64_t dst_off, const int64_t *dst_strides, const void *src,
                   int64_t src_off, const int64_t *src_strides, const int64_t *sizes, size_t ndim,
                   size_t elsize) {
    int64_t sz[EMBER_MAX_DIM];
    int64_t st[2][EMBER_MAX_DIM];
    for (size_t d = 0; d < ndim; d++) {
        if (sizes[d] == 0) return;
        sz[d] = sizes[d];
        st[0][d] = dst_strides[d];
        st[1][d] = src_strides[d];
    }
    size_t n = ndim;
    ek_coalesce(sz, &n, 2, st);
    int64_t es = (int64_t)elsize;
    int64_t idx[EMBER_MAX_DIM] = {0};
    int64_t off[2] = {dst_off, src_off};
    int64_t cols = sz[n - 1], dc = st[0][n - 1], sc = st[1][n - 1];
    if (n == 1 || (dc == 1 && sc == 1)) {
        /* rows of the last dim, one after another */
        do {
            copy_run((char *)dst + off[0] * es, dc, (const char *)src + off[1] * es, sc, cols,
                     elsize);
        } while (ek_advance(idx, sz, n - 1, 2, (const int64_t(*)[EMBER_MAX_DIM])st, off));
        return;
    }
    /* A strided last dim (a transpose): walk the last two dims in square
     * tiles so both sides stay in cache. */
    int64_t rows = sz[n - 2], dr = st[0][n - 2], sr = st[1][n - 2];
    do {
        char *d = (char *)dst + off[0] * es;
        const char *s = (const char *)src + off[1] * es;
        for (int64_t r0 = 0; r0 < rows; r0 += EK_COPY_TILE) {
            int64_t r1 = rows - r0 < EK_COPY_TILE ? rows : r0 + EK_COPY_TILE;
            for (int64_t c0 = 0; c0 < cols; c0 += EK_COPY_TILE) {
                int64_t cn = cols - c0 < EK_COPY_TILE ? cols - c0 : EK_COPY_TILE;
                for (int64_t r = r0; r < r1; r++)
                    copy_run(d + (r * dr + c0 * dc) * es, dc, s + (r * sr + c0 * sc) * es, sc, cn,
                             elsize);
            }
        }
    } while (ek_advance(idx, sz, n - 2, 2, (const int64_t(*)[EMBER_MAX_DIM])st, off));
}

/* The compute type that carries a value from one dtype to another exactly
 * enough: double if either side is float64, float if either is floating. */
static ek_ctype cast_ctype(int a, int b) {
    if (a == EMBER_FLOAT64 || b == EMBER_FLOAT64) return EK_CT_F64;
    if (ek_is_float(a) || ek_is_float(b)) return EK_CT_F32;
    return EK_CT_I64;
}

void ek_copy_block_cast(void *dst, int dst_dtype, int64_t dst_off, const int64_t *dst_strides,
                        const void *src, int src_dtype, int64_t src_off, const int64_t *src_strides,
                        const int64_t *sizes, size_t ndim) {
    if (dst_dtype == src_dtype) {
        ek_copy_block(dst, dst_off, dst_strides, src, src_off, src_strides, sizes, ndim,
                      ember_dtype_size(dst_dtype));
        return;
    }
    int64_t sz[EMBER_MAX_DIM];
    int64_t st[2][EMBER_MAX_DIM];
    for (size_t d = 0; d < ndim; d++) {
        if (sizes[d] == 0) return;
        sz[d] = sizes[d];
        st[0][d] = dst_strides[d];
        st[1][d] = src_strides[d];
    }
    size_t n = ndim;
    ek_coalesce(sz, &n, 2, st);
    ek_ctype ct = cast_ctype(src_dtype, dst_dtype);
    ek_load_fn load = ek_loader(src_dtype, ct);
    ek_store_fn store = ek_storer(dst_dtype, ct);
    if (load == NULL || store == NULL) return;
    int64_t dsz = (int64_t)ember_dtype_size(dst_dtype), ssz = (int64_t)ember_dtype_size(src_dtype);
    int64_t len = sz[n - 1], ds = st[0][n - 1], ss = st[1][n - 1];
    int64_t idx[EMBER_MAX_DIM] = {0};
    int64_t off[2] = {dst_off, src_off};
    ek_chunk buf;
    do {
        for (int64_t j = 0; j < len; j += EK_CHUNK) {
            size_t cnt = (size_t)(len - j < EK_CHUNK ? len - j : EK_CHUNK);
            load(&buf, (const char *)src + (off[1] + j * ss) * ssz, ss, cnt);
            store((char *)dst + (off[0] + j * ds) * dsz, ds, &buf, cnt);
        }
    } while (ek_advance(idx, sz, n - 1, 2, (const int64_t(*)[EMBER_MAX_DIM])st, off));
}

void ek_copy_tensor(ember_tensor *out, const ember_tensor *in) {
    if (in->numel == 0) return;
    if (in->dtype == out->dtype && ember_tensor_is_contiguous(in) &&
        ember_tensor_is_contiguous(out)) {
        memmove(out->data, in->data, in->nbytes);
        return;
    }
    int64_t sizes[EMBER_MAX_DIM];
    ek_sizes64(in, sizes);
    ek_copy_block_cast(out->data, out->dtype, 0, out->strides, in->data, in->dtype, 0, in->strides,
                       sizes, in->dim);
}

ember_status ek_copy_reshape(ember_kernel_ctx *ctx, ember_tensor *out, const ember_tensor *in) {
    if (in->numel != out->numel || in->dtype != out->dtype)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH, "reshape: %lld elements into %lld",
                                 (long long)in->numel, (long long)out->numel);
    if (in->numel == 0) return EMBER_OK;
    if (ember_tensor_is_contiguous(in) && ember_tensor_is_contiguous(out)) {
        memmove(out->data, in->data, in->nbytes);
        return EMBER_OK;
    }
    /* walk the dims of size > 1 of both side by side */
    int64_t sizes[EMBER_MAX_DIM], ist[EMBER_MAX_DIM], ost[EMBER_MAX_DIM];
    size_t n = 0, j = 0;
    for (size_t i = 0; i < in->dim; i++) {
        if (in->sizes[i] == 1) continue;
        while (j < out->dim && out->sizes[j] == 1) j++;
        if (j == out->dim || out->sizes[j] != in->sizes[i])
            return ember_kernel_fail(
                ctx, EMBER_ERR_NOT_SUPPORTED,
                "reshape of a non-contiguous tensor (dim order) is not supported");
        sizes[n] = in->sizes[i];
        ist[n] = in->strides[i];
        ost[n] = out->strides[j];
        n++;
        j++;
    }
    ek_copy_block(out->data, 0, ost, in->data, 0, ist, sizes, n, ember_dtype_size(in->dtype));
    return EMBER_OK;
}

void ek_fill_bytes(void *dst, int64_t numel, const void *value, size_t elsize) {
    char *d = (char *)dst;
    for (int64_t i = 0; i < numel; i++) memcpy(d + i * (int64_t)elsize, value, elsize);
}
