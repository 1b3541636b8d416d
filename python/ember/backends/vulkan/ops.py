"""What the Vulkan payload can run, op by op, and how its tensors are stored.

Each supported edge operator has an OpSpec: the dtypes its tensors may have,
the memory layouts (which dimension is packed four to a texel) its tensor
arguments and output accept, whether it takes constant tensors directly
(prepacking them itself), whether it handles more than 4 dimensions, and an
optional check of its arguments. The layout sets follow ExecuTorch's Vulkan
op registry (executorch/backends/vulkan/op_registry.py), so a payload runs
in either runtime with the same representations.

Layouts are written as sets of "W" (width packed), "H" (height packed) and
"C" (channels packed); storage is a 3-d texture where the tensor fits the
device's texture limits, else a buffer (only for layouts an op accepts in a
buffer: see BUFFER_OK).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

import torch
from torch.fx import Node

aten = torch.ops.aten

FP = frozenset({torch.float32, torch.float16})
INT = frozenset({torch.int32, torch.int64})
BOOL = frozenset({torch.bool})
FP_INT = FP | INT
FP_INT_BOOL = FP | INT | BOOL

ANY = frozenset({"W", "H", "C"})
WIDTH = frozenset({"W"})
CHANNELS = frozenset({"C"})

# ExecuTorch's defaults (utils.DEFAULT_TEXTURE_LIMITS, DEFAULT_BUFFER_LIMIT).
DEFAULT_TEXTURE_LIMITS = (16384, 16384, 2048)
SMALL_TEXTURE_LIMITS = (2048, 2048, 2048)
DEFAULT_BUFFER_LIMIT = 128 * 1024 * 1024


@dataclass
class OpSpec:
    """One operator's capabilities (see the module docstring)."""

    dtypes: FrozenSet[torch.dtype] = FP
    layouts: FrozenSet[str] = ANY
    out_dtypes: Optional[FrozenSet[torch.dtype]] = None
    out_layouts: Optional[FrozenSet[str]] = None
    # the output takes its primary input's layout (elementwise, views)
    follows_input: bool = True
    # all tensor arguments share one layout (binary elementwise ops)
    same_layout: bool = False
    prepacks: bool = False
    highdim: bool = False
    resize: bool = True
    buffer_ok: bool = True
    check: Optional[Callable[[Node], Optional[str]]] = None
    layouts_for: Optional[Callable[[Node], Tuple[FrozenSet[str], FrozenSet[str]]]] = None
    # the (storage, layout) pairs the op takes, when they depend on its arguments
    pairs_for: Optional[Callable[[Node], FrozenSet[Tuple[str, str]]]] = None
    # fixed (storage, layout) pairs of the outputs after the first (group
    # norm's statistics are buffers whatever its main output is)
    extra_outs: Tuple[Tuple[str, str], ...] = ()
    notes: str = ""


def val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, Node) else None


def _ndim(node: Any) -> int:
    v = val(node)
    return v.dim() if isinstance(v, torch.Tensor) else 0


def _dims_reduced(node: Node) -> List[int]:
    nd = _ndim(node.args[0])
    dims = node.args[1] if len(node.args) > 1 else None
    if dims is None:
        return list(range(nd))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(d % nd if nd else 0 for d in dims)


def _keepdim(node: Node) -> bool:
    for a in node.args:
        if isinstance(a, bool):
            return a
    return bool(node.kwargs.get("keepdim", False))


def _check_reduce(node: Node) -> Optional[str]:
    nd = _ndim(node.args[0])
    dims = _dims_reduced(node)
    if dims == [nd - 1]:
        return None
    if len(dims) > 2:
        return "reductions over more than 2 dims are not supported"
    if not _keepdim(node):
        return "keepdim=False is only supported when reducing the last dim"
    return None


def _reduce_pairs(node: Node) -> FrozenSet[Tuple[str, str]]:
    """Any texture for the general reduction (1 or 2 dims, keepdim); a width
    packed buffer for a reduction of the last dim; a 2-dim reduction packs the
    dimension it keeps."""
    nd = _ndim(node.args[0])
    dims = _dims_reduced(node)
    out = set()
    if len(dims) <= 2 and _keepdim(node):
        out |= {("T", lay) for lay in "WHC"}
    if dims == [nd - 1]:
        return frozenset(out | {("B", "W")})
    if len(dims) == 2:
        kept = min({0, 1, 2} - {nd - 1 - d for d in dims})
        out = {("T", "WHC"[kept])}
    return frozenset(out)


