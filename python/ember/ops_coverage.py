"""Which core ATen operators the runtime can run, derived from torch itself.

The list of operators is never kept by hand: it is every `torch.ops.aten`
overload whose tags include `torch.Tag.core` (found through torch's full
schema list, so packets torch has not loaded yet count too), plus the edge
dialect's own operators (the dim-order ops and torch's `quantized_decomposed`
namespace). Each one maps to the kernel key(s) a program would name for it,
by the same rules the exporter applies:

- a view op becomes its `_copy` variant (`aten.permute.default` ->
  `aten::permute_copy.out`);
- `_to_copy`, `clone` and `empty.memory_format` become the dim-order ops
  (`dim_order_ops::_to_dim_order_copy.out`, ...);
- symbolic-integer ops run as prim kernels under their own name
  (`aten::sym_size.int`);
- everything else takes the out variant that `passes.out_variants` finds
  (`aten.add.Tensor` -> `aten::add.out`).

    from ember import ops_coverage
    for entry in ops_coverage.core_ops():
        print(entry.name, entry.kernel_keys, entry.implemented)
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch._ops import OpOverload

from . import dialect
from .passes.out_variants import out_variant

__all__ = [
    "OpEntry",
    "core_aten_overloads",
    "kernel_keys",
    "core_ops",
    "edge_dialect_ops",
    "op_name",
    "is_symbolic",
    "DTYPES",
]

#: The dtypes the coverage table reports, in its column order.
DTYPES: Tuple[torch.dtype, ...] = (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
    torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool,
)


@dataclasses.dataclass(frozen=True)
class OpEntry:
    """One operator and the kernels the runtime needs for it.

    name: `aten.add.Tensor` (torch's spelling); op: the overload itself;
    kernel_keys: the runtime keys (`aten::add.out`), empty when the op has no
    form a program can call (then `reason` says why); kind: "core",
    "dim_order" or "quantized".
    """

    name: str
    op: OpOverload
    kernel_keys: Tuple[str, ...]
    kind: str
    reason: str = ""

    @property
    def implemented(self) -> bool:
        """True if the runtime has every kernel this op needs."""
        from .runtime import has_kernel

        return bool(self.kernel_keys) and all(has_kernel(k) for k in self.kernel_keys)

    @property
    def missing(self) -> Tuple[str, ...]:
        from .runtime import has_kernel

        return tuple(k for k in self.kernel_keys if not has_kernel(k))


def op_name(op: OpOverload) -> str:
    """`aten.add.Tensor`: torch's spelling of an overload."""
    return f"{op.namespace}.{op._schema.name.split('::', 1)[1]}.{op._overloadname}"


def _overloads_of_namespace(namespace: str) -> List[OpOverload]:
    ops: List[OpOverload] = []
    seen = set()
    packets = getattr(torch.ops, namespace)
    for schema in torch._C._jit_get_all_schemas():
        ns, name = schema.name.split("::", 1)
        if ns != namespace or (name, schema.overload_name) in seen:
            continue
        seen.add((name, schema.overload_name))
        try:
            op = getattr(getattr(packets, name), schema.overload_name or "default")
        except (AttributeError, RuntimeError):  # a schema without a Python binding
            continue
        ops.append(op)
    return ops


def core_aten_overloads() -> List[OpOverload]:
    """Every aten overload tagged `core`, sorted by name."""
    ops = [op for op in _overloads_of_namespace("aten") if torch.Tag.core in op.tags]
    return sorted(ops, key=op_name)


def _key(op: OpOverload) -> str:
    name, overload = dialect.kernel_name(op)
    return f"{name}.{overload}" if overload else name


def _dim_order_replacement(op: OpOverload) -> Optional[OpOverload]:
    """The dim-order op that to_edge puts in place of `op` (see edge.use_dim_order_ops)."""
    aten = torch.ops.aten
    which = {aten._to_copy.default: "to_copy", aten.clone.default: "clone",
             aten.empty.memory_format: "empty"}.get(op)
    return dialect.dim_order_ops()[which] if which else None


def is_symbolic(op: OpOverload) -> bool:
    """Whether `op` works on symbolic integers (it runs as a prim kernel)."""
    if dialect.is_sym_op(op):
        return True
    # sym_* ops that the exporter does not list yet still run as prim kernels.
    return op.namespace == "aten" and op._schema.name.split("::", 1)[1].startswith("sym_")


def kernel_keys(op: OpOverload) -> Tuple[Tuple[str, ...], str]:
    """(kernel keys a program needs for `op`, reason when there are none)."""
    if is_symbolic(op):
        return (_key(op),), ""
    target = op
    replacement = _dim_order_replacement(op)
    if replacement is not None:
        target = replacement
    elif op.is_view:
        name = op._schema.name.split("::", 1)[1]
        packet = getattr(getattr(torch.ops, op.namespace), f"{name}_copy", None)
        copy = getattr(packet, op._overloadname, None) if packet is not None else None
        if copy is None:
            return (), "view op without a _copy variant"
        target = copy
    found = out_variant(target)
    if found is None:
        return (), f"{op_name(target)} has no out variant"
    return (_key(found[0]),), ""


def core_ops() -> List[OpEntry]:
    """Every core aten overload with the kernel keys it needs."""
    entries = []
    for op in core_aten_overloads():
        keys, reason = kernel_keys(op)
        entries.append(OpEntry(op_name(op), op, keys, "core", reason))
    return entries


def _quantized_decomposed_ops() -> List[OpOverload]:
    try:  # registers the namespace with torch
        import torch.ao.quantization.fx._decomposed  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the torch build
        return []
    ops = _overloads_of_namespace("quantized_decomposed")
    # Private helpers and training-only fake quantization never reach a program.
    return sorted((op for op in ops if not op._schema.name.split("::", 1)[1].startswith(
        ("_", "fake_quant"))), key=op_name)


def _quantized_key(op: OpOverload) -> str:
    found = out_variant(op)
    if found is not None:
        return _key(found[0])
    # torch registers no out forms here. ExecuTorch's quantized kernel library
    # names them `out` for the default overload and `<Overload>_out` (first
    # letter capitalized: `quantize_per_tensor.Tensor_out`) for the others.
    name = op._schema.name.split("::", 1)[1]
    overload = op._overloadname
    suffix = "out" if overload == "default" else overload[:1].upper() + overload[1:] + "_out"
    return f"quantized_decomposed::{name}.{suffix}"


def edge_dialect_ops() -> List[OpEntry]:
    """The dim-order ops and the `quantized_decomposed` ops of the edge dialect."""
    entries = []
    for op in dialect.dim_order_ops().values():
        keys, reason = kernel_keys(op)
        entries.append(OpEntry(_key(op), op, keys, "dim_order", reason))
    for op in _quantized_decomposed_ops():
        entries.append(OpEntry(op_name(op), op, (_quantized_key(op),), "quantized"))
    return entries


def summary(entries: Sequence[OpEntry]) -> Dict[str, int]:
    """{"total": n, "implemented": n} over entries."""
    return {"total": len(entries), "implemented": sum(e.implemented for e in entries)}
