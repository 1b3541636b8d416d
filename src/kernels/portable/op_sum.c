/*
 * aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *,
 *     ScalarType? dtype=None, Tensor(a!) out)
 * aten::mean.out(Tensor self, int[1]? dim, bool keepdim=False, *,
 *     ScalarType? dtype=None, Tensor(a!) out)
 * aten::mean.dtype_out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
 *
 * Sum (or mean) over dims (None or [] means all). Floats accumulate in
 * double, integers and bool in int64 (wrapping); the result is cast to out's
 * dtype. mean needs a floating out; the mean of nothing is NaN.
 * mean.dtype_out is the mean over every dim into a 0-dim out.
 */
#include "kernel_util.h"
#include "ops.h"

/* Running sums kept apart: additions into NACC accumulators do not wait on
 * one another, where a single chain of dependent additions would. */
#define NACC 4

static void fold_f64(void *state, const void *x, size_t n, int64_t pos) {
    const double *v = (const double *)x;
    double *acc = (double *)state; /* (NACC) */
    /* locals, not acc[]: stores through acc could alias v and would stay in memory */
    double s0 = acc[0], s1 = acc[1], s2 = acc[2], s3 = acc[3];
    (void)pos;
    size_t i = 0;
    for (; i + NACC <= n; i += NACC) {
        s0 += v[i];
        s1 += v[i + 1];
        s2 += v[i + 2];
        s3 += v[i + 3];
    }
    for (; i < n; i++) s0 += v[i];
    acc[0] = s0;
    acc[1] = s1;
    acc[2] = s2;
    acc[3] = s3;
}

static void fold_i64(void *state, const void *x, size_t n, int64_t pos) {
    const int64_t *v = (const int64_t *)x;
    uint64_t *acc = (uint64_t *)state;
    (void)pos;
    for (size_t i = 0; i < n; i++) *acc += (uint64_t)v[i];
}

/*
 * Reductions that keep the innermost dim (contiguous in self and out): for
 * each block of EK_CHUNK output columns, add whole rows of self into a block
 * of accumulators, walking the reduced dims outside. Memory is then read in
 * order, where folding one output at a time would stride through self.
 */
static void sum_rows(const ek_reduce_plan *p, const ember_tensor *in, ember_tensor *out,
                     bool mean, ek_ctype ct) {
    ek_load_fn load = ek_loader(in->dtype, ct);
    ek_store_fn store = ek_storer(out->dtype, ct);
    int64_t isize = (int64_t)ember_dtype_size(in->dtype);
    int64_t osize = (int64_t)ember_dtype_size(out->dtype);
    int64_t inner = p->keep_sizes[p->nkeep - 1];
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2] = {0, 0};
    do {
        for (int64_t j0 = 0; j0 < inner; j0 += EK_CHUNK) {
            size_t cnt = (size_t)(inner - j0 < EK_CHUNK ? inner - j0 : EK_CHUNK);
            union {
                double d[EK_CHUNK];
                int64_t i[EK_CHUNK];
            } buf; /* one row block, in the compute type */
            double dacc[EK_CHUNK] = {0};
            uint64_t iacc[EK_CHUNK] = {0};
            int64_t ridx[EMBER_MAX_DIM] = {0}, roff[1] = {off[1] + j0};
            if (p->red_count > 0) do {
                load(&buf, (const char *)in->data + roff[0] * isize, 1, cnt);
                if (ct == EK_CT_F64)
                    for (size_t j = 0; j < cnt; j++) dacc[j] += buf.d[j];
                else
                    for (size_t j = 0; j < cnt; j++) iacc[j] += (uint64_t)buf.i[j];
            } while (ek_advance(ridx, p->red_sizes, p->nred, 1,
                                (const int64_t(*)[EMBER_MAX_DIM])p->red_strides, roff));
            char *dst = (char *)out->data + (off[0] + j0) * osize;
            if (ct == EK_CT_F64) {
                if (mean)
                    for (size_t j = 0; j < cnt; j++) dacc[j] /= (double)p->red_count;
                store(dst, 1, dacc, cnt);
            } else {
                int64_t v[EK_CHUNK];
                for (size_t j = 0; j < cnt; j++) v[j] = (int64_t)iacc[j];
                store(dst, 1, v, cnt);
            }
        }
    } while (ek_advance(idx, p->keep_sizes, p->nkeep - 1, 2,
                        (const int64_t(*)[EMBER_MAX_DIM])p->keep_strides, off));
}

/*
 * float32 in, float32 out (sum and mean): additions in float, which the
 * compiler vectorizes, over short stretches whose totals are added in
 * double. Each float partial sums at most a few dozen values, so the result
 * stays closer to the exact sum than PyTorch's own float accumulation.
 */
/* Independent float accumulators of a contiguous run. */
#define SUM_LANES 16
/* Elements added into the lanes before they are folded into the double total. */
#define SUM_BLOCK 256
/* Output columns of a float32 column block on the stack, and rows added in
 * float before the block's float sums are folded into double. */