def _check_conv(node: Node) -> Optional[str]:
    x = val(node.args[0])
    if x.dim() == 4 and x.shape[0] != 1:
        return "2-d convolution needs batch 1"
    if x.dim() == 3 and node.args[6]:
        return "transposed 1-d convolution is not supported"
    if x.dim() not in (3, 4):
        return "only 1-d and 2-d convolutions"
    return None


def _conv_layouts(node: Node) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    x = val(node.args[0])
    if x.dim() == 3:
        w = val(node.args[1])
        groups = node.args[8]
        pointwise = w.shape[2] == 1
        depthwise = groups == x.shape[1] and w.shape[0] == x.shape[1] and w.shape[1] == 1
        if pointwise or depthwise:
            return frozenset({"H"}), frozenset({"H"})
    return CHANNELS, CHANNELS


def _check_embedding(node: Node) -> Optional[str]:
    w = val(node.args[0])
    if isinstance(w, torch.Tensor) and w.numel() > DEFAULT_BUFFER_LIMIT:
        return "embedding table exceeds the buffer limit"
    return None


def _check_same_dtype(node: Node) -> Optional[str]:
    src, dst = val(node.args[0]), val(node)
    if src is None or dst is None or src.dtype != dst.dtype or src.shape != dst.shape:
        return "only a copy that changes neither dtype nor shape"
    return None


def _check_int8pack_mm(node: Node) -> Optional[str]:
    x, w, scales = (val(a) for a in node.args[:3])
    if x.dtype not in FP or w.dtype != torch.int8 or w.dim() != 2 or scales.dtype not in FP:
        return "int8 weight-only linear needs a float input, a 2-d int8 weight, float scales"
    return None


def _check_copy_noop(node: Node) -> Optional[str]:
    src, dst = val(node.args[1]), val(node)
    if src is None or dst is None or src.dtype != dst.dtype or src.shape != dst.shape:
        return "only a copy that changes neither dtype nor shape"
    return None


def _index_tensor_form(node: Node) -> Optional[Tuple[Any, Any, int]]:
    """(self, the index, its dim) for index.Tensor with one index tensor, else None."""
    x, indices = node.args[0], node.args[1]
    if not isinstance(val(x), torch.Tensor) or not isinstance(indices, (list, tuple)):
        return None
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(given) != 1 or given[0][0] >= val(x).dim() or \
            not isinstance(val(given[0][1]), torch.Tensor):
        return None
    return val(x), val(given[0][1]), given[0][0]


def _check_index_tensor(node: Node) -> Optional[str]:
    form = _index_tensor_form(node)
    if form is None or form[1].dim() != 1:
        return "index.Tensor needs one 1-d index tensor, the other indices None"
    return None


def _index_tensor_pairs(node: Node) -> FrozenSet[Tuple[str, str]]:
    """A width packed buffer where self has more than one dim, else any."""
    form = _index_tensor_form(node)
    if form is not None and form[0].dim() > 1:
        return frozenset({("B", "W")})
    return frozenset({(st, lay) for st in "TB" for lay in "WHC"})


_UNARY = OpSpec(dtypes=FP)
def _check_binary(node: Node) -> Optional[str]:
    dts = {val(a).dtype for a in node.args[:2] if isinstance(val(a), torch.Tensor)}
    if len(dts) > 1:
        return f"operands of different dtypes {sorted(map(str, dts))} (no promotion here)"
    return None


_BINARY = OpSpec(dtypes=FP_INT, same_layout=True, highdim=True, check=_check_binary)
_VIEW = OpSpec(dtypes=FP_INT_BOOL, highdim=True)

