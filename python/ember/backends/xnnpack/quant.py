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
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import torch
from torch.export import ExportedProgram
from torch.fx import Node

from .graph import (
    FP32,
    PER_CHANNEL,
    PER_CHANNEL_GROUP,
    PER_TENSOR,
    PER_TOKEN_DYNAMIC,
    QBINT4,
    QCINT8,
    QCINT32,
    QDINT8,
    QINT8,
    QINT32,
    QuantParams,
)
from .ops import OPS, _conv_weight, arg, constant_of, unsupported_reason, val

aten = torch.ops.aten
_qd = torch.ops.quantized_decomposed


def _torchao_op(name: str) -> Optional[Any]:
    ns = getattr(torch.ops, "torchao", None)
    try:
        return getattr(getattr(ns, name), "default") if ns is not None else None
    except (AttributeError, RuntimeError):
        return None


def torchao_ops() -> Dict[str, Any]:
    """torchao's affine ops, where torchao is loaded (else an empty map)."""
    out = {}
    for name in ("choose_qparams_affine", "quantize_affine", "dequantize_affine"):
        op = _torchao_op(name)
        if op is not None:
            out[name] = op
    return out


DYN_CHOOSE = _qd.choose_qparams.tensor
DYN_Q = _qd.quantize_per_tensor.tensor
DYN_DQ = _qd.dequantize_per_tensor.tensor
Q = _qd.quantize_per_tensor.default
DQ = _qd.dequantize_per_tensor.default
DQ_CHANNEL = _qd.dequantize_per_channel.default

def quant_targets() -> Set[Any]:
    """Every target a quantized pattern is made of."""
    return {DYN_CHOOSE, DYN_Q, DYN_DQ, Q, DQ, DQ_CHANNEL} | \
        set(torchao_ops().values())


# --------------------------------------------------------------------------- #
# Recognised pieces
# --------------------------------------------------------------------------- #


@dataclass
class Weight:
    """A quantized constant weight [OC, IC]: int8 values (int4 range for
    groupwise), float scales [OC] or [OC, IC / group]."""

    node: Node
    data: Optional[torch.Tensor]     # None while only the shapes are known
    scale: Optional[torch.Tensor]
    shape: Tuple[int, ...]
    group: int = 0                   # 0: per channel
    nodes: List[Node] = field(default_factory=list)


@dataclass
class DynamicInput:
    """A float32 value quantized at run time: x -> choose -> q -> dq."""

    source: Node
    nodes: List[Node]


class _Facts:
    """Constant data of a program's nodes, or (lenient: the program before its
    decomposition, where a tensor subclass still wraps some weights) just
    whether a node is constant."""

    def __init__(self, ep: ExportedProgram, lenient: bool) -> None:
        self.ep, self.lenient = ep, lenient

    def data(self, node: Any) -> Optional[torch.Tensor]:
        return constant_of(self.ep, node)

    def is_const(self, node: Any) -> bool:
        if self.data(node) is not None:
            return True
        if not self.lenient or not isinstance(node, Node):
            return False
        if node.op == "call_function" and node.args and "access_subclass_inner_tensor" in \
                str(node.target):
            return self.is_const(node.args[0])
        if node.op == "placeholder":
            names = {getattr(s.arg, "name", None) for s in self.ep.graph_signature.input_specs
                     if s.kind.name != "USER_INPUT"}
            return node.name in names
        return False


def _shape(node: Any) -> Optional[Tuple[int, ...]]:
    v = val(node)
    if not isinstance(v, torch.Tensor) or not all(isinstance(s, int) for s in v.shape):
        return None
    return tuple(int(s) for s in v.shape)


def _all_zero(t: Optional[torch.Tensor]) -> bool:
    return t is None or not bool(torch.any(t != 0))


