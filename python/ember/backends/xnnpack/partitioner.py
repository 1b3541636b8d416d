"""XnnpackPartitioner: the subgraphs the XNNPACK payload can express.

Each call_function node passes or fails ops.py's check for its operator
(dtypes, ranks, constant weights, parameters the payload can state); torch's
capability-based partitioner groups the ones that pass into connected,
acyclic subgraphs, one delegate each, and the weights only a delegate reads
move into it. `ops_to_not_decompose` keeps whole the ops the payload has a
node for but core ATen would split (linear, prelu, hardswish, ...).
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch.export import ExportedProgram
from torch.fx import Node

from ...backend.partitioner import (
    TAG,
    DelegationSpec,
    Partitioner,
    PartitionResult,
    tag_constant_data,
)
from .ops import KEEP_WHOLE, unsupported_reason
from .quant import QuantPlan, torchao_ops


def delegation_reason(ep: ExportedProgram, plan: QuantPlan, node: Node) -> Optional[str]:
    """None if node can be delegated, else why not (quantized patterns first)."""
    if plan.covers(node):
        return plan.reason(node)
    return unsupported_reason(ep, node)


class XnnpackPartitioner(Partitioner):
    """Delegates every float32 subgraph XnnpackBackend can run, and the
    quantized patterns of quant.py.

    `reasons` (after partition()) maps each call_function node that stays
    outside to why, for the curious.
    """

    def __init__(self) -> None:
        self.spec = DelegationSpec("XnnpackBackend", [])
        self.reasons: Dict[str, str] = {}

    def ops_to_not_decompose(
        self, ep: ExportedProgram
    ) -> Tuple[List[torch._ops.OpOverload], Optional[Callable[[Node], bool]]]:
        # whole only where the node will be delegated (a float64 linear must
        # decompose into ops the portable kernels run); torchao's quantize ops
        # stay whole for the patterns that read them
        plan = QuantPlan(ep, lenient=True)
        keep = list(KEEP_WHOLE) + list(torchao_ops().values())
        return keep, lambda node: delegation_reason(ep, plan, node) is None

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
        from torch.fx.passes.operator_support import OperatorSupportBase

        ep = exported_program
        reasons = self.reasons
        reasons.clear()
        plan = QuantPlan(ep)
        quant_ops = plan.targets

        split: Dict[Node, str] = {}

        class _Support(OperatorSupportBase):
            def is_node_supported(self, submodules, node: Node) -> bool:  # noqa: ARG002
                if node.op != "call_function":
                    return False
                why = split.get(node) or delegation_reason(ep, plan, node)
                if why is not None:
                    reasons[node.name] = why
                return why is None

        # A partition must hold quantized patterns whole; where one cuts a
        # pattern, its nodes stay outside and the partitions are proposed again.
        for _ in range(16):
            parts = CapabilityBasedPartitioner(ep.graph_module, _Support(),
                                               allows_single_node_partition=True).propose_partitions()
            cut = set().union(*[plan.split_patterns(set(p.nodes)) for p in parts]) if parts else set()
            if not cut:
                break
            for n in cut:
                split[n] = "its quantized pattern would be split between delegates"
        tags: Dict[str, DelegationSpec] = {}
        for i, p in enumerate(parts):
            # a partition of nothing but getitems, or quantize / dequantize
            # steps, computes nothing worth a delegate
            if all(n.target.__class__.__name__ == "builtin_function_or_method" or
                   n.target in quant_ops for n in p.nodes):
                continue
            tag = f"xnnpack_{i}"
            for n in p.nodes:
                n.meta[TAG] = tag
            tags[tag] = self.spec
        tag_constant_data(ep)
        return PartitionResult(ep, tags)