# The registry: edge op -> capabilities. Ops ExecuTorch's registry lacks are
# marked in EMBER_ONLY (documented in docs/vulkan.md).
OPS: Dict[Any, OpSpec] = {
    # ephemeral: symbolic sizes
    aten.sym_size.int: OpSpec(dtypes=FP_INT_BOOL),
    operator.getitem: OpSpec(dtypes=FP_INT_BOOL, highdim=True),
    # unary
    **{op: _UNARY for op in (aten.abs.default, aten.cos.default, aten.exp.default,
                             aten.gelu.default, aten.hardswish.default, aten.hardtanh.default,
                             aten.neg.default, aten.relu.default, aten.sigmoid.default,
                             aten.sin.default, aten.sqrt.default, aten.rsqrt.default,
                             aten.tanh.default, aten.leaky_relu.default, aten.round.default)},
    aten.clamp.default: OpSpec(dtypes=FP_INT),
    # binary
    **{op: _BINARY for op in (aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor,
                              aten.div.Tensor, aten.div.Tensor_mode, aten.minimum.default,
                              aten.pow.Tensor_Tensor)},
    aten.mul.Scalar: OpSpec(dtypes=FP, highdim=True),
    aten.pow.Tensor_Scalar: OpSpec(dtypes=FP, highdim=True),
    **{op: OpSpec(dtypes=FP_INT, out_dtypes=BOOL, same_layout=True, highdim=True,
                  check=_check_binary)
       for op in (aten.eq.Tensor, aten.lt.Tensor, aten.le.Tensor, aten.gt.Tensor,
                  aten.ge.Tensor)},
    **{op: OpSpec(dtypes=FP_INT, out_dtypes=BOOL, highdim=True)
       for op in (aten.eq.Scalar, aten.ne.Scalar, aten.lt.Scalar, aten.le.Scalar,
                  aten.gt.Scalar, aten.ge.Scalar)},
    **{op: OpSpec(dtypes=BOOL, same_layout=True, highdim=True)
       for op in (aten.logical_and.default, aten.logical_or.default)},
    aten.logical_not.default: OpSpec(dtypes=BOOL, highdim=True),
    aten.where.self: OpSpec(dtypes=FP | BOOL, same_layout=True),
    # softmax, matrix products, normalization
    aten._softmax.default: OpSpec(dtypes=FP),
    aten._log_softmax.default: OpSpec(dtypes=FP),
    aten.mm.default: OpSpec(dtypes=FP, layouts=WIDTH, prepacks=True),
    aten.bmm.default: OpSpec(dtypes=FP, layouts=WIDTH, prepacks=True),
    aten.addmm.default: OpSpec(dtypes=FP, layouts=WIDTH, prepacks=True),
    aten.linear.default: OpSpec(dtypes=FP, layouts=WIDTH, prepacks=True),
    aten._weight_int8pack_mm.default: OpSpec(dtypes=FP | frozenset({torch.int8}), out_dtypes=FP,
                                             layouts=WIDTH, prepacks=True,
                                             check=_check_int8pack_mm),
    aten.native_layer_norm.default: OpSpec(dtypes=FP, prepacks=True),
    aten._native_batch_norm_legit_no_training.default: OpSpec(dtypes=FP, layouts=CHANNELS,
                                                              prepacks=True, buffer_ok=False),
    # reductions
    **{op: OpSpec(dtypes=FP, highdim=True, check=_check_reduce, pairs_for=_reduce_pairs)
       for op in (aten.mean.dim, aten.sum.dim_IntList, aten.amax.default, aten.amin.default)},
    aten.any.dim: OpSpec(dtypes=BOOL, highdim=True, check=_check_reduce,
                         pairs_for=_reduce_pairs),
    # convolution and pooling
    aten.convolution.default: OpSpec(dtypes=FP, layouts=CHANNELS, prepacks=True, buffer_ok=False,
                                     check=_check_conv, layouts_for=_conv_layouts),
    aten.max_pool2d_with_indices.default: OpSpec(dtypes=FP, out_dtypes=FP_INT, layouts=CHANNELS,
                                                 buffer_ok=False),
    aten.max_pool2d.default: OpSpec(dtypes=FP, layouts=CHANNELS, buffer_ok=False),
    aten.avg_pool2d.default: OpSpec(dtypes=FP, layouts=CHANNELS, buffer_ok=False),
    # indexing, creation
    aten.embedding.default: OpSpec(dtypes=FP_INT, prepacks=True, check=_check_embedding),
    aten.index_select.default: OpSpec(dtypes=FP_INT_BOOL, layouts=CHANNELS, buffer_ok=False,
                                      resize=False),
    aten.gather.default: OpSpec(dtypes=FP_INT_BOOL, highdim=True),
    aten.index.Tensor: OpSpec(dtypes=FP_INT, check=_check_index_tensor,
                              pairs_for=_index_tensor_pairs),
    # group norm: the statistics (mean, rstd: [N, groups]) are width packed buffers
    aten.native_group_norm.default: OpSpec(dtypes=FP, layouts=CHANNELS, buffer_ok=False,
                                           prepacks=True, resize=False,
                                           extra_outs=(("B", "W"), ("B", "W"))),
    # upsampling
    aten.upsample_nearest2d.vec: OpSpec(dtypes=FP, layouts=CHANNELS, buffer_ok=False,
                                        resize=False),
    aten.upsample_bilinear2d.vec: OpSpec(dtypes=FP, layouts=CHANNELS, buffer_ok=False,
                                         resize=False),
    aten.arange.start_step: OpSpec(dtypes=FP_INT),
    aten.full.default: OpSpec(dtypes=FP_INT_BOOL, resize=False),
    aten.full_like.default: OpSpec(dtypes=FP_INT_BOOL, resize=False),
    aten.scalar_tensor.default: OpSpec(dtypes=FP_INT, layouts=CHANNELS, buffer_ok=False),
    # views and copies
    aten.view_copy.default: _VIEW,
    aten.permute_copy.default: _VIEW,
    aten.unsqueeze_copy.default: _VIEW,
    aten.squeeze_copy.dims: _VIEW,
    aten.select_copy.int: _VIEW,
    aten.slice_copy.Tensor: _VIEW,
    aten.split_with_sizes_copy.default: _VIEW,
    aten.expand_copy.default: OpSpec(dtypes=FP_INT_BOOL, highdim=True, resize=False),
    aten.clone.default: _VIEW,
    aten.cat.default: OpSpec(dtypes=FP_INT),
    aten.copy.default: OpSpec(dtypes=FP_INT_BOOL, check=_check_copy_noop),
}

