"""Operator facts shared by the edge and execution passes.

- The dim-order operators that replace `_to_copy`, `clone` and `empty` in edge
  programs (kernel names `dim_order_ops::*`). ember registers them with torch
  under its own namespace, `ember_dim_order`, so that it never collides with
  another library that registers `dim_order_ops` in the same process; the
  emitter writes them under their runtime name (see `kernel_name`). A dim
  order is any permutation of a tensor's dims, outermost first; the ops take
  every one, not only those a torch.memory_format names.
- Which operators an edge program may contain (core ATen, view_copy, symbolic
  shape ops, custom namespaces).
- The symbolic-integer ops and the runtime prim kernels they become.
- Marker functions of the graphs (`call_delegate`, `alloc`, `et_view`,
  `constant`).
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch._ops import OpOverload
from torch.fx import Node

from .errors import ExportError, source_location

# --------------------------------------------------------------------------- #
# dim-order operators
# --------------------------------------------------------------------------- #

DIM_ORDER_NAMESPACE = "ember_dim_order"
# Namespaces whose ops are written to the program under another name.
RUNTIME_NAMESPACES = {DIM_ORDER_NAMESPACE: "dim_order_ops"}

_DIM_ORDER_SCHEMAS = [
    "_to_dim_order_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
    "int[]? dim_order=None) -> Tensor",
    "_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None, "
    "Tensor(a!) out) -> Tensor(a!)",
    "_clone_dim_order(Tensor self, *, bool non_blocking=False, int[]? dim_order=None) -> Tensor",
    "_clone_dim_order.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None, "
    "Tensor(a!) out) -> Tensor(a!)",
    "_empty_dim_order(int[] size, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None, int[]? dim_order=None) -> Tensor",
    "_empty_dim_order.out(int[] size, *, int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)",
]

_library: Optional[torch.library.Library] = None


def check_dim_order(dim_order: Sequence[int], ndim: int) -> List[int]:
    """dim_order as a list, if it is a valid dim order for a tensor of rank ndim: every
    dimension 0..ndim-1 exactly once, outermost first. Raises ValueError otherwise."""
    order = [int(d) for d in dim_order]
    if sorted(order) != list(range(ndim)):
        must = f"list each of the dims 0..{ndim - 1} once" if ndim else "be empty"
        raise ValueError(f"dim_order {order} is not a dim order of a rank-{ndim} tensor: "
                         f"it must {must}")
    return order


def dense_strides(sizes: Sequence[Any], dim_order: Sequence[int]) -> List[Any]:
    """The strides of a dense tensor of these sizes laid out in dim_order (outermost
    first); sizes 0 and 1 count as 1, as in torch and the runtime."""
    strides: List[Any] = [1] * len(sizes)
    step: Any = 1
    for d in reversed(dim_order):
        strides[d] = step
        step = step * torch.sym_max(sizes[d], 1)
    return strides


def preserved_dim_order(t: torch.Tensor) -> List[int]:
    """The dim order torch's preserve_format gives a copy of t: t's own for a dense t,
    else the order torch picks for an expanded or overlapping tensor (no memory is
    allocated: the copy is made on the meta device). Contiguous where symbolic
    strides cannot be ordered (sizes known only at run time); any order is valid
    for a copy, and the program records the one chosen."""
    try:
        return [int(d) for d in torch.empty_like(t, device="meta").dim_order()]
    except Exception:  # a guard on a data-dependent size
        return list(range(t.dim()))


def dim_order_of(memory_format: Optional[torch.memory_format], like: Any, ndim: int) -> List[int]:
    """The dim order for a memory format; preserve_format keeps `like`'s order."""
    if memory_format in (None, torch.preserve_format):
        if isinstance(like, torch.Tensor):
            return preserved_dim_order(like)
        return list(range(ndim))
    if memory_format == torch.contiguous_format:
        return list(range(ndim))
    if memory_format == torch.channels_last and ndim == 4:
        return [0, 2, 3, 1]
    if memory_format == torch.channels_last_3d and ndim == 5:
        return [0, 2, 3, 4, 1]
    raise ValueError(f"memory format {memory_format} does not apply to a rank-{ndim} tensor")


