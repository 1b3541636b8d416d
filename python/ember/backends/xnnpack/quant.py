"""Quantized patterns of an edge graph, and the XNNPACK values they become.

Quantized models reach the partitioner as float32 operators between
quantize / dequantize nodes (pt2e's `quantized_decomposed` ops, or torchao's
`*_affine` ops). XNNPACK states the same computation with quantized values
instead, so each recognised pattern is lowered whole:

- dynamically quantized activations (choose_qparams -> quantize ->
  dequantize, per tensor from pt2e or per token from torchao) become a
  `Convert` of the float32 value to a `qdint8` value (per-token scales,
  `PerTokenDynamicQuant`), chosen at run time;
- int8 weights dequantized per output channel become a `qcint8` constant
  (`PerChannelQuant`, the float32 scales in named data under
  "scale_" + their sha256);
- torchao's groupwise int4 weights (`dequantize_affine` with a [1, group]
  block and range [-8, 7]) become a `qbint4` constant: values + 8, two per
  byte (the even element in the low nibble), `PerChannelGroupQuant` with
  bfloat16 scales;
- a static per-tensor int8 value (quantize -> dequantize with constant
  qparams) becomes a `qint8` value (`PerTensorQuant`); a static linear or
  convolution then reads and writes qint8 values, its bias becoming int32
  (`qcint32`, scales = input scale x weight scales), and `Convert`s move
  values across the float32 boundary.

These are the encodings ExecuTorch's XNNPACK delegate writes and reads. A
quantize or dequantize node that is not part of a whole pattern stays
outside the delegates (on the portable kernels), with the reason.

`QuantPlan(ep)` finds the patterns once per program: `covers(node)` says
whether a node belongs to the quantized side, `reason(node)` why it cannot
be delegated (None when it can), `lower(builder, node)` writes its nodes.
The recognisers of single patterns are in quant_patterns.py, the values and
nodes each becomes in quant_lowering.py.
"""

from __future__ import annotations

import operator
from typing import Any, Dict, List, Optional, Set, Tuple

import torch
from torch.export import ExportedProgram
from torch.fx import Node

from .graph import PER_TENSOR, QuantParams
from .ops import OPS, arg, unsupported_reason, val
from .quant_lowering import (
    dynamic_conv,
    dynamic_value,
    lower_dequantize,
    lower_quantize,
    static_conv,
    static_linear,
    weight_value,
)
from .quant_patterns import (
    CLAMPS,
    DQ,
    DQ_CHANNEL,
    SAME_QPARAMS,
    STATIC_BINARY,
    STATIC_OPS,
    STATIC_WEIGHTED,
    Weight,
    _Facts,
    _Linear,
    _static_input,
    _static_q,
    _Static,
    dynamic_input,
    quant_targets,
    torchao_ops,
    weight_of,
)

aten = torch.ops.aten

__all__ = ["QuantPlan", "torchao_ops"]


def out_channels(node: Node) -> int:
    """The output channels of a linear or convolution (a transposed
    convolution's weight is [in, out / groups, KH, KW])."""
    shape = val(node.args[1]).shape
    if node.target == aten.convolution.default and node.args[6]:
        return int(shape[1]) * int(node.args[8])
    return int(shape[0])


