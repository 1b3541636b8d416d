"""The quantized patterns of an edge graph, recognised node by node.

Each recogniser takes a node and returns what it found (a quantized weight,
a dynamically quantized input, a static quantize's qparams) or why the node
is not one; quant.py puts them together into a plan for a whole program.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

import torch
from torch.export import ExportedProgram
from torch.fx import Node

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


def weight_of(f: _Facts, node: Any, rank: int = 2,
              axis: int = 0) -> "Tuple[Optional[Weight], str]":
    """The quantized weight (of this rank, per channel along `axis`: its
    output channels, 1 for a transposed convolution's [in, out / groups,
    KH, KW]) a dequantize node reads, or why it is not one; groupwise
    weights are 2-d only."""
    ao = torchao_ops()
    if not isinstance(node, Node) or node.op != "call_function":
        return None, "the weight is not dequantized from a constant"
    if node.target == DQ_CHANNEL:
        w, s, zp = node.args[0], node.args[1], node.args[2]
        dtype = node.args[6]
        shape = _shape(w)
        if not (f.is_const(w) and f.is_const(s) and (zp is None or f.is_const(zp))):
            return None, "weight, scales or zero points are not constants"
        if dtype != torch.int8 or shape is None or len(shape) != rank or node.args[3] != axis:
            return None, f"weights are not int8 quantized along the output channels (axis {axis})"
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
# elementwise ops on two quantized values (a Multiply is a squeeze-excite's scale)
STATIC_BINARY = {aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor}
STATIC_OPS = STATIC_WEIGHTED | SAME_QPARAMS | STATIC_BINARY | {aten.mean.dim}


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


def _static_input(node: Any) -> Optional[Node]:
    """The static quantize a dequantize node reads, if it is one."""
    if isinstance(node, Node) and node.target == DQ and _static_q(node.args[0]) is not None:
        return node.args[0]
    return None