# Eager kernels of the dim-order ops. Each builds its result directly in the
# dim order asked for (torch.empty_permuted, or out re-strided in place), so
# every permutation of every rank works, not only the orders that a
# torch.memory_format names. dim_order=None keeps the input's layout
# (preserve_format) or, for empty, is contiguous.


def _order(op: str, ndim: int, dim_order: Optional[Sequence[int]],
           like: Optional[torch.Tensor] = None) -> List[int]:
    """The layout op makes: dim_order, checked; if None, like's (else contiguous)."""
    if dim_order is None:
        return preserved_dim_order(like) if like is not None else list(range(ndim))
    try:
        return check_dim_order(dim_order, ndim)
    except ValueError as e:
        raise ValueError(f"{DIM_ORDER_NAMESPACE}::{op}: {e}") from None


def _restride_out(out: torch.Tensor, sizes: Sequence[Any], dim_order: List[int]) -> None:
    """Resizes out in place to sizes, laid out in dim_order (its storage grows if needed)."""
    strides = dense_strides(sizes, dim_order)
    if list(out.shape) != list(sizes) or list(out.stride()) != strides:
        out.resize_(sizes)  # storage for every element; the strides come next
        out.as_strided_(sizes, strides)


def _copy(op: str, self: torch.Tensor, dim_order: Optional[Sequence[int]], non_blocking: bool,
          **options: Any) -> torch.Tensor:
    out = torch.empty_permuted(self.shape, _order(op, self.dim(), dim_order, self), **options)
    return out.copy_(self, non_blocking=non_blocking)


def _copy_out(op: str, self: torch.Tensor, dim_order: Optional[Sequence[int]],
              non_blocking: bool, out: torch.Tensor) -> torch.Tensor:
    _restride_out(out, self.shape, _order(op, self.dim(), dim_order, self))
    return out.copy_(self, non_blocking=non_blocking)


def _to_dim_order_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None,
                       non_blocking=False, dim_order=None):
    return _copy("_to_dim_order_copy", self, dim_order, non_blocking,
                 dtype=self.dtype if dtype is None else dtype, layout=layout,
                 device=self.device if device is None else device, pin_memory=bool(pin_memory))


def _to_dim_order_copy_out(self, *, non_blocking=False, dim_order=None, out):
    return _copy_out("_to_dim_order_copy.out", self, dim_order, non_blocking, out)


def _clone_dim_order(self, *, non_blocking=False, dim_order=None):
    return _copy("_clone_dim_order", self, dim_order, non_blocking, dtype=self.dtype,
                 device=self.device)


def _clone_dim_order_out(self, *, non_blocking=False, dim_order=None, out):
    if out.dtype != self.dtype:
        raise RuntimeError(f"{DIM_ORDER_NAMESPACE}::_clone_dim_order.out: out has dtype "
                           f"{out.dtype}, self has {self.dtype}")
    return _copy_out("_clone_dim_order.out", self, dim_order, non_blocking, out)


def _empty_dim_order(size, *, dtype=None, layout=None, device=None, pin_memory=None,
                     dim_order=None):
    order = _order("_empty_dim_order", len(size), dim_order)
    return torch.empty_permuted(size, order, dtype=dtype, layout=layout, device=device,
                                pin_memory=bool(pin_memory))


def _empty_dim_order_out(size, *, dim_order=None, out):
    _restride_out(out, size, _order("_empty_dim_order.out", len(size), dim_order))
    return out