class QuantPlan:
    """The quantized patterns of a program that XNNPACK can take: dynamically
    quantized linears with the quantize / dequantize nodes each absorbs, and
    static int8 ops between per-tensor quantize / dequantize pairs."""

    def __init__(self, ep: ExportedProgram, lenient: bool = False) -> None:
        self.ep = ep
        self.facts = _Facts(ep, lenient)
        self.targets = quant_targets()
        self.linears: Dict[Node, _Linear] = {}
        self.refused: Dict[Node, str] = {}
        self.owner: Dict[Node, List[Node]] = {}   # chain node -> the ops reading it
        self.static_q: Dict[Node, Tuple[float, int]] = {}
        self.static_ops: Dict[Node, _Static] = {}
        self._find()
        self._find_static()

    # -- analysis: dynamic ------------------------------------------------ #

    def _is_quantized_linear(self, node: Node) -> bool:
        """A linear or convolution over a dequantized input or weight."""
        if node.op != "call_function" or node.target not in STATIC_WEIGHTED:
            return False
        a, w = node.args[0], node.args[1]
        return any(isinstance(x, Node) and x.op == "call_function" and x.target in self.targets
                   for x in (a, w))

    def _check_linear(self, node: Node) -> "Tuple[Optional[_Linear], str]":
        """A linear, or a 2-d convolution (not depthwise; transposed in any
        number of groups, else one group), of a dynamically quantized input
        and int8 per-channel weights."""
        act, why = dynamic_input(node.args[0])
        if act is None:
            return None, why
        conv = node.target == aten.convolution.default
        transposed = conv and bool(node.args[6])
        groups = int(node.args[8]) if conv else 1
        if conv and (val(node.args[0]).dim() != 4 or
                     not all(isinstance(d, int) for d in val(node.args[0]).shape[1:])):
            return None, "dynamically quantized convolutions must be 2-d, static in C, H, W"
        if conv and not transposed and groups > 1 and groups == val(node.args[0]).shape[1]:
            return None, "depthwise convolutions stay float32 here, as in ExecuTorch"
        w, why = weight_of(self.facts, node.args[1], 4 if conv else 2, 1 if transposed else 0)
        if w is None:
            return None, why
        if conv and w.group:
            return None, "groupwise weights for a convolution"
        in_features = val(act.source).shape[1 if conv else -1]
        want = w.shape[0] if transposed else w.shape[1] * groups
        if not isinstance(in_features, int) or in_features != want:
            return None, "the input's channels are not the weight's"
        bias = arg(node, 2, "bias")
        if bias is not None and not self._float_bias(bias, out_channels(node)):
            return None, "the bias is not a constant float32 [out] tensor"
        return _Linear(node, act, w, bias), ""

    def _float_bias(self, bias: Node, n: int) -> bool:
        b = val(bias)
        return self.facts.is_const(bias) and isinstance(b, torch.Tensor) and \
            b.dtype == torch.float32 and tuple(b.shape) == (n,)

    def _find(self) -> None:
        candidates: Dict[Node, _Linear] = {}
        for n in self.ep.graph.nodes:
            if self._is_quantized_linear(n) and _static_input(n.args[0]) is None:
                lin, why = self._check_linear(n)
                if lin is None:
                    self.refused[n] = why
                else:
                    candidates[n] = lin
        # A chain node is absorbed only when every reader is absorbed too:
        # drop linears whose chains feed something else, until none does.
        changed = True
        while changed:
            changed = False
            owners: Dict[Node, List[Node]] = {}
            for n, lin in candidates.items():
                for c in lin.act.nodes + lin.weight.nodes:
                    owners.setdefault(c, []).append(n)
            for n, lin in list(candidates.items()):
                for c in lin.act.nodes + lin.weight.nodes:
                    if any(u not in owners and u not in candidates for u in c.users):
                        self.refused[n] = f"{c.name} is also read outside the pattern"
                        del candidates[n]
                        changed = True
                        break
        self.linears = candidates
        for n, lin in candidates.items():
            for c in lin.act.nodes + lin.weight.nodes:
                self.owner.setdefault(c, []).append(n)

    # -- analysis: static ------------------------------------------------- #

    def is_static_dq(self, node: Any) -> bool:
        return isinstance(node, Node) and node.target == DQ and node.args[0] in self.static_q

    def _out_q(self, node: Node) -> Optional[Node]:
        """The static quantize that gives node's value its qparams: its only
        reader, or that of a clamp reading it alone (fused into the op)."""
        users = list(node.users)
        if len(users) != 1:
            return None
        u = users[0]
        if u in self.static_q:
            return u
        if u.op == "call_function" and u.target in CLAMPS and u in self.static_ops:
            return self._out_q(u)
        return None

    def out_quant(self, node: Node) -> QuantParams:
        q = self._out_q(node)
        if q is None:
            raise ValueError(f"xnnpack: {node.name} has no static quantize after it")
        scale, zp = self.static_q[q]
        return QuantParams(PER_TENSOR, {"scale": scale, "zero_point": zp})

    def _static_weight(self, node: Node) -> "Tuple[Optional[Any], str]":
        transposed = node.target == aten.convolution.default and bool(node.args[6])
        w = node.args[1]
        if isinstance(w, Node) and w.target == DQ and self.facts.is_const(w.args[0]):
            scale, zp, qmin, qmax, dtype = w.args[1:6]
            if dtype != torch.int8 or zp != 0:
                return None, "per-tensor weights are not symmetric int8"
            return (float(scale), self.facts.data(w.args[0]), w), ""
        return weight_of(self.facts, w, val(w).dim(), 1 if transposed else 0)

    def _check_static(self, n: Node) -> Optional[str]:
        """None if n can run on static quantized values, else why not."""
        out = n
        if n.target == aten.max_pool2d_with_indices.default:
            users = list(n.users)
            if len(users) != 1 or users[0].target is not operator.getitem or users[0].args[1] != 0:
                return "its indices are used"
            out = users[0]
        q = self._out_q(out)
        if q is None:
            return "its output is not quantized (per tensor, static) by itself"
        acts = [n.args[0]] if n.target in STATIC_WEIGHTED else \
            [a for a in (n.args[0] if n.target == aten.cat.default else n.args[:2])
             if isinstance(a, Node)]
        if n.target in STATIC_BINARY and len(acts) != 2:
            return "a scalar operand"
        for a in acts:
            fused = n.target in CLAMPS and a in self.static_ops and len(a.users) == 1 and \
                a.target not in SAME_QPARAMS
            if not self.is_static_dq(a) and not fused:
                return f"{a.name} is not a static int8 value"
        if n.target in SAME_QPARAMS:
            ins = {self.static_q[a.args[0]] for a in acts if self.is_static_dq(a)}
            if any(p != self.static_q[q] for p in ins):
                return "its output's qparams are not its input's"
        if n.target == aten.convolution.default:
            if val(n.args[0]).dim() != 4:
                return "only 2-d convolutions run quantized"
            if n.args[6] and any(p < 0 for p in n.args[7]):
                return "negative output padding"
        if n.target in STATIC_WEIGHTED:
            w, why = self._static_weight(n)
            if w is None:
                return why
            bias = arg(n, 2, "bias")
            if bias is not None and not self._float_bias(bias, out_channels(n)):
                return "the bias is not a constant float32 [out] tensor"
            return None
        return unsupported_reason(self.ep, n)

    def _find_static(self) -> None:
        for n in self.ep.graph.nodes:
            pair = _static_q(n)
            if pair is not None:
                self.static_q[n] = pair
        # candidates: ops reading a static int8 value or dequantized weights,
        # and clamps after such an op
        for n in self.ep.graph.nodes:
            if n.op != "call_function" or n.target not in STATIC_OPS or n in self.linears:
                continue
            reads_dq = any(self.is_static_dq(a) for a in n.all_input_nodes)
            dq_weight = n.target in STATIC_WEIGHTED and isinstance(n.args[1], Node) and \
                n.args[1].target in (DQ, DQ_CHANNEL)
            after_op = n.target in CLAMPS and n.args[0] in self.static_ops
            if reads_dq or dq_weight or after_op:
                self.static_ops[n] = _Static(n, n)
        # clamps fused into the op before them need that op, and it them:
        # repeat until nothing changes
        changed = True
        while changed:
            changed = False
            for n in list(self.static_ops):
                why = self._check_static(n)
                if why is not None:
                    del self.static_ops[n]
                    if n.target in STATIC_WEIGHTED:
                        self.refused[n] = why
                    changed = True
        for n, op in self.static_ops.items():
            if n.target in STATIC_WEIGHTED:
                w, _ = self._static_weight(n)
                if isinstance(w, Weight):
                    op.weight = w
                    for c in w.nodes:
                        self.owner.setdefault(c, []).append(n)
                else:
                    op.weight_per_tensor = w
                    self.owner.setdefault(w[2], []).append(n)
                op.bias = arg(n, 2, "bias")
            if n.target == aten.max_pool2d_with_indices.default:
                op.out = next(iter(n.users))

    # -- partitions ------------------------------------------------------- #

    def split_patterns(self, part: Set[Node]) -> Set[Node]:
        """The nodes of a proposed partition whose pattern it cuts: a
        quantized value needs its quantize, its dequantizes and the static
        ops writing and reading it quantized in the same delegate, and a
        dynamic chain its linear."""
        bad: Set[Node] = set()
        for n in part:
            if n in self.static_q:
                if any(u not in part for u in n.users):
                    bad.add(n)
            elif self.is_static_dq(n):
                if n.args[0] not in part:
                    bad.add(n)
            elif n in self.static_ops:
                op = self.static_ops[n]
                needs = [a for a in n.all_input_nodes if self.is_static_dq(a) or a in self.static_ops]
                needs.append(self._out_q(op.out))
                needs.extend(self.owner_nodes(n))
                if op.out is not n:
                    needs.append(op.out)
                if any(x not in part for x in needs):
                    bad.add(n)
            elif n in self.linears:
                lin = self.linears[n]
                if any(c not in part for c in lin.act.nodes + lin.weight.nodes):
                    bad.add(n)
            elif n in self.owner:
                if any(o not in part for o in self.owner[n]):
                    bad.add(n)
        return bad

    def owner_nodes(self, op: Node) -> List[Node]:
        """The chain nodes an op absorbs."""
        return [c for c, owners in self.owner.items() if op in owners]

    # -- questions -------------------------------------------------------- #

    def covers(self, node: Node) -> bool:
        """Whether node belongs to the quantized side (a q/dq/choose op, a
        getitem of one, an op over dequantized operands, or a static op)."""
        if node.op != "call_function":
            return False
        if node in self.static_ops or node in self.refused:
            return True
        if node.target is operator.getitem:
            src = node.args[0]
            return isinstance(src, Node) and src.target in self.targets
        return node.target in self.targets or self._is_quantized_linear(node)

    def reason(self, node: Node) -> Optional[str]:
        if node in self.linears or node in self.owner or node in self.static_ops:
            return None
        if node in self.static_q or self.is_static_dq(node):
            return None
        if node in self.refused:
            return self.refused[node]
        return "a quantize / dequantize step outside a pattern XNNPACK runs whole"

    # -- lowering --------------------------------------------------------- #

    def lower(self, b: Any, node: Node) -> None:
        lin = self.linears.get(node)
        if lin is not None and node.target == aten.convolution.default:
            dynamic_conv(b, lin)
        elif lin is not None:
            xin = dynamic_value(b, lin.act)
            wid = weight_value(b, lin.weight)
            bid = b.constant(lin.bias) if lin.bias is not None else 0xFFFFFFFF
            b.node("FullyConnected", node, input1_id=xin, filter_id=wid, bias_id=bid,
                   output_id=b.output(node, "nchw"))
        elif node in self.static_q:
            lower_quantize(b, node, self.static_q[node])
        elif self.is_static_dq(node):
            lower_dequantize(b, node, self)
        elif node in self.static_ops:
            b.static = True
            try:
                op = self.static_ops[node]
                if node.target == aten.linear.default:
                    static_linear(b, op, self)
                elif node.target == aten.convolution.default:
                    static_conv(b, op, self)
                else:
                    OPS[node.target].lower(b, node)
            finally:
                b.static = False
        # anything else is a chain node: its op writes what it stands for
