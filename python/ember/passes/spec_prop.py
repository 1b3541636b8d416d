"""Attach a TensorSpec to every tensor-valued node of an execution graph.

Placeholders learn what they are from the graph signature: parameters,
constants and unmutated buffers carry their data (constants); mutated buffers
carry their starting data and stay memory-planned; user inputs are inputs.
Nodes that return storage they did not create share the producer's spec:
getitem of a multi-output op, and `copy_`, which returns its destination.
"""

from __future__ import annotations

import operator
from typing import Collection, List, Optional, Union

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import ExportGraphSignature, InputKind
from torch.fx import GraphModule, Node
from torch.utils import _pytree as pytree

from .. import dialect
from ..graph_utils import cond_branches, is_cond
from ..tensor_spec import TensorSpec, spec_of, tensor_specs


def _placeholder_data(ep: ExportedProgram, fqn: str) -> Optional[torch.Tensor]:
    if fqn in ep.state_dict:
        return ep.state_dict[fqn]
    if fqn in ep.constants and isinstance(ep.constants[fqn], torch.Tensor):
        return ep.constants[fqn]
    return None


def _constant_data(t: torch.Tensor) -> torch.Tensor:
    """Weights and buffers as the program stores them: contiguous, or channels-last
    (4-d or 5-d) where they already are, as the reference stores them. Kernels read
    any dim order, but contiguous weights take their fastest paths, and a weight
    stored transposed (a parameter made with `.t()`) is a layout nobody asked for."""
    t = t.detach().cpu()
    if t.is_contiguous():
        return t
    for ndim, fmt in ((4, torch.channels_last), (5, torch.channels_last_3d)):
        if t.dim() == ndim and t.is_contiguous(memory_format=fmt):
            return t
    return t.contiguous()


def _propagate_body(gm: GraphModule) -> None:
    """Specs of the call_function nodes of gm (placeholders already have theirs)."""
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            parent, idx = node.args
            node.meta["spec"] = parent.meta["spec"][idx]
        elif node.target is torch.ops.aten.copy_.default:
            node.meta["spec"] = node.args[0].meta["spec"]
        elif is_cond(node):
            _propagate_cond(gm, node)
        elif "spec" not in node.meta:
            node.meta["spec"] = spec_of(node.meta.get("val"))
            order = dialect.dim_order_arg(node)
            if order is not None:
                # The op's own argument decides its layout; the traced strides may
                # not (dims of size 1 leave the order ambiguous), and the kernel
                # checks that out's dim order is exactly this one.
                node.meta["spec"].dim_order = order


def _propagate_cond(gm: GraphModule, node: Node) -> None:
    """Branch inputs are the operands themselves; the cond's results are values that
    each branch's results are moved into (MoveCall aliases them)."""
    operands = node.args[3]
    specs = spec_of(node.meta.get("val"))
    node.meta["spec"] = specs
    for branch in cond_branches(gm, node):
        phs = [n for n in branch.graph.nodes if n.op == "placeholder"]
        for ph, op in zip(phs, operands):
            ph.meta["spec"] = op.meta.get("spec") if isinstance(op, Node) else None
        _propagate_body(branch)
        outs = pytree.tree_leaves(branch.graph.output_node().args[0])
        for spec, out in zip(pytree.tree_leaves(specs), outs):
            if isinstance(spec, TensorSpec) and isinstance(out, Node):
                spec.moved_from.extend(tensor_specs(out.meta.get("spec")))


def propagate_specs(
    gm: GraphModule,
    ep: ExportedProgram,
    sig: ExportGraphSignature,
    returned: List[bool],
    init_mutable_buffers: Union[bool, Collection[str]] = True,
) -> None:
    mutated = set(sig.buffers_to_mutate.values())
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for in_spec, node in zip(sig.input_specs, placeholders):
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            node.meta["spec"] = None
            continue
        if in_spec.kind == InputKind.USER_INPUT:
            spec = TensorSpec.from_val(val)
            spec.is_input = True
        else:
            fqn = in_spec.target
            data = _placeholder_data(ep, fqn)
            if data is None:
                raise RuntimeError(f"no data for {in_spec.kind.name.lower()} {fqn!r}")
            data = _constant_data(data)
            spec = TensorSpec.from_tensor(data, const=True)
            if in_spec.kind == InputKind.BUFFER and fqn in mutated:
                spec.const = False
                spec.mutable_buffer = fqn
                keep = (init_mutable_buffers if isinstance(init_mutable_buffers, bool)
                        else fqn in init_mutable_buffers)
                if not keep:
                    spec.data = None
        node.meta["spec"] = spec

    _propagate_body(gm)
    for node in gm.graph.nodes:
        if node.op == "output":
            rets = pytree.tree_leaves(node.args[0])
            for ret, keep in zip(rets, returned):
                if keep and isinstance(ret, Node):
                    for s in tensor_specs(ret.meta.get("spec")):
                        s.storage.is_output = True