def weight_of(f: _Facts, node: Any, rank: int = 2) -> "Tuple[Optional[Weight], str]":
    """The quantized weight (of this rank) a dequantize node reads, or why it
    is not one; groupwise weights are 2-d only."""
    ao = torchao_ops()
    if not isinstance(node, Node) or node.op != "call_function":
        return None, "the weight is not dequantized from a constant"
    if node.target == DQ_CHANNEL:
        w, s, zp = node.args[0], node.args[1], node.args[2]
        axis, dtype = node.args[3], node.args[6]
        shape = _shape(w)
        if not (f.is_const(w) and f.is_const(s) and (zp is None or f.is_const(zp))):
            return None, "weight, scales or zero points are not constants"
        if dtype != torch.int8 or shape is None or len(shape) != rank or axis != 0:
            return None, "weights are not int8 quantized along the output channels (axis 0)"
        if not _all_zero(f.data(zp) if zp is not None else None):
            return None, "weights have non-zero zero points (XNNPACK takes symmetric weights)"
        return Weight(node, f.data(w), f.data(s), shape, 0, [node]), ""
    if "dequantize_affine" in ao and node.target == ao["dequantize_affine"]:
        w, block, s, zp = node.args[0], list(node.args[1]), node.args[2], node.args[3]
        dtype, qmin, qmax = node.args[4], arg(node, 5, "quant_min"), arg(node, 6, "quant_max")
        shape = _shape(w)
        if not (f.is_const(w) and f.is_const(s) and (zp is None or f.is_const(zp))):
            return None, "weight, scales or zero points are not constants"
        if dtype != torch.int8 or shape is None or len(shape) != 2 or len(block) != 2 or \
                block[0] != 1:
            return None, "weights are not int8 [out, in] with blocks along a row"
        if not _all_zero(f.data(zp) if zp is not None else None):
            return None, "weights have non-zero zero points (XNNPACK takes symmetric weights)"
        group = int(block[1])
        if (qmin, qmax) == (-8, 7):
            if group % 32 or shape[1] % group:
                return None, (f"int4 group size {group}: XNNPACK needs a multiple of 32 that "
                              f"divides the {shape[1]} input channels")
            return Weight(node, f.data(w), f.data(s), shape, group, [node]), ""
        if group == shape[1] and qmin is not None and qmin >= -128 and qmax <= 127:
            scale = f.data(s)
            return Weight(node, f.data(w), None if scale is None else scale.reshape(-1),
                          shape, 0, [node]), ""
        return None, f"weights in [{qmin}, {qmax}] with group {group} (int8 per channel or int4 " \
                     f"groups only)"
    return None, "the weight is not dequantized from a constant (dequantize_per_channel or " \
                 "torchao's dequantize_affine)"


def _getitems(node: Node) -> Optional[List[Node]]:
    """The two getitems of a (scale, zero point) pair, or None."""
    users = list(node.users)
    if len(users) != 2 or any(u.target is not operator.getitem for u in users):
        return None
    return sorted(users, key=lambda u: u.args[1])


def dynamic_input(node: Any) -> "Tuple[Optional[DynamicInput], str]":
    """The dynamically quantized activation a dequantize node gives, or why not."""
    ao = torchao_ops()
    if not isinstance(node, Node) or node.op != "call_function":
        return None, "the input is not a quantized value"
    if node.target == DYN_DQ:
        q = node.args[0]
        if not (isinstance(q, Node) and q.target == DYN_Q):
            return None, "the input's dequantize does not read a quantize"
        x, s, zp = q.args[0], q.args[1], q.args[2]
        choose = s.args[0] if isinstance(s, Node) and s.target is operator.getitem else None
        if not (isinstance(choose, Node) and choose.target == DYN_CHOOSE and choose.args[0] is x):
            return None, "the input's qparams are not chosen from it at run time"
        qmin, qmax, dtype = q.args[3], q.args[4], q.args[5]
    elif "dequantize_affine" in ao and node.target == ao["dequantize_affine"]:
        q = node.args[0]
        if not (isinstance(q, Node) and q.target == ao["quantize_affine"]):
            return None, "the input's dequantize does not read a quantize"
        x, block, s, zp = q.args[0], list(q.args[1]), q.args[2], q.args[3]
        choose = s.args[0] if isinstance(s, Node) and s.target is operator.getitem else None
        if not (isinstance(choose, Node) and choose.target == ao["choose_qparams_affine"] and
                choose.args[0] is x):
            return None, "the input's qparams are not chosen from it at run time"
        shape = val(x).shape
        if block[:-1] != [1] * (len(shape) - 1) or block[-1] != shape[-1]:
            return None, f"activation blocks {block}: XNNPACK quantizes per row (per token)"
        if choose.args[1] != "ASYMMETRIC":
            return None, f"{choose.args[1]} activations (XNNPACK's are asymmetric)"
        dtype, qmin, qmax = q.args[4], arg(q, 5, "quant_min"), arg(q, 6, "quant_max")
    else:
        return None, "the input is not a dynamically quantized value"
    if dtype != torch.int8 or (qmin, qmax) != (-128, 127):
        return None, f"activations in [{qmin}, {qmax}] as {dtype}: XNNPACK takes int8 in [-128, 127]"
    if not (isinstance(zp, Node) and zp.args[0] is choose):
        return None, "scale and zero point come from different places"
    items = _getitems(choose)
    if items is None:
        return None, "the chosen qparams are used elsewhere"
    v = val(x)
    if not isinstance(v, torch.Tensor) or v.dtype != torch.float32 or v.dim() < 2:
        return None, "the input is not a float32 tensor of rank 2 or more"
    return DynamicInput(x, [node, q, choose] + items), ""


