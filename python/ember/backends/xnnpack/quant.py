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
from typing import Any, Dict, List, Optional, Set, Tuple

import torch
from torch.export import ExportedProgram
from torch.fx import Node

from .graph import (
    PER_CHANNEL,
    PER_CHANNEL_GROUP,
    PER_TOKEN_DYNAMIC,
    QBINT4,
    QCINT8,
    QDINT8,
    QuantParams,
)
from .ops import arg, constant_of, val

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


def weight_of(f: _Facts, node: Any) -> "Tuple[Optional[Weight], str]":
    """The quantized weight a dequantize node reads, or why it is not one."""
    ao = torchao_ops()
    if not isinstance(node, Node) or node.op != "call_function":
        return None, "the weight is not dequantized from a constant"
    if node.target == DQ_CHANNEL:
        w, s, zp = node.args[0], node.args[1], node.args[2]
        axis, dtype = node.args[3], node.args[6]
        shape = _shape(w)
        if not (f.is_const(w) and f.is_const(s) and (zp is None or f.is_const(zp))):
            return None, "weight, scales or zero points are not constants"
        if dtype != torch.int8 or shape is None or len(shape) != 2 or axis != 0:
            return None, "weights are not int8 [out, in] quantized along the output channels"
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


class QuantPlan:
    """The quantized linears of a program that XNNPACK can take, with the
    quantize / dequantize nodes each one absorbs."""

    def __init__(self, ep: ExportedProgram, lenient: bool = False) -> None:
        self.ep = ep
        self.facts = _Facts(ep, lenient)
        self.targets = quant_targets()
        self.linears: Dict[Node, _Linear] = {}
        self.refused: Dict[Node, str] = {}
        self.owner: Dict[Node, List[Node]] = {}   # chain node -> the linears reading it
        self._find()

    # -- analysis --------------------------------------------------------- #

    def _is_quantized_linear(self, node: Node) -> bool:
        if node.op != "call_function" or node.target != aten.linear.default:
            return False
        a, w = node.args[0], node.args[1]
        return any(isinstance(x, Node) and x.op == "call_function" and x.target in self.targets
                   for x in (a, w))

    def _check_linear(self, node: Node) -> "Tuple[Optional[_Linear], str]":
        act, why = dynamic_input(node.args[0])
        if act is None:
            return None, why + " (XNNPACK takes dynamically quantized linear inputs here; " \
                               "static int8 linears stay on the portable kernels)"
        w, why = weight_of(self.facts, node.args[1])
        if w is None:
            return None, why
        in_features = val(act.source).shape[-1]
        if not isinstance(in_features, int) or in_features != w.shape[1]:
            return None, "the input's last dim is not the weight's"
        bias = arg(node, 2, "bias")
        if bias is not None:
            b = val(bias)
            if not self.facts.is_const(bias) or not isinstance(b, torch.Tensor) or \
                    b.dtype != torch.float32 or tuple(b.shape) != (w.shape[0],):
                return None, "the bias is not a constant float32 [out] tensor"
        return _Linear(node, act, w, bias), ""

    def _find(self) -> None:
        candidates: Dict[Node, _Linear] = {}
        for n in self.ep.graph.nodes:
            if self._is_quantized_linear(n):
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
        self.owner = {}
        for n, lin in candidates.items():
            for c in lin.act.nodes + lin.weight.nodes:
                self.owner.setdefault(c, []).append(n)

    # -- questions -------------------------------------------------------- #

    def covers(self, node: Node) -> bool:
        """Whether node belongs to the quantized side (a q/dq/choose op, a
        getitem of one, or a linear over dequantized operands)."""
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:
            src = node.args[0]
            return isinstance(src, Node) and src.target in self.targets
        return node.target in self.targets or self._is_quantized_linear(node)

    def reason(self, node: Node) -> Optional[str]:
        if node in self.linears or node in self.owner:
            return None
        if node in self.refused:
            return self.refused[node]
        return "a quantize / dequantize step outside a pattern XNNPACK runs whole"

    # -- lowering --------------------------------------------------------- #

    def lower(self, b: Any, node: Node) -> None:
        lin = self.linears.get(node)
        if lin is None:
            return  # a chain node: its linear writes what it stands for
        xin = _dynamic_value(b, lin.act)
        wid = _weight_value(b, lin.weight)
        bid = b.constant(lin.bias) if lin.bias is not None else 0xFFFFFFFF
        b.node("FullyConnected", node, input1_id=xin, filter_id=wid, bias_id=bid,
               output_id=b.output(node, "nchw"))


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

