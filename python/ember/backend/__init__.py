"""Delegation: partitioners tag subgraphs, backends preprocess them into payloads.

    class MyBackend(BackendDetails):          # class name = backend id in the program
        @staticmethod
        def preprocess(edge_program, compile_specs):
            return PreprocessResult(compile(edge_program))

    edge = to_edge(ep).to_backend(OpSetPartitioner("MyBackend", {torch.ops.aten.mm.default}))
"""

from .backend_details import BackendDetails, CompileSpec, PreprocessResult
from .lowered import LoweredBackendModule, call_delegate
from .lowering import get_lowered_modules, to_backend
from .utils import format_delegated_graph
from .partitioner import (
    DelegationSpec,
    OpSetPartitioner,
    PartitionResult,
    Partitioner,
    tag_constant_data,
)

__all__ = [
    "BackendDetails",
    "CompileSpec",
    "PreprocessResult",
    "LoweredBackendModule",
    "call_delegate",
    "to_backend",
    "get_lowered_modules",
    "Partitioner",
    "PartitionResult",
    "DelegationSpec",
    "OpSetPartitioner",
    "tag_constant_data",
    "format_delegated_graph",
]
