"""Reshapes that share storage instead of copying it (`executorch_prim::et_view`).

A `view_copy` whose result is not a method output becomes an `et_view` marker
node: its spec is a view of the input's spec (same bytes, new sizes), so the
planner gives it no memory of its own and extends the input's lifetime over
the view's uses. At emission a static view of planned or constant memory
needs no instruction at all (its value simply points at the same bytes); a
dynamic view, or a view of memory bound only at run time, becomes an
`executorch_prim::et_view.default` kernel call that sets the data pointer and
sizes when the method runs.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .. import dialect
from ..tensor_spec import TensorSpec


def _is_view_copy(node: Node) -> bool:
    return node.op == "call_function" and node.target is torch.ops.aten.view_copy.default


def replace_view_copy_with_view(gm: GraphModule) -> int:
    """Turns eligible view_copy nodes into et_view markers; returns how many."""
    # view_copy(view_copy(x)) -> view_copy(x): the inner copy often dies.
    for node in gm.graph.nodes:
        if _is_view_copy(node) and isinstance(node.args[0], Node) and _is_view_copy(node.args[0]):
            inner = node.args[0]
            node.args = (inner.args[0],) + tuple(node.args[1:])
    gm.graph.eliminate_dead_code()
    count = 0
    for node in gm.graph.nodes:
        if not _is_view_copy(node) or any(u.op == "output" for u in node.users):
            continue
        base = node.args[0]
        base_spec = base.meta.get("spec") if isinstance(base, Node) else None
        spec = node.meta.get("spec")
        if not isinstance(base_spec, TensorSpec) or not isinstance(spec, TensorSpec):
            continue
        if base_spec.dtype != spec.dtype or base_spec.dynamic != spec.dynamic:
            continue
        if not base_spec.is_contiguous or not spec.is_contiguous:
            continue  # a view of a permuted layout is not a plain reshape
        spec.base = base_spec
        node.target = dialect.et_view
        count += 1
    return count


def is_elided_view(spec: TensorSpec) -> bool:
    """Whether a view needs no instruction: static, and its bytes are known at load."""
    st = spec.storage
    return not spec.dynamic and (st.const or (st.mem_id is not None and st.mem_offset is not None))