#define SUM_COLS 256
/* Widest column block, when its sums come from scratch (48 KiB). */
#define SUM_COLS_MAX 4096
#define SUM_ROWS 16

/* Sum of the reduced elements of one output (first at in_off) whose
 * innermost reduced dim is contiguous. The lanes fold into double lanes
 * (vectorized too) and those into the total at the end. */
static double sum_f32_runs(const ek_reduce_plan *p, const float *x, int64_t in_off) {
    const int64_t len = p->red_sizes[p->nred - 1]; /* one contiguous run */
    float lane[SUM_LANES];
    double dlane[SUM_LANES];
    for (int j = 0; j < SUM_LANES; j++) {
        lane[j] = 0;
        dlane[j] = 0;
    }
    int64_t pending = 0; /* elements in lane since the last fold */
    int64_t idx[EMBER_MAX_DIM] = {0}, off[1] = {in_off};
    if (p->red_count == 0) return 0;
    do {
        const float *run = x + off[0]; /* (len) */
        for (int64_t i0 = 0; i0 < len; i0 += SUM_BLOCK) {
            const int64_t bn = len - i0 < SUM_BLOCK ? len - i0 : SUM_BLOCK;
            const int64_t bfull = bn - bn % SUM_LANES;
            const float *blk = run + i0;
            for (int64_t i = 0; i < bfull; i += SUM_LANES)
                for (int j = 0; j < SUM_LANES; j++) lane[j] += blk[i + j];
            float rest = 0;
            for (int64_t i = bfull; i < bn; i++) rest += blk[i];
            lane[0] += rest;
            pending += bn;
            if (pending >= SUM_BLOCK) {
                for (int j = 0; j < SUM_LANES; j++) {
                    dlane[j] += lane[j];
                    lane[j] = 0;
                }
                pending = 0;
            }
        }
    } while (ek_advance(idx, p->red_sizes, p->nred - 1, 1,
                        (const int64_t(*)[EMBER_MAX_DIM])p->red_strides, off));
    double total = 0;
    for (int j = 0; j < SUM_LANES; j++) total += dlane[j] + lane[j];
    return total;
}

/*
 * sum_rows for float32 in and out: each reduced row adds into float sums of
 * a block of columns, folded into double sums every SUM_ROWS rows. The
 * block is as wide as the rows (up to SUM_COLS_MAX) when scratch has room
 * for its sums: whole rows then stream through the cache in order. Else it
 * is SUM_COLS wide, on the stack.
 */
static void sum_rows_f32(ember_kernel_ctx *ctx, const ek_reduce_plan *p, const ember_tensor *in,
                         ember_tensor *out, bool mean) {
    const float *x = (const float *)in->data;
    float *y = (float *)out->data;
    const int64_t inner = p->keep_sizes[p->nkeep - 1];
    float stack_f[SUM_COLS];
    double stack_d[SUM_COLS];
    float *facc = stack_f;
    double *dacc = stack_d;
    int64_t width = SUM_COLS;
    if (inner > SUM_COLS) {
        const int64_t want = inner < SUM_COLS_MAX ? inner : SUM_COLS_MAX;
        double *d = ember_kernel_scratch(ctx, (size_t)want * (sizeof(double) + sizeof(float)),
                                         _Alignof(double));
        if (d != NULL) {
            dacc = d;
            facc = (float *)(void *)(d + want);
            width = want;
        }
    }
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2] = {0, 0};
    do {
        for (int64_t j0 = 0; j0 < inner; j0 += width) {
            const int64_t cn = inner - j0 < width ? inner - j0 : width;
            for (int64_t j = 0; j < cn; j++) {
                facc[j] = 0;
                dacc[j] = 0;
            }
            int64_t ridx[EMBER_MAX_DIM] = {0}, roff[1] = {off[1] + j0};
            int rows = 0;
            if (p->red_count > 0) do {
                const float *row = x + roff[0]; /* (cn) */
                for (int64_t j = 0; j < cn; j++) facc[j] += row[j];
                if (++rows == SUM_ROWS) {
                    for (int64_t j = 0; j < cn; j++) {
                        dacc[j] += facc[j];
                        facc[j] = 0;
                    }
                    rows = 0;
                }
            } while (ek_advance(ridx, p->red_sizes, p->nred, 1,
                                (const int64_t(*)[EMBER_MAX_DIM])p->red_strides, roff));
            for (int64_t j = 0; j < cn; j++) {
                double v = dacc[j] + facc[j];
                if (mean) v /= (double)p->red_count; /* 0 / 0 is NaN, as in PyTorch */
                y[off[0] + j0 + j] = (float)v;
            }
        }
    } while (ek_advance(idx, p->keep_sizes, p->nkeep - 1, 2,
                        (const int64_t(*)[EMBER_MAX_DIM])p->keep_strides, off));
}

