"""TensorSpec: what the planner and the emitter know about one tensor value.

Every tensor-valued node of an execution graph carries `node.meta["spec"]`
(a TensorSpec, or a tuple of them for multi-output ops). Nodes that produce the
same storage share the same TensorSpec object (getitem of a multi-output op,
the out argument of an out-variant op and the op itself); a view that aliases
another tensor's storage has its own spec whose `base` is that tensor.

Shapes are concrete: a symbolic dimension is replaced by its upper bound from
the export's range constraints, and the spec is marked dynamic
(DYNAMIC_BOUND in the program).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Union

import torch
from torch.utils import _pytree as pytree

from . import schema as S
from .dialect import dense_strides, preserved_dim_order
from .errors import ExportError

_SCALAR_TYPES = {
    torch.uint8: S.ScalarType.BYTE,
    torch.int8: S.ScalarType.CHAR,
    torch.int16: S.ScalarType.SHORT,
    torch.int32: S.ScalarType.INT,
    torch.int64: S.ScalarType.LONG,
    torch.float16: S.ScalarType.HALF,
    torch.float32: S.ScalarType.FLOAT,
    torch.float64: S.ScalarType.DOUBLE,
    torch.bool: S.ScalarType.BOOL,
    torch.qint8: S.ScalarType.QINT8,
    torch.quint8: S.ScalarType.QUINT8,
    torch.qint32: S.ScalarType.QINT32,
    torch.bfloat16: S.ScalarType.BFLOAT16,
    torch.quint4x2: S.ScalarType.QUINT4X2,
    torch.quint2x4: S.ScalarType.QUINT2X4,
    torch.bits16: S.ScalarType.BITS16,
    torch.float8_e5m2: S.ScalarType.FLOAT8E5M2,
    torch.float8_e4m3fn: S.ScalarType.FLOAT8E4M3FN,
    torch.float8_e5m2fnuz: S.ScalarType.FLOAT8E5M2FNUZ,
    torch.float8_e4m3fnuz: S.ScalarType.FLOAT8E4M3FNUZ,
    torch.uint16: S.ScalarType.UINT16,
    torch.uint32: S.ScalarType.UINT32,
    torch.uint64: S.ScalarType.UINT64,
}


def scalar_type(dtype: torch.dtype) -> S.ScalarType:
    try:
        return _SCALAR_TYPES[dtype]
    except KeyError:
        raise ExportError(f"dtype {dtype} has no .pte scalar type") from None


def upper_bound(size: Union[int, torch.SymInt]) -> int:
    """A concrete upper bound for a (possibly symbolic) size, from the range constraints."""
    if isinstance(size, int):
        return size
    from torch.utils._sympy.numbers import int_oo
    from torch.utils._sympy.value_ranges import bound_sympy

    node = size.node
    expr = node.expr
    if expr.is_number:
        return int(expr)
    upper = bound_sympy(expr, node.shape_env.var_to_range).upper
    if upper is int_oo or upper == float("inf"):
        hint = node.hint if node.has_hint() else None
        if hint is None:
            raise ExportError(
                f"the size {expr} has no upper bound; give its torch.export.Dim a max= "
                "so that memory can be planned for it")
        warnings.warn(
            f"the size {expr} has no upper bound; ember plans memory for the traced size "
            f"{hint}. Give its torch.export.Dim a max= to run larger inputs.", stacklevel=3)
        return int(hint)
    return int(upper)




@dataclass(eq=False)
class TensorSpec:
    dtype: torch.dtype
    shape: List[int]  # concrete; the upper bound of each dynamic dimension
    dim_order: List[int]
    dynamic: bool = False
    # Constant data (weights) or the initial contents of a mutable buffer.
    data: Optional[torch.Tensor] = None
    const: bool = False  # data lives in the constant segment, not in planned memory
    mutable_buffer: Optional[str] = None  # fully qualified name of a mutated buffer
    is_input: bool = False
    is_output: bool = False
    # Memory planning results: buffer id (1..N) and byte offset; None when unplanned.
    mem_id: Optional[int] = None
    mem_offset: Optional[int] = None
    # [first, last] index of the nodes that use the storage (inclusive).
    lifetime: List[Optional[int]] = field(default_factory=lambda: [None, None])
    # Storage owner when this spec is a view of another tensor (et_view).
    base: Optional["TensorSpec"] = None
    # Tensors a MoveCall may make this value alias (the branch results of a
    # torch.cond): their storage must live as long as this value is used.
    moved_from: List["TensorSpec"] = field(default_factory=list)

    @staticmethod
    def from_val(val: torch.Tensor) -> "TensorSpec":
        shape = [upper_bound(s) for s in val.shape]
        dynamic = any(not isinstance(s, int) and not s.node.expr.is_number for s in val.shape)
        return TensorSpec(val.dtype, shape, preserved_dim_order(val), dynamic)

    @staticmethod
    def from_tensor(t: torch.Tensor, const: bool = True) -> "TensorSpec":
        spec = TensorSpec(t.dtype, list(t.shape), preserved_dim_order(t), False)
        spec.data = t.detach()
        spec.const = const
        return spec

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def is_contiguous(self) -> bool:
        """Whether the layout is row-major: the dim order is 0..n-1 but for dims of
        size 0 or 1 (upper bound 1 when dynamic), whose place moves no element."""
        return dense_strides(self.shape, self.dim_order) == \
            dense_strides(self.shape, range(len(self.shape)))

    @property
    def nbytes(self) -> int:
        return self.numel * torch.empty((), dtype=self.dtype).element_size()

    @property
    def storage(self) -> "TensorSpec":
        """The spec that owns this tensor's storage (itself unless it is a view)."""
        spec = self
        while spec.base is not None:
            spec = spec.base
        return spec

    def __repr__(self) -> str:
        where = ""
        if self.mem_id is not None:
            where = f" @mem{self.mem_id}+{self.mem_offset}"
        return (f"TensorSpec({self.dtype}, {self.shape}{' dyn' if self.dynamic else ''}"
                f"{' const' if self.const else ''}{where})")


def spec_of(val: Any) -> Any:
    """A spec tree matching a node's meta['val'] (None for non-tensors)."""

    def leaf(v: Any) -> Optional[TensorSpec]:
        return TensorSpec.from_val(v) if isinstance(v, torch.Tensor) else None

    if isinstance(val, (list, tuple)):
        return type(val)(leaf(v) for v in val) if isinstance(val, tuple) else [leaf(v) for v in val]
    return leaf(val)


def tensor_specs(spec_tree: Any) -> Sequence[TensorSpec]:
    """The TensorSpecs inside a node's spec tree."""
    return [s for s in pytree.tree_leaves(spec_tree) if isinstance(s, TensorSpec)]