from .kv_cache import sdpa_with_kv_cache  # noqa: E402

# attention over a cache the delegate owns (kv_cache.py): q, k, v as (B, T, H, D)
OPS[sdpa_with_kv_cache] = OpSpec(dtypes=FP | INT, layouts=WIDTH, prepacks=True)

from .rope import apply_rotary_emb  # noqa: E402

# rotary embeddings (rope.py): llama's rope subgraph, fused in preprocess
OPS[apply_rotary_emb] = OpSpec(dtypes=FP, layouts=WIDTH, highdim=True)

# Ops this registry takes that ExecuTorch's Vulkan registry does not (their
# payload form is the generic one: schema arguments, then the output).
EMBER_ONLY = {aten.mul.Scalar, aten.any.dim}
# Ops both registries list where ember's partitioner takes more (see docs/vulkan.md).
WIDER_THAN_EXECUTORCH = {aten._weight_int8pack_mm.default}

# Ops core ATen would decompose that the payload runs whole.
KEEP_WHOLE = [aten.hardswish.default, aten._weight_int8pack_mm.default,
              aten.upsample_nearest2d.vec]


def dim_order_ops() -> Dict[Any, OpSpec]:
    """ember's dim-order copies (ember.dialect), as views."""
    from ...dialect import dim_order_ops as registered

    ops = registered()
    out: Dict[Any, OpSpec] = {}
    if "clone" in ops:
        out[ops["clone"]] = _VIEW
    if "to_copy" in ops:
        # only where it changes nothing (the payload drops it); casts stay portable
        out[ops["to_copy"]] = OpSpec(dtypes=FP_INT_BOOL, highdim=True, check=_check_same_dtype)
    return out


def spec_of(target: Any) -> Optional[OpSpec]:
    s = OPS.get(target)
    if s is None:
        s = dim_order_ops().get(target)
    return s


def out_tensors(node: Node) -> List[torch.Tensor]:
    v = val(node)
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for t in v if isinstance(t, torch.Tensor)]
    return []


def texture_extents(shape: Sequence[int], layout: str) -> Tuple[int, int, int]:
    """The 3-d texture extents (x, y, z) a tensor of shape needs in layout:
    WHCN order, the packed dim divided by 4 (rounded up), batches folded
    into z."""
    whcn = list(reversed([int(s) for s in shape])) + [1] * (4 - len(shape))
    w, h, c, n = whcn[:4]
    packed = "WHC".index(layout)
    dims = [w, h, c]
    dims[packed] = (dims[packed] + 3) // 4
    return dims[0], dims[1], dims[2] * n


def fits_texture(shape: Sequence[int], layout: str, limits: Tuple[int, int, int]) -> bool:
    if len(shape) > 4:
        return False
    return all(e <= lim for e, lim in zip(texture_extents(shape, layout), limits))


def pairs_of(spec: OpSpec, node: Optional[Node]) -> FrozenSet[Tuple[str, str]]:
    """The (storage, layout) pairs an op takes for its tensors: storage "T" (a
    3-d texture) or "B" (a buffer), layout "W", "H" or "C"."""
    if spec.pairs_for is not None and node is not None:
        return spec.pairs_for(node)
    lay = spec.layouts_for(node)[0] if spec.layouts_for is not None and node is not None \
        else spec.layouts
    out = {("T", x) for x in lay}
    if spec.buffer_ok:
        out |= {("B", x) for x in lay}
    return frozenset(out)


def fit_pairs(pairs: FrozenSet[Tuple[str, str]], shapes: Sequence[Sequence[int]],
              limits: Tuple[int, int, int], buffer_limit: int) -> FrozenSet[Tuple[str, str]]:
    """The pairs in which every one of shapes can be stored."""
    out = set()
    for st, lay in pairs:
        if st == "T" and all(fits_texture(s, lay, limits) for s in shapes):
            out.add((st, lay))
        elif st == "B" and all(_numel(s) <= buffer_limit for s in shapes):
            out.add((st, lay))
    return frozenset(out)


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n
