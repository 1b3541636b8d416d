/*
 * reduce_util.c — reductions over dimensions: the reduce plan and the folds of
 * min/max with their index (declared in kernel_util.h).
 */
#include "kernel_util.h"

#include <string.h>

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */
/* ------------------------------------------------------------------------ */

ember_status ek_reduce_plan_init(ember_kernel_ctx *ctx, ek_reduce_plan *p, const ember_tensor *in,
                                 const int64_t *dims, size_t ndims, bool has_dims, bool keepdim) {
    memset(p, 0, sizeof *p);
    size_t r = in->dim;
    if (!has_dims || ndims == 0) {
        for (size_t d = 0; d < r; d++) p->reduced[d] = true;
    } else {
        for (size_t j = 0; j < ndims; j++) {
            size_t d;
            EK_TRY(ek_norm_dim(ctx, dims[j], r, &d));
            if (r == 0) continue; /* reducing a 0-dim tensor over dim 0 */
            if (p->reduced[d])
                return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                         "dim %zu appears more than once in the reduction", d);
            p->reduced[d] = true;
        }
    }
    p->red_count = 1;
    for (size_t d = 0; d < r; d++) {
        if (p->reduced[d]) {
            if (keepdim) p->out_sizes[p->out_dim++] = 1;
            p->red_sizes[p->nred] = in->sizes[d];
            p->red_strides[0][p->nred] = in->strides[d];
            p->nred++;
            p->red_count *= in->sizes[d]; /* <= numel of in: no overflow */
        } else {
            p->keep_out_dim[p->nkeep] = p->out_dim;
            p->out_sizes[p->out_dim++] = in->sizes[d];
            p->keep_sizes[p->nkeep] = in->sizes[d];
            p->keep_strides[1][p->nkeep] = in->strides[d];
            p->nkeep++;
        }
    }
    ek_coalesce(p->red_sizes, &p->nred, 1, p->red_strides);
    return EMBER_OK;
}

void ek_reduce_plan_bind_out(ek_reduce_plan *p, const ember_tensor *out) {
    for (size_t j = 0; j < p->nkeep; j++) p->keep_strides[0][j] = out->strides[p->keep_out_dim[j]];
}

void ek_reduce_fold(const ek_reduce_plan *p, const ember_tensor *in, int64_t in_off,
                    ek_load_fn load, ek_fold_fn fold, void *state) {
    if (p->red_count == 0) return;
    ek_chunk buf;
    size_t esize = ember_dtype_size(in->dtype);
    int64_t len = p->red_sizes[p->nred - 1];
    int64_t stride = p->red_strides[0][p->nred - 1];
    int64_t idx[EMBER_MAX_DIM] = {0};
    int64_t off[1] = {in_off};
    int64_t pos = 0;
    do {
        for (int64_t j = 0; j < len; j += EK_CHUNK) {
            size_t cnt = (size_t)(len - j < EK_CHUNK ? len - j : EK_CHUNK);
            const char *src = (const char *)in->data + (off[0] + j * stride) * (int64_t)esize;
            load(&buf, src, stride, cnt);
            fold(state, &buf, cnt, pos);
            pos += (int64_t)cnt;
        }
    } while (ek_advance(idx, p->red_sizes, p->nred - 1, 1,
                        (const int64_t(*)[EMBER_MAX_DIM])p->red_strides, off));
}

void ek_extreme_fold_f64(void *state, const void *x, size_t n, int64_t pos) {
    ek_extreme_state *s = (ek_extreme_state *)state;
    const double *v = (const double *)x;
    for (size_t k = 0; k < n && !s->nan; k++) {
        if (!s->seen || v[k] != v[k] || (s->is_max ? v[k] > s->d : v[k] < s->d)) {
            s->d = v[k];
            s->best = pos + (int64_t)k;
            s->nan = v[k] != v[k];
        }
        s->seen = true;
    }
}

void ek_extreme_fold_i64(void *state, const void *x, size_t n, int64_t pos) {
    ek_extreme_state *s = (ek_extreme_state *)state;
    const int64_t *v = (const int64_t *)x;
    for (size_t k = 0; k < n; k++) {
        if (!s->seen || (s->is_max ? v[k] > s->i : v[k] < s->i)) {
            s->i = v[k];
            s->best = pos + (int64_t)k;
        }
        s->seen = true;
    }
}