def _register_dim_order_ops() -> None:
    """Defines the ops under DIM_ORDER_NAMESPACE. They are explicit kernels (with the
    same functions as fake kernels for tracing), so a graph that calls them keeps
    them: torch.export and decompositions never rewrite them into other ops."""
    global _library
    if _library is not None:
        return
    lib = torch.library.Library(DIM_ORDER_NAMESPACE, "DEF")
    for s in _DIM_ORDER_SCHEMAS:
        lib.define(s)
    for name, fn in (("_to_dim_order_copy", _to_dim_order_copy),
                     ("_to_dim_order_copy.out", _to_dim_order_copy_out),
                     ("_clone_dim_order", _clone_dim_order),
                     ("_clone_dim_order.out", _clone_dim_order_out),
                     ("_empty_dim_order", _empty_dim_order),
                     ("_empty_dim_order.out", _empty_dim_order_out)):
        lib.impl(name, fn, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{DIM_ORDER_NAMESPACE}::{name}", fn, lib=lib)
    _library = lib


def dim_order_ops() -> Dict[str, OpOverload]:
    """The functional dim-order ops, registered on first use."""
    _register_dim_order_ops()
    ns = getattr(torch.ops, DIM_ORDER_NAMESPACE)
    return {
        "to_copy": ns._to_dim_order_copy.default,
        "clone": ns._clone_dim_order.default,
        "empty": ns._empty_dim_order.default,
    }


def is_dim_order_op(target: Any) -> bool:
    """Whether target is a dim-order op, ember's or the reference exporter's (both run
    as `dim_order_ops::*` kernels), functional or out variant."""
    return isinstance(target, OpOverload) and \
        kernel_name(target)[0].startswith(RUNTIME_NAMESPACES[DIM_ORDER_NAMESPACE] + "::")


def dim_order_arg(node: Node) -> Optional[List[int]]:
    """The dim_order argument of a dim-order op node, checked against the rank of the
    tensor the op makes; None for other nodes and where the op keeps its input's
    order. Raises ExportError naming the node and its source line when the order is
    not a permutation of that rank."""
    if node.op != "call_function" or not is_dim_order_op(node.target):
        return None
    order = node.kwargs.get("dim_order")
    if order is None:
        return None
    src = node.args[0]
    if isinstance(src, Node):
        val = src.meta.get("val")
        ndim = val.dim() if isinstance(val, torch.Tensor) else None
    else:  # _empty_dim_order: a list of sizes
        ndim = len(src)
    try:
        if ndim is None:
            raise ValueError(f"dim_order {list(order)} cannot be checked: the op's input "
                             "has no traced tensor value")
        return check_dim_order(order, ndim)
    except (TypeError, ValueError) as e:
        raise ExportError(
            f"{op_display_name(node.target)} (node {node.name}, from {source_location(node)}): "
            f"{e}. A dim order lists every dimension once, outermost first: [0, 2, 1] "
            "stores a [B, C, T] tensor as [B, T, C].") from None


# --------------------------------------------------------------------------- #
# Names
# --------------------------------------------------------------------------- #


def kernel_name(op: OpOverload) -> Tuple[str, str]:
    """(name, overload) of an op as the runtime registers it, e.g. ('aten::add', 'out')."""
    ns, rest = op._schema.name.split("::", 1)
    ns = RUNTIME_NAMESPACES.get(ns, ns)
    overload = op._overloadname
    return f"{ns}::{rest}", "" if overload == "default" else overload


def op_display_name(target: Any) -> str:
    if isinstance(target, OpOverload):
        name, overload = kernel_name(target)
        return f"{name}.{overload}" if overload else name
    return getattr(target, "__name__", str(target))


# --------------------------------------------------------------------------- #
# Symbolic-integer ops
# --------------------------------------------------------------------------- #

# Python-level operations on SymInts/SymFloats/SymBools and their runtime kernels.
PYTHON_SYM_OPS: Dict[Callable, str] = {
    operator.add: "executorch_prim::add.Scalar",
    operator.sub: "executorch_prim::sub.Scalar",
    operator.mul: "executorch_prim::mul.Scalar",
    operator.floordiv: "executorch_prim::floordiv.Scalar",
    operator.truediv: "executorch_prim::truediv.Scalar",
    operator.mod: "executorch_prim::mod.Scalar",
    operator.eq: "executorch_prim::eq.Scalar",
    operator.gt: "executorch_prim::gt.Scalar",
    operator.ge: "executorch_prim::ge.Scalar",
    operator.lt: "executorch_prim::lt.Scalar",
    operator.le: "executorch_prim::le.Scalar",
    operator.neg: "executorch_prim::neg.Scalar",
    math.ceil: "executorch_prim::ceil.Scalar",
    builtins.round: "executorch_prim::round.Scalar",
    math.trunc: "executorch_prim::trunc.Scalar",
    torch.sym_float: "executorch_prim::sym_float.Scalar",
    torch.sym_int: "executorch_prim::sym_int.Scalar",
    torch.sym_max: "executorch_prim::sym_max.Scalar",
    torch.sym_min: "executorch_prim::sym_min.Scalar",
    torch.sym_not: "executorch_prim::sym_not.Scalar",
    torch.sym_ite: "executorch_prim::sym_ite.Scalar",
}

# ATen ops on symbolic values that the runtime runs as prim kernels.
ATEN_SYM_OPS = {
    torch.ops.aten.sym_size.int,
    torch.ops.aten.sym_numel.default,
    torch.ops.aten.sym_stride.int,
    torch.ops.aten._local_scalar_dense.default,
}

# Assertions that only guard the trace; they run nowhere.
ASSERT_OPS = {
    torch.ops.aten._assert_scalar.default,
    torch.ops.aten._assert_tensor_metadata.default,
    torch.ops.aten.sym_constrain_range.default,
    torch.ops.aten.sym_constrain_range_for_size.default,
    torch.ops.aten._assert_async.default,
    torch.ops.aten._assert_async.msg,
    torch.ops.aten._functional_assert_async.msg,
    torch.ops.aten._functional_assert_scalar.default,
}


def is_sym_op(target: Any) -> bool:
    return target in PYTHON_SYM_OPS or target in ATEN_SYM_OPS


# --------------------------------------------------------------------------- #
# Which ops an edge program may hold
# --------------------------------------------------------------------------- #


# Non-core ATen ops that decompositions leave behind and runtimes implement anyway
# (the reference exporter allows the same ones).
ALLOWED_NON_CORE = {
    torch.ops.aten.max.default,
    torch.ops.aten.min.default,
    torch.ops.aten.full_like.default,
    torch.ops.aten._upsample_bilinear2d_aa.default,
}


def is_core_aten(op: OpOverload) -> bool:
    return torch.Tag.core in op.tags or torch.Tag.view_copy in op.tags or op in ALLOWED_NON_CORE


def is_allowed_edge_op(target: Any, extra: Sequence[OpOverload] = ()) -> bool:
    """Whether `target` may appear in an edge program outside a delegate."""
    if target is operator.getitem or is_sym_op(target) or target in ASSERT_OPS or \
            target is call_delegate:
        return True
    if isinstance(target, torch._ops.HigherOrderOperator):
        return target in (torch.ops.higher_order.cond,)
    if not isinstance(target, OpOverload):
        return False
    if target.namespace != "aten":
        return True  # custom ops and dim-order ops; they need a kernel of their own
    return is_core_aten(target) or target in extra


# --------------------------------------------------------------------------- #
# Graph markers
# --------------------------------------------------------------------------- #


def call_delegate(lowered: Any, *args: Any) -> Any:
    """Calls a lowered backend module (executorch_call_delegate): the edge and
    execution graphs hold a delegated subgraph as `call_delegate(lowered, *inputs)`,
    and the emitter writes it as a DelegateCall. Runs the subgraph when executed."""
    return lowered(*args)


def is_delegate_call(node: Node) -> bool:
    return node.op == "call_function" and node.target is call_delegate


# The execution graph's own markers: never executed, the emitter reads them.


def alloc(spec: Any) -> Any:
    """Marks memory for an out-variant argument; node.meta['spec'] describes it."""
    raise RuntimeError("ember.dialect.alloc is a graph marker and cannot run")


def et_view(base: Any, size: List[Any]) -> Any:
    """A view of `base` with new sizes that shares its storage (executorch_prim::et_view)."""
    raise RuntimeError("ember.dialect.et_view is a graph marker and cannot run")


def constant() -> Any:
    """A tensor computed at export time; node.meta['spec'] holds its data."""
    raise RuntimeError("ember.dialect.constant is a graph marker and cannot run")