/* The reduction itself; the dtype argument has been checked against out. */
static ember_status sum_core(ember_kernel_ctx *ctx, ember_tensor *in, const int64_t *dims,
                             size_t ndims, bool has_dims, bool keepdim, ember_tensor *out,
                             bool mean) {
    EK_TRY(ek_check_supported(ctx, in->dtype, "self"));
    EK_TRY(ek_check_supported(ctx, out->dtype, "out"));
    if (mean && !ek_is_float(out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "mean: out must be floating, got %s",
                                 ember_dtype_name(out->dtype));
    if (ek_is_float(in->dtype) && !ek_is_float(out->dtype))
        return ember_kernel_fail(ctx, EMBER_ERR_TYPE_MISMATCH, "sum: cannot write %s sums to %s",
                                 ember_dtype_name(in->dtype), ember_dtype_name(out->dtype));

    ek_reduce_plan p;
    EK_TRY(ek_reduce_plan_init(ctx, &p, in, dims, ndims, has_dims, keepdim));
    EK_TRY(ek_resize_out(ctx, out, p.out_sizes, p.out_dim));
    if (out->numel == 0) return EMBER_OK;
    ek_reduce_plan_bind_out(&p, out);

    bool use_double = mean || ek_is_float(in->dtype) || ek_is_float(out->dtype);
    ek_ctype ct = use_double ? EK_CT_F64 : EK_CT_I64;
    bool f32 = in->dtype == EMBER_FLOAT32 && out->dtype == EMBER_FLOAT32;
    if (p.nkeep > 0 && p.nred > 0 && in->dim > 0 && !p.reduced[in->dim - 1] &&
        p.keep_strides[1][p.nkeep - 1] == 1 && p.keep_strides[0][p.nkeep - 1] == 1) {
        if (f32)
            sum_rows_f32(ctx, &p, in, out, mean);
        else
            sum_rows(&p, in, out, mean, ct);
        return EMBER_OK;
    }
    ek_load_fn load = ek_loader(in->dtype, ct);
    ek_store_fn store = ek_storer(out->dtype, ct);
    char *obase = (char *)out->data;
    int64_t osize = (int64_t)ember_dtype_size(out->dtype);
    int64_t idx[EMBER_MAX_DIM] = {0}, off[2] = {0, 0};
    /* float32 whose innermost reduced dim is contiguous: runs in float lanes */
    f32 = f32 && p.nred > 0 && p.red_strides[0][p.nred - 1] == 1;
    do {
        if (f32) {
            double acc = sum_f32_runs(&p, (const float *)in->data, off[1]);
            if (mean) acc /= (double)p.red_count; /* 0 / 0 is NaN, as in PyTorch */
            ((float *)(void *)obase)[off[0]] = (float)acc;
        } else if (use_double) {
            double sums[NACC] = {0}, acc = 0.0;
            ek_reduce_fold(&p, in, off[1], load, fold_f64, sums);
            for (size_t l = 0; l < NACC; l++) acc += sums[l];
            if (mean) acc /= (double)p.red_count; /* 0 / 0 is NaN, as in PyTorch */
            store(obase + off[0] * osize, 1, &acc, 1);
        } else {
            uint64_t acc = 0;
            ek_reduce_fold(&p, in, off[1], load, fold_i64, &acc);
            int64_t v = (int64_t)acc;
            store(obase + off[0] * osize, 1, &v, 1);
        }
    } while (ek_advance(idx, p.keep_sizes, p.nkeep, 2,
                        (const int64_t(*)[EMBER_MAX_DIM])p.keep_strides, off));
    return EMBER_OK;
}

static ember_status sum_common(ember_kernel_ctx *ctx, ember_value **args, size_t nargs, bool mean) {
    ember_tensor *in, *out;
    const int64_t *dims;
    size_t ndims;
    bool has_dims, keepdim;
    EK_TRY(ek_check_nargs(ctx, nargs, 6));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_opt_int_list(ctx, args, 1, &dims, &ndims, &has_dims));
    EK_TRY(ek_arg_bool(ctx, args, 2, &keepdim));
    EK_TRY(ek_arg_out(ctx, args, 4, &out));
    EK_TRY(ek_arg_check_dtype(ctx, args, 3, out->dtype));
    return sum_core(ctx, in, dims, ndims, has_dims, keepdim, out, mean);
}

ember_status ek_op_sum_intlist_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return sum_common(ctx, args, nargs, false);
}

ember_status ek_op_mean_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return sum_common(ctx, args, nargs, true);
}

ember_status ek_op_mean_dtype_out(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *in, *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 4));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &in));
    EK_TRY(ek_arg_out(ctx, args, 2, &out));
    EK_TRY(ek_arg_check_dtype(ctx, args, 1, out->dtype));
    return sum_core(ctx, in, NULL, 0, false, false, out, true);
}
