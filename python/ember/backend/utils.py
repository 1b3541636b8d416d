"""Printing a graph together with what its delegates took."""

from __future__ import annotations

from typing import List

from torch.fx import GraphModule

from ..passes.debug_handles import is_numbered
from .lowered import LoweredBackendModule


def _graph_lines(gm: GraphModule, indent: str) -> List[str]:
    lines = [f"{indent}graph():"]
    for node in gm.graph.nodes:
        text = node.format_node()
        if text:
            h = node.meta.get("debug_handle")
            suffix = f"  # debug_handle={h}" if is_numbered(node) and isinstance(h, int) else ""
            lines.append(f"{indent}    {text}{suffix}")
        if node.op == "get_attr":
            mod = getattr(gm, str(node.target), None)
            if isinstance(mod, LoweredBackendModule):
                lines.append(f"{indent}        backend_id: {mod.backend_id}")
                lines.append(f"{indent}        payload: {len(mod.processed_bytes)} bytes")
                for cs in mod.compile_specs:
                    lines.append(f"{indent}        compile_spec: {cs.key} = {cs.value!r}")
                lines.append(f"{indent}        lowered graph:")
                lines.extend(_graph_lines(mod.original_module.graph_module, indent + "        "))
    return lines


def format_delegated_graph(graph_module: GraphModule) -> str:
    """The graph as torch.fx prints it, with each lowered module's backend id,
    payload size, compile specs and the graph it took nested under it.
    Operator nodes show their debug handles."""
    return "\n".join(_graph_lines(graph_module, "")) + "\n"
