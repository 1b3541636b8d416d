"""Operator facts shared by the edge and execution passes.

- The dim-order operators that replace `_to_copy`, `clone` and `empty` in edge
  programs (kernel names `dim_order_ops::*`). ember registers them with torch
  under its own namespace, `ember_dim_order`, so that it never collides with
  another library that registers `dim_order_ops` in the same process; the
  emitter writes them under their runtime name (see `kernel_name`).
- Which operators an edge program may contain (core ATen, view_copy, symbolic
  shape ops, custom namespaces).
- The symbolic-integer ops and the runtime prim kernels they become.
- Marker functions of the execution graph (`alloc`, `et_view`).
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch._ops import OpOverload

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


def memory_format_of(dim_order: Optional[Sequence[int]]) -> Optional[torch.memory_format]:
    """The torch memory format a dim order stands for (None: keep the input's)."""
    if dim_order is None:
        return None
    d = list(dim_order)
    if d == list(range(len(d))):
        return torch.contiguous_format
    if len(d) == 4 and d == [0, 2, 3, 1]:
        return torch.channels_last
    if len(d) == 5 and d == [0, 2, 3, 4, 1]:
        return torch.channels_last_3d
    raise ValueError(f"dim order {d} has no torch memory format")


def dim_order_of(memory_format: Optional[torch.memory_format], like: Any, ndim: int) -> List[int]:
    """The dim order for a memory format; preserve_format keeps `like`'s order."""
    if memory_format in (None, torch.preserve_format):
        if isinstance(like, torch.Tensor):
            return [int(d) for d in like.dim_order()]
        return list(range(ndim))
    if memory_format == torch.contiguous_format:
        return list(range(ndim))
    if memory_format == torch.channels_last:
        return [0, 2, 3, 1]
    if memory_format == torch.channels_last_3d:
        return [0, 2, 3, 4, 1]
    raise ValueError(f"memory format {memory_format} is not supported")


def _register_dim_order_ops() -> None:
    global _library
    if _library is not None:
        return
    lib = torch.library.Library(DIM_ORDER_NAMESPACE, "DEF")
    for s in _DIM_ORDER_SCHEMAS:
        lib.define(s)

    def to_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None,
                non_blocking=False, dim_order=None):
        return torch.ops.aten._to_copy.default(
            self, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
            non_blocking=non_blocking, memory_format=memory_format_of(dim_order))

    def to_copy_out(self, *, non_blocking=False, dim_order=None, out):
        return torch.ops.aten._to_copy.out(self, non_blocking=non_blocking,
                                           memory_format=memory_format_of(dim_order), out=out)

    def clone(self, *, non_blocking=False, dim_order=None):
        return torch.ops.aten.clone.default(self, memory_format=memory_format_of(dim_order))

    def clone_out(self, *, non_blocking=False, dim_order=None, out):
        return torch.ops.aten.clone.out(self, memory_format=memory_format_of(dim_order), out=out)

    def empty(size, *, dtype=None, layout=None, device=None, pin_memory=None, dim_order=None):
        return torch.ops.aten.empty.memory_format(
            size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
            memory_format=memory_format_of(dim_order))

    def empty_out(size, *, dim_order=None, out):
        return torch.ops.aten.empty.out(size, memory_format=memory_format_of(dim_order), out=out)

    for name, fn in (("_to_dim_order_copy", to_copy), ("_to_dim_order_copy.out", to_copy_out),
                     ("_clone_dim_order", clone), ("_clone_dim_order.out", clone_out),
                     ("_empty_dim_order", empty), ("_empty_dim_order.out", empty_out)):
        lib.impl(name, fn, "CompositeImplicitAutograd")
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
    from .backend.lowered import call_delegate

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
# Execution-graph markers (never executed; the emitter reads them)
# --------------------------------------------------------------------------- #


def alloc(spec: Any) -> Any:
    """Marks memory for an out-variant argument; node.meta['spec'] describes it."""
    raise RuntimeError("ember.dialect.alloc is a graph marker and cannot run")


def et_view(base: Any, size: List[Any]) -> Any:
    """A view of `base` with new sizes that shares its storage (executorch_prim::et_view)."""
    raise RuntimeError("ember.dialect.et_view is a graph marker and cannot run")


def constant() -> Any:
    """A tensor computed at export time; node.meta['spec'] holds its data."""
    raise RuntimeError("ember.dialect.constant is a graph marker and cannot run")
