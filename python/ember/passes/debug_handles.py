"""Debug handles: a stable integer per operator node, from edge to runtime.

Every call_function node of an edge program (its control-flow branches
included) gets `node.meta["debug_handle"]`, numbered from 1 in graph order.
The handle survives everything that follows: nodes a pass replaces hand it
to their replacement (graph_utils keeps it as inherited metadata), nodes
fused into a delegate keep it inside the lowered module's own program, and
the emitter records, for each instruction, the handle(s) of the node(s) it
runs. A backend that fails names the handle of the failing node, and
`ExecutorchProgramManager.debug_handle_info(handle)` leads from it back to
the operator and the Python source line.
"""

from __future__ import annotations

import operator
from typing import Dict, Iterator, List

from torch.fx import GraphModule, Node

from ..dialect import is_delegate_call
from ..graph_utils import subgraphs

KEY = "debug_handle"


def is_numbered(n: Node) -> bool:
    """Operator nodes carry handles; getitem and the delegate call itself do not
    (a delegate call stands for the handles of the nodes its backend took)."""
    return n.op == "call_function" and n.target is not operator.getitem and \
        not is_delegate_call(n)


def _operator_nodes(gm: GraphModule) -> Iterator[Node]:
    for g in [gm] + subgraphs(gm):
        for n in g.graph.nodes:
            if is_numbered(n):
                yield n


def assign_debug_handles(gm: GraphModule) -> None:
    """Numbers the operator nodes that have no handle yet, after the largest one in use."""
    nodes = list(_operator_nodes(gm))
    used = [h for n in nodes if isinstance(h := n.meta.get(KEY), int)]
    next_handle = max(used, default=0) + 1
    seen = set()
    for n in nodes:
        h = n.meta.get(KEY)
        # A pass that copied a node copies its handle too; the copy gets its own.
        if not isinstance(h, int) or h in seen:
            n.meta[KEY] = next_handle
            h = next_handle
            next_handle += 1
        seen.add(h)


def handle_nodes(gm: GraphModule) -> Dict[int, Node]:
    """Handle -> node over gm and its branches (backend.lowered.all_handle_nodes
    also looks inside lowered modules)."""
    out: Dict[int, Node] = {}
    for n in _operator_nodes(gm):
        h = n.meta.get(KEY)
        if isinstance(h, int):
            out.setdefault(h, n)
    return out


def node_handles(nodes: List[Node]) -> List[int]:
    return sorted({n.meta[KEY] for n in nodes if isinstance(n.meta.get(KEY), int)})