# --------------------------------------------------------------------------- #
# The plan
# --------------------------------------------------------------------------- #


@dataclass
class _Linear:
    node: Node
    act: DynamicInput
    weight: Weight
    bias: Optional[Node]


# Static ops: those with weights, and those that compute on quantized values
# as they are (elementwise, pooling, layout); the ones in SAME_QPARAMS move
# or select values, so their output must keep their input's qparams.
STATIC_WEIGHTED = {aten.linear.default, aten.convolution.default}
CLAMPS = {aten.relu.default, aten.hardtanh.default}
SAME_QPARAMS = CLAMPS | {aten.max_pool2d_with_indices.default, aten.permute_copy.default,
                         aten.view_copy.default, aten.cat.default}
STATIC_OPS = STATIC_WEIGHTED | SAME_QPARAMS | {aten.add.Tensor, aten.mean.dim}


def _static_q(node: Any) -> Optional[Tuple[float, int]]:
    """(scale, zero point) of a static per-tensor int8 quantize in [-128, 127]."""
    if not (isinstance(node, Node) and node.op == "call_function" and node.target == Q):
        return None
    _, scale, zp, qmin, qmax, dtype = node.args[:6]
    if not isinstance(scale, float) or not isinstance(zp, int) or (qmin, qmax) != (-128, 127) \
            or dtype != torch.int8:
        return None
    if not node.users or any(u.target != DQ or tuple(u.args[1:6]) != tuple(node.args[1:6])
                             for u in node.users):
        return None
    return float(scale), int(zp)


@dataclass
class _Static:
    node: Node
    out: Node                          # the node whose value the op writes
    weight: Optional[Weight] = None
    weight_per_tensor: Optional[Tuple[float, torch.Tensor, Node]] = None
    bias: Optional[Node] = None


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
        if node.op != "call_function" or node.target != aten.linear.default:
            return False
        a, w = node.args[0], node.args[1]
        return any(isinstance(x, Node) and x.op == "call_function" and x.target in self.targets
                   for x in (a, w))

    def _check_linear(self, node: Node) -> "Tuple[Optional[_Linear], str]":
        act, why = dynamic_input(node.args[0])
        if act is None:
            return None, why
        w, why = weight_of(self.facts, node.args[1])
        if w is None:
            return None, why
        in_features = val(act.source).shape[-1]
        if not isinstance(in_features, int) or in_features != w.shape[1]:
            return None, "the input's last dim is not the weight's"
        bias = arg(node, 2, "bias")
        if bias is not None and not self._float_bias(bias, w.shape[0]):
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
        w = node.args[1]
        if isinstance(w, Node) and w.target == DQ and self.facts.is_const(w.args[0]):
            scale, zp, qmin, qmax, dtype = w.args[1:6]
            if dtype != torch.int8 or zp != 0:
                return None, "per-tensor weights are not symmetric int8"
            return (float(scale), self.facts.data(w.args[0]), w), ""
        return weight_of(self.facts, w, val(w).dim())

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
            if val(n.args[0]).dim() != 4 or n.args[6]:
                return "only 2-d convolutions (not transposed) run quantized"
        if n.target in STATIC_WEIGHTED:
            w, why = self._static_weight(n)
            if w is None:
                return why
            bias = arg(n, 2, "bias")
            oc = val(n.args[1]).shape[0]
            if bias is not None and not self._float_bias(bias, oc):
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
            if n.op != "call_function" or n.target not in STATIC_OPS:
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
        if lin is not None:
            xin = _dynamic_value(b, lin.act)
            wid = _weight_value(b, lin.weight)
            bid = b.constant(lin.bias) if lin.bias is not None else 0xFFFFFFFF
            b.node("FullyConnected", node, input1_id=xin, filter_id=wid, bias_id=bid,
                   output_id=b.output(node, "nchw"))
        elif node in self.static_q:
            _lower_quantize(b, node, self.static_q[node])
        elif self.is_static_dq(node):
            _lower_dequantize(b, node, self)
        elif node in self.static_ops:
            b.static = True
            try:
                op = self.static_ops[node]
                if node.target == aten.linear.default:
                    _static_linear(b, op, self)
                elif node.target == aten.convolution.default:
                    _static_conv(b, op, self)
                else:
                    OPS[node.target].lower(b, node)
            finally:
                b.static = False
        # anything else is a chain node: its op writes what it stands for


