/*
 * prim_tensor.c — prim ops that read or alias tensors.
 *
 *   aten::sym_size.int(Tensor self, int dim) -> SymInt
 *   aten::sym_numel(Tensor self) -> SymInt
 *   aten::sym_stride.int(Tensor self, int dim) -> SymInt
 *   aten::sym_storage_offset(Tensor self) -> SymInt
 *   aten::sym_is_contiguous(Tensor self, MemoryFormat memory_format=contiguous_format) -> SymBool
 *   aten::_local_scalar_dense(Tensor self) -> Scalar
 *   executorch_prim::et_view.default(Tensor self, int[] size) -> Tensor
 *   executorch_prim::et_copy_index.tensor(Tensor(a!) copy_to, Tensor copy_from, int index)
 *
 * et_view makes its result alias self's storage (no copy): the result takes
 * self's data pointer, and is marked constant when self is, so that no
 * kernel can write through it into read-only program data.
 *
 * Strides are the ones the dim order gives (runtime tensors are dense), and a
 * tensor never starts inside its storage, so sym_storage_offset is 0.
 * sym_is_contiguous follows PyTorch: dims of size 1 do not count, an empty
 * tensor is contiguous, and channels_last / channels_last_3d ask about the
 * order (N, H, W, C) / (N, D, H, W, C) of a 4-d / 5-d tensor.
 */
#include <string.h>

#include "../portable/kernel_util.h"
#include "../portable/ops.h"

static ember_status scalar_slot(ember_kernel_ctx *ctx, ember_value **args, size_t i,
                                ember_value **out) {
    *out = NULL;
    ember_value *v = args[i];
    if (v->tag != EMBER_TAG_INT && v->tag != EMBER_TAG_DOUBLE && v->tag != EMBER_TAG_BOOL &&
        v->tag != EMBER_TAG_NONE)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "result value %zu is not a scalar",
                                 i);
    *out = v;
    return EMBER_OK;
}

/* sym_size.int / sym_stride.int: the size or stride of one dim of self. */
static ember_status dim_fact(ember_kernel_ctx *ctx, ember_value **args, size_t nargs,
                             const char *name, bool stride) {
    ember_tensor *self;
    int64_t dim;
    size_t d;
    ember_value *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 0, &self));
    EK_TRY(ek_arg_int(ctx, args, 1, &dim));
    EK_TRY(scalar_slot(ctx, args, 2, &out));
    if (self->dim == 0)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT, "%s: tensor has no dims", name);
    EK_TRY(ek_norm_dim(ctx, dim, self->dim, &d));
    out->tag = EMBER_TAG_INT;
    out->u.i = stride ? self->strides[d] : self->sizes[d];
    return EMBER_OK;
}

ember_status ek_prim_sym_size_int(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return dim_fact(ctx, args, nargs, "sym_size", false);
}

ember_status ek_prim_sym_stride_int(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    return dim_fact(ctx, args, nargs, "sym_stride", true);
}

ember_status ek_prim_sym_numel(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self;
    ember_value *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 2));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 0, &self));
    EK_TRY(scalar_slot(ctx, args, 1, &out));
    out->tag = EMBER_TAG_INT;
    out->u.i = self->numel;
    return EMBER_OK;
}

ember_status ek_prim_sym_storage_offset(ember_kernel_ctx *ctx, ember_value **args,
                                        size_t nargs) {
    ember_tensor *self;
    ember_value *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 2));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 0, &self));
    EK_TRY(scalar_slot(ctx, args, 1, &out));
    out->tag = EMBER_TAG_INT;
    out->u.i = 0;
    return EMBER_OK;
}

/* torch's MemoryFormat numbering, as a program stores it */
enum { MF_CONTIGUOUS = 0, MF_PRESERVE = 1, MF_CHANNELS_LAST = 2, MF_CHANNELS_LAST_3D = 3 };

/* Whether self's strides are dense in the order `order` (outermost first),
 * skipping dims of size 1. */
static bool dense_in_order(const ember_tensor *self, const uint8_t *order) {
    int64_t expected = 1;
    for (size_t k = self->dim; k-- > 0;) {
        size_t d = order[k];
        if (self->sizes[d] == 1) continue;
        if (self->strides[d] != expected) return false;
        expected *= self->sizes[d];
    }
    return true;
}

ember_status ek_prim_sym_is_contiguous(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    static const uint8_t rows[EMBER_MAX_DIM] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const uint8_t nhwc[4] = {0, 2, 3, 1};
    static const uint8_t ndhwc[5] = {0, 2, 3, 4, 1};
    ember_tensor *self;
    int64_t format = MF_CONTIGUOUS;
    ember_value *out;
    bool result;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor_meta(ctx, args, 0, &self));
    if (args[1]->tag != EMBER_TAG_NONE) EK_TRY(ek_arg_int(ctx, args, 1, &format));
    EK_TRY(scalar_slot(ctx, args, 2, &out));
    switch (format) {
    case MF_CONTIGUOUS:
        result = self->numel == 0 || dense_in_order(self, rows);
        break;
    case MF_CHANNELS_LAST:
        result = self->dim == 4 && dense_in_order(self, nhwc);
        break;
    case MF_CHANNELS_LAST_3D:
        result = self->dim == 5 && dense_in_order(self, ndhwc);
        break;
    default:
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "sym_is_contiguous: memory format %lld is not one a tensor can "
                                 "be contiguous in",
                                 (long long)format);
    }
    out->tag = EMBER_TAG_BOOL;
    out->u.b = result;
    return EMBER_OK;
}

