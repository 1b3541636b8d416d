"""DuplicateDynamicQuantChainPass: one dynamic quantization chain per reader.

After `convert_pt2e` with dynamic activations, a value read by several
quantized operators (the q, k and v projections of one input) is quantized
once: choose_qparams -> quantize -> dequantize, the dequantize read by every
operator. A backend that takes each operator with its own chain (XNNPACK
turns the chain into a Convert inside each operator's delegate) needs one
chain per reader, so this pass copies the chain for every reader after the
first. Run it on the converted module, before torch.export:

    m = convert_pt2e(m)
    DuplicateDynamicQuantChainPass()(m)
"""

from __future__ import annotations

import operator
from typing import List, Optional

import torch
from torch.fx import GraphModule, Node
from torch.fx.passes.infra.pass_base import PassBase, PassResult
from torchao.quantization.pt2e.quantizer import is_valid_annotation
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

_qd = torch.ops.quantized_decomposed
_DQ = (_qd.dequantize_per_tensor.tensor,)
_Q = (_qd.quantize_per_tensor.tensor,)
_CHOOSE = _qd.choose_qparams.tensor


def _is_size_read(n: Node) -> bool:
    return n.op == "call_function" and n.target in (torch.ops.aten.sym_size.int,)


def _chain(dq: Node) -> Optional[List[Node]]:
    """[choose, scale getitem, zero-point getitem, q, dq] of a dynamic
    dequantize, or None if dq is not one."""
    q = dq.args[0]
    if not (isinstance(q, Node) and q.op == "call_function" and q.target in _Q):
        return None
    s, zp = q.args[1], q.args[2]
    if not all(isinstance(a, Node) and a.target is operator.getitem for a in (s, zp)):
        return None
    choose = s.args[0]
    if not (isinstance(choose, Node) and choose.target == _CHOOSE and zp.args[0] is choose):
        return None
    if len(q.users) != 1:
        return None
    return [choose, s, zp, q, dq]


def _copy_chain(gm: GraphModule, chain: List[Node], reader: Node) -> None:
    """Gives reader a copy of chain (inserted just before the original dq)."""
    old = chain[-1]
    mapping = {}
    with gm.graph.inserting_before(old):
        for n in chain:
            new = gm.graph.node_copy(n, lambda a: mapping.get(a, a))
            mapping[n] = new
    reader.replace_input_with(old, mapping[old])


class DuplicateDynamicQuantChainPass(PassBase):
    """Copies each shared dynamic quantization chain once per quantized reader."""

    def call(self, graph_module: GraphModule) -> PassResult:
        changed = False
        for dq in list(graph_module.graph.nodes):
            if dq.op != "call_function" or dq.target not in _DQ:
                continue
            readers = [u for u in dq.users if not _is_size_read(u)]
            if len(readers) <= 1:
                continue
            chain = _chain(dq)
            if chain is None:
                continue
            if not all(is_valid_annotation(u.meta.get(Q_ANNOTATION_KEY)) for u in readers):
                continue  # a float reader: keep the one chain
            for reader in readers[1:]:
                _copy_chain(graph_module, chain, reader)
            changed = True
        graph_module.graph.eliminate_dead_code()
        graph_module.recompile()
        return PassResult(graph_module, changed)