def _static_input(node: Any) -> Optional[Node]:
    """The static quantize a dequantize node reads, if it is one."""
    if isinstance(node, Node) and node.target == DQ and _static_q(node.args[0]) is not None:
        return node.args[0]
    return None


def _lower_quantize(b: Any, q: Node, params: Tuple[float, int]) -> None:
    """A static op before q wrote the quantized value already; anything else
    is float32 and is converted."""
    src = q.args[0]
    if src in b.values and b.g.values[b.values[src][0]].datatype == QINT8:
        b.values[q] = b.values[src]
        return
    layout = b.layout_of(src)
    x = b.input(src, layout)
    qv = b.g.value(b.g.values[x].dims, datatype=QINT8,
                   quant=QuantParams(PER_TENSOR, {"scale": params[0], "zero_point": params[1]}))
    b.node("Convert", q, input_id=x, output_id=qv)
    b.values[q] = (qv, layout)


def _lower_dequantize(b: Any, dq: Node, plan: "QuantPlan") -> None:
    """Static ops read the quantized value itself; other readers (float32
    ops, the delegate's outputs) get it converted to float32."""
    if all(u in plan.static_ops for u in dq.users):
        return
    qv, layout = b.values[dq.args[0]]
    fv = b.g.value(b.g.values[qv].dims, datatype=FP32)
    b.node("Convert", dq, input_id=qv, output_id=fv)
    b.values[dq] = (fv, layout)


def _static_filter(b: Any, op: _Static, layout: Callable[[torch.Tensor], torch.Tensor],
                   channel_dim: int) -> int:
    """The int8 weights of a static op in the payload's layout: per channel
    (qcint8, float32 scales in named data) or per tensor (qint8)."""
    tag = b.tag_of(op.node.args[1])
    g = b.g
    if op.weight is not None:
        w = layout(op.weight.data.detach().to(torch.int8)).contiguous()
        w_scale = op.weight.scale.detach().to(torch.float32).contiguous()
        data = g.constant_data(w.numpy().tobytes(), tag)
        sidx = g.constant_data(w_scale.numpy().tobytes(), tag, "scale_")
        return g.value(list(w.shape), constant=data, datatype=QCINT8, quant=QuantParams(
            PER_CHANNEL, {"scale": [], "channel_dim": channel_dim, "scale_buffer_idx": sidx,
                          "num_scales": w_scale.numel()}))
    scale, wdata, _ = op.weight_per_tensor  # type: ignore[misc]
    w = layout(wdata.detach().to(torch.int8)).contiguous()
    data = g.constant_data(w.numpy().tobytes(), tag)
    return g.value(list(w.shape), constant=data, datatype=QINT8,
                   quant=QuantParams(PER_TENSOR, {"scale": scale, "zero_point": 0}))


def _static_bias(b: Any, op: _Static, plan: "QuantPlan") -> int:
    """A static op's bias as int32 with scale input scale x weight scale
    (per channel: qcint32, per tensor: qint32), rounded as
    quantize_per_channel / quantize_per_tensor round."""
    if op.bias is None:
        return 0xFFFFFFFF
    in_scale = plan.static_q[op.node.args[0].args[0]][0]
    tag = b.tag_of(op.node.args[1])
    g = b.g
    if op.weight is not None:
        b_scale: Any = op.weight.scale.detach().to(torch.float32).contiguous() * in_scale
    else:
        b_scale = op.weight_per_tensor[0] * in_scale  # type: ignore[index]
    bias = b.constant_data(op.bias).detach().to(torch.float32)
    if isinstance(b_scale, torch.Tensor):
        q = _qd.quantize_per_channel.default(bias, b_scale, torch.zeros_like(b_scale, dtype=torch.int64),
                                             0, -2 ** 31, 2 ** 31 - 1, torch.int32)
        data = g.constant_data(q.contiguous().numpy().tobytes(), tag)
        sidx = g.constant_data(b_scale.contiguous().numpy().tobytes(), tag, "scale_")
        return g.value([bias.numel()], constant=data, datatype=QCINT32, quant=QuantParams(
            PER_CHANNEL, {"scale": [], "channel_dim": 0, "scale_buffer_idx": sidx,
                          "num_scales": b_scale.numel()}))
    q = _qd.quantize_per_tensor.default(bias, b_scale, 0, -2 ** 31, 2 ** 31 - 1, torch.int32)
    data = g.constant_data(q.contiguous().numpy().tobytes(), tag)
    return g.value([bias.numel()], constant=data, datatype=QINT32,
                   quant=QuantParams(PER_TENSOR, {"scale": b_scale, "zero_point": 0}))