ember_status ek_prim_local_scalar_dense(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self;
    ember_value *out;
    EK_TRY(ek_check_nargs(ctx, nargs, 2));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(scalar_slot(ctx, args, 1, &out));
    EK_TRY(ek_check_supported(ctx, self->dtype, "self"));
    if (self->numel < 1)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_ARGUMENT,
                                 "_local_scalar_dense: tensor has no elements");
    /* element 0 is at offset 0 whatever the dim order */
    if (ek_is_float(self->dtype)) {
        double d;
        ek_loader(self->dtype, EK_CT_F64)(&d, self->data, 1, 1);
        out->tag = EMBER_TAG_DOUBLE;
        out->u.d = d;
    } else {
        int64_t i;
        ek_loader(self->dtype, EK_CT_I64)(&i, self->data, 1, 1);
        if (self->dtype == EMBER_BOOL) {
            out->tag = EMBER_TAG_BOOL;
            out->u.b = i != 0;
        } else {
            out->tag = EMBER_TAG_INT;
            out->u.i = i;
        }
    }
    return EMBER_OK;
}

ember_status ek_prim_et_view(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *self, *out;
    const int64_t *size;
    size_t n;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_tensor(ctx, args, 0, &self));
    EK_TRY(ek_arg_int_list(ctx, args, 1, &size, &n));
    if (args[2]->tag != EMBER_TAG_TENSOR || args[2]->u.t == NULL ||
        args[2]->u.t->dim > EMBER_MAX_DIM)
        return ember_kernel_fail(ctx, EMBER_ERR_INVALID_PROGRAM, "argument 2: expected Tensor");
    out = args[2]->u.t;
    if (out == self) return EMBER_OK; /* viewing a tensor as itself */
    EK_TRY(ek_check_same_dtype(ctx, self, out, "et_view self and out"));
    if (n != out->dim)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "et_view: %zu sizes for a result of rank %u", n,
                                 (unsigned)out->dim);
    /* a view reinterprets self's bytes in row-major order */
    EK_TRY(ek_check_contiguous(ctx, self, "et_view self"));
    int64_t shape[EMBER_MAX_DIM];
    EK_TRY(ek_view_shape(ctx, self->numel, size, n, shape));

    /* alias self's storage, then resize within exactly those bytes */
    out->data = self->data;
    out->capacity = self->data != NULL ? self->nbytes : 0;
    if (self->storage == EMBER_STORAGE_CONSTANT) out->storage = EMBER_STORAGE_CONSTANT;
    EK_TRY(ek_resize_out(ctx, out, shape, n));
    EK_TRY(ek_check_contiguous(ctx, out, "et_view out"));
    return EMBER_OK;
}

ember_status ek_prim_et_copy_index(ember_kernel_ctx *ctx, ember_value **args, size_t nargs) {
    ember_tensor *to, *from;
    int64_t index;
    EK_TRY(ek_check_nargs(ctx, nargs, 3));
    EK_TRY(ek_arg_out(ctx, args, 0, &to));
    EK_TRY(ek_arg_tensor(ctx, args, 1, &from));
    EK_TRY(ek_arg_int(ctx, args, 2, &index));
    EK_TRY(ek_check_same_dtype(ctx, to, from, "et_copy_index copy_to and copy_from"));
    if (to->dim != from->dim + 1)
        return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                 "et_copy_index: copy_to must have one more dim than copy_from");
    if (index < 0 || index >= INT32_MAX)
        return ember_kernel_fail(ctx, EMBER_ERR_DATA_OUT_OF_BOUNDS,
                                 "et_copy_index: index %lld invalid", (long long)index);
    int64_t shape[EMBER_MAX_DIM];
    shape[0] = index + 1;
    for (size_t d = 0; d < from->dim; d++) {
        if (to->sizes[d + 1] != from->sizes[d])
            return ember_kernel_fail(ctx, EMBER_ERR_SHAPE_MISMATCH,
                                     "et_copy_index: copy_to and copy_from differ at dim %zu", d);
        shape[d + 1] = from->sizes[d];
    }
    EK_TRY(ek_check_contiguous(ctx, from, "et_copy_index copy_from"));
    /* the resize checks (index + 1) rows against copy_to's bounds and storage */
    EK_TRY(ek_resize_out(ctx, to, shape, to->dim));
    EK_TRY(ek_check_contiguous(ctx, to, "et_copy_index copy_to"));
    if (from->nbytes > 0)
        memcpy((char *)to->data + (size_t)index * from->nbytes, from->data, from->nbytes);
    return EMBER_OK;
}
