"""Partitioners: decide which nodes a backend takes.

A partitioner tags call_function nodes with `node.meta["delegation_tag"]`;
nodes sharing a tag become one delegated subgraph, lowered with the
DelegationSpec (backend id and compile specs) the result maps the tag to.
Constant placeholders (weights) tagged with the same tag move into the
delegate: the backend receives them in its subprogram and the runtime
program stops storing them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Set, Tuple

import torch
from torch.export import ExportedProgram
from torch.fx import Node

from .backend_details import CompileSpec

TAG = "delegation_tag"


@dataclass
class DelegationSpec:
    backend_id: str
    compile_specs: List[CompileSpec] = field(default_factory=list)


@dataclass
class PartitionResult:
    tagged_exported_program: ExportedProgram
    partition_tags: Dict[str, DelegationSpec]


class Partitioner(ABC):
    @abstractmethod
    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        """Tags nodes of exported_program (in place) and says which backend takes each tag."""

    def ops_to_not_decompose(
        self, ep: ExportedProgram
    ) -> Tuple[List[torch._ops.OpOverload], Optional[Callable[[Node], bool]]]:
        """Ops that to_edge_transform_and_lower keeps whole for this partitioner."""
        return [], None


def tag_constant_data(ep: ExportedProgram) -> None:
    """Tags each constant placeholder whose users all carry one tag with that tag."""
    sig = ep.graph_signature
    constants = (set(sig.inputs_to_parameters) | set(sig.inputs_to_lifted_tensor_constants)
                 | {k for k, v in sig.inputs_to_buffers.items()
                    if v not in set(sig.buffers_to_mutate.values())})
    for n in ep.graph_module.graph.nodes:
        if n.op != "placeholder" or n.name not in constants or not n.users:
            continue
        tags: Set[Optional[str]] = {u.meta.get(TAG) for u in n.users}
        if len(tags) == 1 and None not in tags:
            n.meta[TAG] = tags.pop()


class OpSetPartitioner(Partitioner):
    """Tags maximal runs of connected nodes whose ops are in `ops` (a simple, generic rule).

    Each connected group becomes one delegate. A group that would make the
    graph cyclic once fused is split by torch's capability-based partitioner.
    """

    def __init__(self, backend_id: str, ops: Set[torch._ops.OpOverload],
                 compile_specs: Optional[List[CompileSpec]] = None,
                 own_constants: bool = False) -> None:
        self.spec = DelegationSpec(backend_id, list(compile_specs or []))
        self.ops = set(ops)
        self.own_constants = own_constants

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
        from torch.fx.passes.operator_support import OperatorSupportBase

        ops = self.ops

        class _Support(OperatorSupportBase):
            def is_node_supported(self, submodules, node: Node) -> bool:  # noqa: ARG002
                return node.op == "call_function" and node.target in ops

        gm = exported_program.graph_module
        parts = CapabilityBasedPartitioner(gm, _Support(), allows_single_node_partition=True
                                           ).propose_partitions()
        tags: Dict[str, DelegationSpec] = {}
        for i, p in enumerate(parts):
            tag = f"tag{i}"
            for n in p.nodes:
                n.meta[TAG] = tag
            tags[tag] = self.spec
        if self.own_constants:
            tag_constant_data(exported_program)
        return PartitionResult(exported_program, tags)
