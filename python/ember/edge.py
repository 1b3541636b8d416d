"""to_edge: an exported ATen program -> an edge program the runtime's kernels accept.

Steps, each a small function over the graph:

1. core-ATen decomposition with torch's own table (`ep.run_decompositions`),
   minus the ops the caller preserves;
2. IR validity: only core ATen, custom-namespace ops, symbolic-size ops and
   the caller's exceptions remain, else an error names the op and its source line;
   every dim-order op's dim_order is a permutation of its tensor's dims;
3. view ops become their `_copy` variants (view -> view_copy, permute ->
   permute_copy, ...), asserts that only guard the trace go away;
4. Python scalars passed where a schema wants a Tensor become 0-dim constant
   tensors (int64 / float32 / bool, as the reference exporter does; for
   add/sub/mul/div/minimum directly in the dtype the op computes in), and
   tensor arguments of those ops are cast to that dtype, so kernels never see
   mixed dtypes there;
5. values are traced again (copies of views are contiguous, and layouts flow
   downstream), then no-op copies disappear;
6. `_to_copy`, `clone`, `empty` become the dim-order ops; preserve_format keeps
   the input's layout as this program has it, whatever permutation that is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch._ops import OpOverload
from torch.export import ExportedProgram
from torch.fx import GraphModule, Node

from . import dialect
from .capture import delegate_ops_to_calls
from .errors import IRValidityError, source_location
from .graph_utils import (
    call_before,
    fake_mode_of,
    first_user_input,
    new_constant_spec,
    rebuild_program,
    repropagate_vals,
    resync_signature,
    subgraphs,
)
from .passes.debug_handles import assign_debug_handles
from .passes.noop import remove_noops
from .passes.reinplace import is_auto_functionalized

aten = torch.ops.aten


@dataclass
class EdgeCompileConfig:
    """Configuration of to_edge (names follow ExecuTorch's)."""

    # Reject ops outside core ATen (with the op name and its source line).
    _check_ir_validity: bool = True
    # Keep _to_copy / clone / empty instead of the dim-order ops.
    _skip_dim_order: bool = False
    # ATen ops allowed in the edge program although they are not core ATen.
    _core_aten_ops_exception_list: List[torch._ops.OpOverload] = field(default_factory=list)
    # Ops that the core-ATen decomposition leaves whole.
    preserve_ops: List[torch._ops.OpOverload] = field(default_factory=list)

# Binary ops whose kernels expect both tensors in the op's computation dtype,
# with the kind of type promotion each one follows.
_PROMOTING_OPS = {
    aten.add.Tensor: "DEFAULT",
    aten.sub.Tensor: "DEFAULT",
    aten.mul.Tensor: "DEFAULT",
    aten.div.Tensor: "INT_TO_FLOAT",
    aten.div.Tensor_mode: "DEFAULT",
    aten.minimum.default: "DEFAULT",
}


# --------------------------------------------------------------------------- #
# Decomposition and validity
# --------------------------------------------------------------------------- #


def decompose(ep: ExportedProgram, preserve: Sequence[OpOverload] = ()) -> ExportedProgram:
    """Core-ATen decomposition with torch's table, keeping `preserve` intact."""
    table = torch.export.default_decompositions()
    for op in preserve:
        table.pop(op, None)
    # linalg_vector_norm is not core ATen, but torch's table leaves it alone.
    from torch._decomp import get_decompositions

    for op, fn in get_decompositions([aten.linalg_vector_norm.default]).items():
        if op not in preserve:
            table[op] = fn
    return ep.run_decompositions(table)


def check_ir_validity(gm: GraphModule, allowed: Sequence[OpOverload] = ()) -> None:
    """Raises IRValidityError naming every op an edge program may not hold."""
    bad: Dict[str, List[Node]] = {}
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if isinstance(n.target, OpOverload) and n.target in allowed:
            continue
        if is_auto_functionalized(n) and dialect.is_allowed_edge_op(n.args[0], allowed):
            continue  # a mutating op traced functionally; to_executorch runs it in place
        if not dialect.is_allowed_edge_op(n.target, allowed):
            bad.setdefault(dialect.op_display_name(n.target), []).append(n)
    if not bad:
        return
    lines = []
    for name, nodes in bad.items():
        lines.append(f"  {name}: from {source_location(nodes[0])}"
                     + (f" (and {len(nodes) - 1} more)" if len(nodes) > 1 else ""))
        example = nodes[0].target
    hint = (f"torch.ops.{example.namespace}.{example._schema.name.split('::')[1]}."
            f"{example._overloadname}" if isinstance(example, OpOverload) else str(example))
    raise IRValidityError(
        "these operators are not in the core ATen opset, so there is no portable kernel "
        "contract for them:\n" + "\n".join(lines) + "\n"
        "Rewrite the model with core ops, delegate them to a backend (to_edge_transform_and_lower "
        "with a partitioner), or, if your runtime has a kernel for them, allow them with "
        f"EdgeCompileConfig(_core_aten_ops_exception_list=[{hint}]). "
        "EdgeCompileConfig(_check_ir_validity=False) turns the check off.")


def check_dim_orders(gm: GraphModule) -> None:
    """Raises ExportError naming the first dim-order op (in gm or its control-flow
    branches) whose dim_order is not a permutation of its tensor's dims."""
    for g in [gm] + subgraphs(gm):
        for n in g.graph.nodes:
            dialect.dim_order_arg(n)


# Functional variants that torch's decomposition writes for mutating core ops,
# with the op they stand for. Both return the op's outputs followed by the new
# values of its mutated arguments, the layout of auto_functionalized.
_FUNCTIONAL_VARIANTS = {
    aten._native_batch_norm_legit_functional.default: aten._native_batch_norm_legit.default,
}


def functional_variants_to_auto(gm: GraphModule) -> None:
    """`_native_batch_norm_legit_functional(x, ..., running_mean, running_var, ...)`
    (batch norm in training mode) -> `auto_functionalized(_native_batch_norm_legit, ...)`,
    which to_executorch runs in place on the running stats like any mutating op."""
    for n in gm.graph.nodes:
        op = _FUNCTIONAL_VARIANTS.get(n.target) if n.op == "call_function" else None
        if op is None:
            continue
        names = [a.name for a in op._schema.arguments]
        kwargs = dict(zip(names, n.args))
        kwargs.update(n.kwargs)
        n.target = torch.ops.higher_order.auto_functionalized
        n.args = (op,)
        n.kwargs = kwargs


def remove_asserts(gm: GraphModule) -> None:
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and n.target in dialect.ASSERT_OPS and not n.users:
            gm.graph.erase_node(n)


# --------------------------------------------------------------------------- #
# Views -> copies
# --------------------------------------------------------------------------- #


def _copy_variant(op: OpOverload) -> Optional[OpOverload]:
    name = op._schema.name.split("::", 1)[1]
    packet = getattr(getattr(torch.ops, op.namespace), f"{name}_copy", None)
    if packet is None:
        return None
    return getattr(packet, op._overloadname, None)


def replace_views_with_copies(gm: GraphModule) -> None:
    """view -> view_copy, permute -> permute_copy, ...: edge programs are copy-only."""
    fake_mode = fake_mode_of(gm)
    for n in gm.graph.nodes:
        if n.op != "call_function" or not isinstance(n.target, OpOverload):
            continue
        if not n.target.is_view:
            continue
        target = _copy_variant(n.target)
        if target is None:
            raise IRValidityError(
                f"view op {dialect.op_display_name(n.target)} has no _copy variant; it comes "
                f"from {source_location(n)}")
        n.target = target
        # A copy holds the same values as the view, laid out contiguously.
        with fake_mode:
            n.meta["val"] = torch.fx.node.map_aggregate(
                n.meta["val"], lambda v: torch.empty_like(v, memory_format=torch.contiguous_format)
                if isinstance(v, torch.Tensor) else v)


# --------------------------------------------------------------------------- #
# Scalars -> 0-dim constant tensors, mixed dtypes -> casts
# --------------------------------------------------------------------------- #


class _ConstantLifter:
    """Adds 0-dim constant placeholders (one per distinct value and dtype)."""

    def __init__(self, ep: ExportedProgram, gm: GraphModule) -> None:
        self.ep = ep
        self.gm = gm
        self.fake_mode = fake_mode_of(gm)
        self.anchor = first_user_input(gm, ep.graph_signature)
        self.cache: Dict[Tuple[torch.dtype, str], Node] = {}
        self.constants: Dict[str, torch.Tensor] = {}
        self.specs: Dict[str, Any] = {}
        self.user: Optional[Node] = None
        self._count = 0

    def _fresh_name(self) -> str:
        taken = set(self.ep.constants) | set(self.constants) | {
            n.name for n in self.gm.graph.nodes}
        while f"_lifted_tensor_constant{self._count}" in taken:
            self._count += 1
        return f"_lifted_tensor_constant{self._count}"

    def lift(self, value: Union[bool, int, float], dtype: Optional[torch.dtype]) -> Node:
        t = torch.tensor(value) if dtype is None else torch.tensor(value, dtype=dtype)
        key = (t.dtype, repr(t.item()))
        if key in self.cache:
            return self.cache[key]
        name = self._fresh_name()
        with self.gm.graph.inserting_before(self.anchor):
            node = self.gm.graph.placeholder(name)
        node.meta["val"] = self.fake_mode.from_tensor(t, static_shapes=True)
        self.constants[name] = t
        self.specs[node.name] = new_constant_spec(node.name, name)
        self.cache[key] = node
        return node


def _tensor_args(op: OpOverload, n: Node) -> List[Tuple[bool, Union[int, str], Any]]:
    """(is_kwarg, position or name, value) of the arguments whose schema type is Tensor."""
    out = []
    for i, arg in enumerate(op._schema.arguments):
        if not isinstance(arg.type, torch.TensorType):
            continue
        if not arg.kwarg_only and i < len(n.args):
            out.append((False, i, n.args[i]))
        elif arg.name in n.kwargs:
            out.append((True, arg.name, n.kwargs[arg.name]))
    return out


def _set_arg(n: Node, is_kwarg: bool, where: Union[int, str], value: Any) -> None:
    if is_kwarg:
        kw = dict(n.kwargs)
        kw[where] = value
        n.kwargs = kw
    else:
        args = list(n.args)
        args[where] = value
        n.args = tuple(args)


def _is_number(v: Any) -> bool:
    return isinstance(v, (bool, int, float)) and not isinstance(v, torch.SymInt)


def _promotion_dtype(op: OpOverload, vals: List[Any]) -> Optional[torch.dtype]:
    from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

    kind = _PROMOTING_OPS[op]
    if any(not isinstance(v, (torch.Tensor, bool, int, float)) for v in vals):
        return None
    return elementwise_dtypes(
        *vals, type_promotion_kind=getattr(ELEMENTWISE_TYPE_PROMOTION_KIND, kind))[1]


class _InlineScalars:
    """In a control-flow branch (which has no constants of its own), scalars become
    `aten::scalar_tensor` calls in the branch."""

    def __init__(self, gm: GraphModule) -> None:
        self.gm = gm
        self.fake_mode = fake_mode_of(gm)
        self.user: Optional[Node] = None

    def lift(self, value: Union[bool, int, float], dtype: Optional[torch.dtype]) -> Node:
        if dtype is None:
            dtype = torch.tensor(value).dtype
        return call_before(self.gm, self.user, aten.scalar_tensor.default, (value,),
                           {"dtype": dtype}, fake_mode=self.fake_mode)


def lift_scalars(ep: Optional[ExportedProgram], gm: GraphModule) -> Any:
    lifter: Any = _ConstantLifter(ep, gm) if ep is not None else _InlineScalars(gm)
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or not isinstance(n.target, OpOverload):
            continue
        targs = _tensor_args(n.target, n)
        if not targs:
            continue
        lifter.user = n
        # A SymInt where a Tensor is expected: materialize it as a 0-dim tensor.
        for is_kw, where, v in targs:
            if isinstance(v, Node) and not isinstance(v.meta.get("val"), torch.Tensor):
                val = v.meta.get("val")
                dtype = (torch.bool if isinstance(val, torch.SymBool) else torch.float32
                         if isinstance(val, torch.SymFloat) else torch.int64)
                st = call_before(gm, n, aten.scalar_tensor.default, (v,), {"dtype": dtype},
                                 fake_mode=lifter.fake_mode)
                _set_arg(n, is_kw, where, st)
        targs = _tensor_args(n.target, n)
        promote = None
        if n.target in _PROMOTING_OPS:
            vals = [v.meta["val"] if isinstance(v, Node) else v for _, _, v in targs]
            promote = _promotion_dtype(n.target, vals)
        for is_kw, where, v in targs:
            if _is_number(v):
                _set_arg(n, is_kw, where, lifter.lift(v, promote))
            elif (promote is not None and isinstance(v, Node)
                  and v.meta["val"].dtype != promote):
                cast = call_before(gm, n, aten._to_copy.default, (v,), {"dtype": promote},
                                   fake_mode=lifter.fake_mode, like=n)
                _set_arg(n, is_kw, where, cast)
    return lifter


# --------------------------------------------------------------------------- #
# Memory formats -> dim orders
# --------------------------------------------------------------------------- #


def use_dim_order_ops(gm: GraphModule) -> None:
    ops = dialect.dim_order_ops()
    table = {
        aten._to_copy.default: ops["to_copy"],
        aten.clone.default: ops["clone"],
        aten.empty.memory_format: ops["empty"],
    }
    for n in gm.graph.nodes:
        if n.op != "call_function" or n.target not in table:
            continue
        kwargs = dict(n.kwargs)
        fmt = kwargs.pop("memory_format", None)
        src = n.args[0]
        if n.target == aten.empty.memory_format:
            like, ndim = None, len(src)
        else:
            like = src.meta.get("val") if isinstance(src, Node) else None
            ndim = like.dim() if isinstance(like, torch.Tensor) else 0
        kwargs["dim_order"] = dialect.dim_order_of(fmt, like, ndim)
        n.target = table[n.target]
        n.kwargs = kwargs


# --------------------------------------------------------------------------- #
# to_edge
# --------------------------------------------------------------------------- #


def convert_to_edge(ep: ExportedProgram, config: EdgeCompileConfig,
                    preserve: Sequence[OpOverload] = ()) -> ExportedProgram:
    """One exported ATen program -> its edge program (a new ExportedProgram)."""
    preserve = list(config.preserve_ops) + list(preserve)
    check_dim_orders(ep.graph_module)  # before decomposition traces the graph again
    ep = decompose(ep, preserve)
    gm = ep.graph_module
    graphs = [gm] + subgraphs(gm)  # the method and its control-flow branches
    for g in graphs:
        remove_asserts(g)
        functional_variants_to_auto(g)
        delegate_ops_to_calls(g)  # lowered modules composed into this model
    if config._check_ir_validity:
        for g in graphs:
            check_ir_validity(g, list(config._core_aten_ops_exception_list) + preserve)
    for g in graphs:
        replace_views_with_copies(g)
    lifter = lift_scalars(ep, gm)
    for g in graphs[1:]:
        lift_scalars(None, g)
    # The copies that replaced views are contiguous where the views were strided,
    # and ops downstream inherit layouts: trace the values again so that the
    # passes below see the layouts of this program, not of the eager one (a
    # preserve_format copy keeps its input's layout as it is here).
    repropagate_vals(gm)
    for g in graphs:
        remove_noops(g)
        if not config._skip_dim_order:
            use_dim_order_ops(g)
        g.graph.eliminate_dead_code()
        g.recompile()
    assign_debug_handles(gm)
    sig = resync_signature(gm, ep.graph_signature, lifter.specs)
    constants = dict(ep.constants)
    constants.update(lifter.constants)
    return rebuild_program(ep, gm, sig, constants)
