/*
 * aten::nonzero.out(Tensor self, *, Tensor(a!) out)
 *
 * The indices of self's non-zero elements (NaN counts, -0.0 does not), in
 * row-major order: out is int64 of shape (count, self.dim), resized at
 * execute since count depends on the data. A count beyond out's bound fails
 * cleanly (EMBER_ERR_SHAPE_MISMATCH) before anything is written.
 */
#include "kernel_util.h"
#include "ops.h"

/* Reads elements of t (at element offsets) as zero or non-zero. */
typedef struct nz_walk {
    const ember_tensor *t;
    ek_load_fn load;
    bool is_float;
} nz_walk;

static bool nz_at(const nz_walk *w, int64_t off) {
    const char *p = (const char *)w->t->data + off * (int64_t)ember_dtype_size(w->t->dtype);
    if (w->is_float) {
        double x;
        w->load(&x, p, 1, 1);
        return x != 0.0;
    }
    int64_t x;
    w->load(&x, p, 1, 1);
    return x != 0;
}

ember_status ek_op_nonzero_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_out(ctx, args, 1, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    if (out->dtype != EMBER_INT64)
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "nonzero: out must be int64, got %s",
                                 ember_dtype_name(out->dtype));
    EK_TRY(ek_check_no_alias(ctx, out, self));

    nz_walk w;
    w.t = self;
    w.is_float = ek_is_float(self->dtype);
    w.load = ek_loader(self->dtype, w.is_float ? EK_CT_F64 : EK_CT_I64);
    int64_t sizes[EMBER_MAX_DIM], st[1][EMBER_MAX_DIM];
    ek_sizes64(self, sizes);
    for (size_t d = 0; d < self->dim; d++) st[0][d] = self->strides[d];

    /* pass 1: count, so out can be resized (or refused) before it is written */
    int64_t count = 0;
    if (self->numel > 0) {
        int64_t idx[EMBER_MAX_DIM] = {0}, off[1] = {0};
        do {
            if (nz_at(&w, off[0])) count++;
        } while (ek_advance(idx, sizes, self->dim, 1, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    }
    int64_t shape[2] = {count, (int64_t)self->dim};
    EK_TRY(ek_resize_out(ctx, out, shape, 2));
    if (out->numel == 0) return EMBER_OK;

    /* pass 2: write each non-zero element's index as a row of out */
    int64_t *o = (int64_t *)out->data;
    int64_t rs = out->strides[0], cs = out->strides[1], row = 0;
    int64_t idx[EMBER_MAX_DIM] = {0}, off[1] = {0};
    do {
        if (nz_at(&w, off[0])) {
            for (size_t d = 0; d < self->dim; d++) o[row * rs + (int64_t)d * cs] = idx[d];
            row++;
        }
    } while (row < count &&
             ek_advance(idx, sizes, self->dim, 1, (const int64_t(*)[EMBER_MAX_DIM])st, off));
    return EMBER_OK;
}
