"""Remove copies that return their input unchanged.

After decomposition a graph may hold `_to_copy` to the dtype it already has,
a `slice_copy` over a whole dimension, a `view_copy` or `expand_copy` to the
same shape, or an identity `permute_copy`. Each costs a kernel call and a
buffer at run time for nothing; the input is used directly instead.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

aten = torch.ops.aten


def _same_static_layout(a: torch.Tensor, b: torch.Tensor) -> bool:
    def static(t: torch.Tensor) -> bool:
        return all(isinstance(s, int) for s in t.shape) and all(
            isinstance(s, int) for s in t.stride())

    # Strides of dims of size 0 or 1 move no element: any layout that agrees on
    # the other dims is the same layout, whatever dim order either one names.
    return (static(a) and static(b) and a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
            and all(x == y for x, y, n in zip(a.stride(), b.stride(), a.shape) if n > 1))


_NOOP_CANDIDATES = {
    aten._to_copy.default,
    aten.slice_copy.Tensor,
    aten.view_copy.default,
    aten.expand_copy.default,
    aten.alias_copy.default,
    aten.permute_copy.default,
}


def remove_noops(gm: GraphModule) -> None:
    """Drops copies that return their input unchanged (same dtype, shape, layout).

    A copy that feeds the graph output stays: the output must not alias an input
    or a buffer that is written back later.
    """
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target not in _NOOP_CANDIDATES:
            continue
        src = n.args[0]
        if not isinstance(src, Node) or any(u.op == "output" for u in n.users):
            continue
        a, b = src.meta.get("val"), n.meta.get("val")
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            continue
        if n.target == aten.permute_copy.default and list(n.args[1]) != list(range(a.dim())):
            continue
        if _same_static_layout(a, b):
            n.replace_all_uses_with(src)
            gm.graph.erase_node(n)
