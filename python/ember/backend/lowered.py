"""A delegated subgraph: the backend's payload plus what the emitter needs."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch
from torch.export import ExportedProgram
from torch.fx import Node

from .backend_details import CompileSpec


class LoweredBackendModule(torch.nn.Module):
    """The result of `BackendDetails.preprocess` for one subgraph.

    The parent graph calls it through `call_delegate(lowered, *inputs)`; the
    emitter writes a BackendDelegate (backend id, payload, compile specs) and a
    DelegateCall whose arguments are the inputs, then the outputs.
    """

    def __init__(self, backend_id: str, processed_bytes: bytes,
                 compile_specs: List[CompileSpec], original_module: ExportedProgram,
                 debug_handle_map: Optional[Any] = None) -> None:
        super().__init__()
        self.backend_id = backend_id
        self.processed_bytes = bytes(processed_bytes)
        self.compile_specs = list(compile_specs)
        self.original_module = original_module
        self.debug_handle_map = debug_handle_map

    @property
    def original_module_nodes(self) -> List[Node]:
        """The operator nodes the backend took, in order."""
        return [n for n in self.original_module.graph.nodes if n.op == "call_function"]

    def debug_handles(self) -> List[int]:
        """Debug handles of the nodes this delegate runs (the edge program's numbering)."""
        from ..passes.debug_handles import node_handles

        return node_handles(self.original_module_nodes)

    def delegate_map(self) -> Dict[Any, List[int]]:
        """The backend's own identifiers -> debug handles.

        A backend that reports one in its PreprocessResult (for example its
        instruction index -> the handles it fused) gives that map; otherwise
        each handle maps to itself, since the backend numbers failures by the
        handles it was given.
        """
        if self.debug_handle_map:
            return {k: sorted(v) if isinstance(v, (list, tuple, set)) else [v]
                    for k, v in self.debug_handle_map.items()}
        return {h: [h] for h in self.debug_handles()}

    def forward(self, *args: Any) -> Any:
        # Eager fallback: run the subgraph the backend was given.
        return self.original_module.module()(*args)


def call_delegate(lowered: LoweredBackendModule, *args: Any) -> Any:
    """Graph marker for a delegate call (executorch_call_delegate)."""
    return lowered(*args)


def is_delegate_call(node: Node) -> bool:
    return node.op == "call_function" and node.target is call_delegate