def _static_linear(b: Any, op: _Static, plan: "QuantPlan") -> None:
    node = op.node
    x = b.input(node.args[0], "nchw")
    fid = _static_filter(b, op, lambda w: w, 0)
    bid = _static_bias(b, op, plan)
    b.node("FullyConnected", node, input1_id=x, filter_id=fid, bias_id=bid,
           output_id=b.output(node, "nchw"))


def _static_conv(b: Any, op: _Static, plan: "QuantPlan") -> None:
    node = op.node
    x = node.args[0]
    stride, padding, dilation = list(node.args[3]), list(node.args[4]), list(node.args[5])
    groups = int(node.args[8])
    wshape = tuple(val(node.args[1]).shape)
    cin = val(x).shape[1]
    depthwise = wshape[1] == 1 and groups == cin
    xin = b.input(x, "nhwc")
    fid = _static_filter(b, op, lambda w: _conv_weight(w, False, depthwise, groups),
                         3 if depthwise else 0)
    out = b.output(node, "nhwc")  # defined before the bias, as ExecuTorch numbers them
    bid = _static_bias(b, op, plan)
    kh, kw = int(wshape[2]), int(wshape[3])
    b.node("DepthwiseConv2d" if depthwise else "Conv2d", node,
           padding_top=padding[0], padding_right=padding[1], padding_bottom=padding[0],
           padding_left=padding[1], kernel_height=kh, kernel_width=kw,
           subsampling_height=stride[0], subsampling_width=stride[1],
           dilation_height=dilation[0], dilation_width=dilation[1],
           group_input_channels=1 if depthwise else int(wshape[1]),
           group_output_channels=int(wshape[0]) // cin if depthwise else int(wshape[0]) // groups,
           groups=cin if depthwise else groups, input1_id=xin, filter_id=fid, bias_id=bid,
           output_id=out)


def _dynamic_value(b: Any, act: DynamicInput) -> int:
    """The qdint8 value of a dynamically quantized input (one Convert per
    dequantize node, as each quantizes on its own)."""
    key = ("qdint8", act.nodes[0])
    if key not in b.extra:
        x = b.input(act.source, "nchw")
        q = b.g.value(b.g.values[x].dims, datatype=QDINT8,
                      quant=QuantParams(PER_TOKEN_DYNAMIC, {"num_nonbatch_dims": 1}))
        b.node("Convert", act.nodes[0], input_id=x, output_id=q)
        b.extra[key] = q
    return b.extra[key]


def pack_int4(w: torch.Tensor) -> bytes:
    """int4 values [-8, 7] of a [rows, cols] tensor as XNNPACK's qbint4 bytes:
    value + 8, two per byte, element 2j in the low nibble (rows padded to an
    even length)."""
    u = (w.to(torch.int16) + 8).to(torch.uint8)
    if u.shape[1] % 2:
        u = torch.nn.functional.pad(u, (0, 1))
    return (u[:, 0::2] | (u[:, 1::2] << 4)).contiguous().numpy().tobytes()


def _weight_value(b: Any, w: Weight) -> int:
    if w.data is None or w.scale is None:
        raise ValueError(f"xnnpack: the data of weight {w.node.name} is not known")
    tag = b.tag_of(w.node)
    oc, ic = w.shape
    if w.group:
        if int(w.data.min()) < -8 or int(w.data.max()) > 7:
            raise ValueError(f"xnnpack: int4 weight {w.node.name} holds values outside [-8, 7]")
        scales = w.scale.detach().to(torch.bfloat16).contiguous()
        data = b.g.constant_data(pack_int4(w.data), tag)
        sidx = b.g.constant_data(scales.view(torch.int16).numpy().tobytes(), tag, "scale_")
        quant = QuantParams(PER_CHANNEL_GROUP, {"scale": [], "channel_dim": 0,
                                                "group_size": w.group,
                                                "scale_buffer_idx": sidx,
                                                "num_scales": scales.numel()})
        return b.g.value([oc, ic], constant=data, datatype=QBINT4, quant=quant)
    data = b.g.constant_data(w.data.detach().to(torch.int8).contiguous().numpy().tobytes(), tag)
    scales = w.scale.detach().to(torch.float32).contiguous()
    sidx = b.g.constant_data(scales.numpy().tobytes(), tag, "scale_")
    quant = QuantParams(PER_CHANNEL, {"scale": [], "channel_dim": 0, "scale_buffer_idx": sidx,
                                      "num_scales": scales.numel()})
    return b.g.value([oc, ic], constant=data, datatype=QCINT8, quant=quant)

