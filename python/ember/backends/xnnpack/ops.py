"""Which edge operators the XNNPACK payload can express, and how.

One table, read by the partitioner (may this node be delegated?) and by
preprocess (the XNNGraph nodes it becomes): each entry has a `check` that
returns None or the reason a node stays outside, and a `lower` that adds its
nodes to the graph being built. Only float32 is delegated here; spatial ops
(convolutions, pooling, resize) run on NHWC values, and the Builder inserts
the transposes their neighbours need (see preprocess.py).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx import Node

from ...dialect import dim_order_ops

aten = torch.ops.aten


# --------------------------------------------------------------------------- #
# Node facts
# --------------------------------------------------------------------------- #


def arg(node: Node, index: int, name: str, default: Any = None) -> Any:
    """Argument `name` (position index) of a call, or its default."""
    if name in node.kwargs:
        return node.kwargs[name]
    if index < len(node.args):
        return node.args[index]
    return default


def val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, Node) else None


def is_f32(node: Any) -> bool:
    v = val(node)
    return isinstance(v, torch.Tensor) and v.dtype == torch.float32


def rank(node: Node) -> int:
    return val(node).dim()


def is_static(node: Node) -> bool:
    return all(isinstance(s, int) for s in val(node).shape)


def constant_of(ep: ExportedProgram, node: Any) -> Optional[torch.Tensor]:
    """The data of a constant placeholder (weight, lifted constant), or of a
    permute or view of one (a decomposed linear reads its weight through a
    transpose), else None."""
    if not isinstance(node, Node):
        return None
    if node.op == "call_function" and node.target in _CONSTANT_LAYOUT_OPS:
        src = constant_of(ep, node.args[0])
        if src is None or not is_static(node):
            return None
        if node.target == aten.permute_copy.default:
            return src.permute(*node.args[1]).contiguous()
        return src.reshape(list(val(node).shape))
    if node.op != "placeholder":
        return None
    for s in ep.graph_signature.input_specs:
        if getattr(s.arg, "name", None) != node.name or s.kind == InputKind.USER_INPUT:
            continue
        if s.kind == InputKind.BUFFER and s.target in ep.graph_signature.buffers_to_mutate.values():
            return None
        if s.target in ep.state_dict:
            return ep.state_dict[s.target]
        if s.target in ep.constants and isinstance(ep.constants[s.target], torch.Tensor):
            return ep.constants[s.target]
    return None


# layout ops that are folded when they read a constant
_CONSTANT_LAYOUT_OPS = (aten.permute_copy.default, aten.view_copy.default)


def _scalar(v: Any) -> Optional[float]:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


@dataclass
class OpSpec:
    check: Callable[[ExportedProgram, Node], Optional[str]]
    lower: Callable[[Any, Node], None]


def _tensor_args(node: Node) -> List[Node]:
    return [a for a in node.args if isinstance(a, Node)] + [
        a for a in node.kwargs.values() if isinstance(a, Node)]


def _layout_ok(v: torch.Tensor) -> bool:
    """Whether the delegate can take or give v in its dim order: contiguous,
    or channels-last for a 4-d tensor (values inside a delegate have the
    Builder's layouts; only these two cross its boundary)."""
    order = v.dim_order()
    return order == tuple(range(v.dim())) or (v.dim() == 4 and order == (0, 2, 3, 1))


def _all_f32(node: Node) -> Optional[str]:
    for a in _tensor_args(node) + [node]:
        v = val(a)
        if not isinstance(v, torch.Tensor):
            continue
        if not is_f32(a):
            return f"{a.name} is {v.dtype}, not float32"
        if v.dim() > 6:
            return f"{a.name} has rank {v.dim()} > 6"
        if not _layout_ok(v):
            return f"{a.name} has dim order {list(v.dim_order())}"
    return None


def _always(ep: ExportedProgram, node: Node) -> Optional[str]:
    return _all_f32(node)


# --------------------------------------------------------------------------- #
# Elementwise
# --------------------------------------------------------------------------- #

_UNARY = {
    aten.sigmoid.default: "Sigmoid", aten.tanh.default: "Tanh", aten.exp.default: "Exp",
    aten.log.default: "Log", aten.sqrt.default: "SquareRoot", aten.rsqrt.default: "ReciprocalSquareRoot",
    aten.abs.default: "Abs", aten.neg.default: "Negate", aten.floor.default: "Floor",
    aten.ceil.default: "Ceiling", aten.sin.default: "Sin", aten.cos.default: "Cos",
    aten.hardswish.default: "Hardswish",
}

_BINARY = {
    aten.add.Tensor: "Add", aten.sub.Tensor: "Subtract", aten.mul.Tensor: "Multiply",
    aten.div.Tensor: "Div", aten.minimum.default: "Minimum", aten.maximum.default: "Maximum",
}


def _unary_lower(kind: str) -> Callable[[Any, Node], None]:
    def lower(b: Any, node: Node) -> None:
        x = b.input(node.args[0], layout=b.layout_of(node.args[0]))
        b.node(kind, node, input_id=x, output_id=b.output(node, b.layout_of(node.args[0])))
    return lower


def _check_binary(ep: ExportedProgram, node: Node) -> Optional[str]:
    if node.target in (aten.add.Tensor, aten.sub.Tensor) and arg(node, 2, "alpha", 1) != 1:
        return "alpha != 1"
    if not all(isinstance(a, Node) for a in node.args[:2]):
        return "a scalar operand"
    return _all_f32(node)


def _binary_lower(kind: str) -> Callable[[Any, Node], None]:
    def lower(b: Any, node: Node) -> None:
        a, c = node.args[0], node.args[1]
        layout = b.common_layout([a, c])
        ia, ic = b.input(a, layout), b.input(c, layout)
        b.node(kind, node, input1_id=ia, input2_id=ic, output_id=b.output(node, layout))
    return lower


def _check_clamp(ep: ExportedProgram, node: Node) -> Optional[str]:
    if node.target == aten.clamp.default:
        lo, hi = arg(node, 1, "min"), arg(node, 2, "max")
        if (lo is not None and _scalar(lo) is None) or (hi is not None and _scalar(hi) is None):
            return "bounds are not numbers"
    return _all_f32(node)


def _clamp_bounds(node: Node) -> "tuple[float, float]":
    if node.target == aten.relu.default:
        return 0.0, math.inf
    if node.target == aten.hardtanh.default:
        return float(arg(node, 1, "min_val", -1.0)), float(arg(node, 2, "max_val", 1.0))
    lo, hi = arg(node, 1, "min"), arg(node, 2, "max")
    return (-math.inf if lo is None else float(lo)), (math.inf if hi is None else float(hi))


def _clamp_lower(b: Any, node: Node) -> None:
    layout = b.layout_of(node.args[0])
    x = b.input(node.args[0], layout)
    n = b.node("Clamp", node, input_id=x, output_id=b.output(node, layout))
    n.output_min, n.output_max = _clamp_bounds(node)


def _check_gelu(ep: ExportedProgram, node: Node) -> Optional[str]:
    if arg(node, 1, "approximate", "none") != "none":
        return "tanh approximation (the payload's Gelu is exact)"
    return _all_f32(node)


def _check_pow(ep: ExportedProgram, node: Node) -> Optional[str]:
    if _scalar(node.args[1]) != 2.0:
        return "exponent other than 2"
    return _all_f32(node)


def _check_leaky(ep: ExportedProgram, node: Node) -> Optional[str]:
    if node.target == aten.elu.default and (arg(node, 2, "scale", 1) != 1 or
                                            arg(node, 3, "input_scale", 1) != 1):
        return "scale or input_scale != 1"
    return _all_f32(node)


def _leaky_lower(b: Any, node: Node) -> None:
    layout = b.layout_of(node.args[0])
    x = b.input(node.args[0], layout)
    if node.target == aten.leaky_relu.default:
        b.node("LeakyReLU", node, negative_slope=float(arg(node, 1, "negative_slope", 0.01)),
               input_id=x, output_id=b.output(node, layout))
    else:
        b.node("ELU", node, alpha=float(arg(node, 1, "alpha", 1.0)), input_id=x,
               output_id=b.output(node, layout))


def _check_softmax(ep: ExportedProgram, node: Node) -> Optional[str]:
    d = node.args[1] % max(rank(node), 1)
    if d != rank(node) - 1:
        return "softmax over a dim other than the last"
    return _all_f32(node)


def _softmax_lower(b: Any, node: Node) -> None:
    x = b.input(node.args[0], "nchw")
    b.node("Softmax", node, input_id=x, output_id=b.output(node, "nchw"))


def _check_prelu(ep: ExportedProgram, node: Node) -> Optional[str]:
    w = constant_of(ep, node.args[1])
    if w is None or w.dim() != 1 or rank(node) != 4:
        return "a slope that is not a constant [C] or [1], or an input that is not 4-d"
    return _all_f32(node)


def _prelu_lower(b: Any, node: Node) -> None:
    x = b.input(node.args[0], "nhwc")
    slope = b.constant(node.args[1])
    b.node("PReLU", node, input1_id=x, input2_id=slope, output_id=b.output(node, "nhwc"))


# --------------------------------------------------------------------------- #
# Matrix products
# --------------------------------------------------------------------------- #


def _check_linear(ep: ExportedProgram, node: Node) -> Optional[str]:
    w = constant_of(ep, node.args[1])
    bias = arg(node, 2, "bias")
    if w is None or w.dim() != 2:
        return "weight is not a constant 2-d tensor"
    if bias is not None and constant_of(ep, bias) is None:
        return "bias is not constant"
    if rank(node.args[0]) < 1:
        return "scalar input"
    return _all_f32(node)


def _linear_lower(b: Any, node: Node) -> None:
    x = b.input(node.args[0], "nchw")
    w = b.constant(node.args[1])
    bias = arg(node, 2, "bias")
    bid = b.constant(bias) if bias is not None else 0xFFFFFFFF
    b.node("FullyConnected", node, input1_id=x, filter_id=w, bias_id=bid,
           output_id=b.output(node, "nchw"))


def _check_mm(ep: ExportedProgram, node: Node) -> Optional[str]:
    """mm / addmm: with a constant second operand, a fully connected node
    (transposed weights); mm of two runtime tensors: a batch matmul."""
    if node.target == aten.addmm.default:
        if arg(node, 3, "beta", 1) != 1 or arg(node, 4, "alpha", 1) != 1:
            return "beta or alpha != 1"
        if constant_of(ep, node.args[2]) is None or constant_of(ep, node.args[0]) is None:
            return "a runtime weight or bias"
        if constant_of(ep, node.args[0]).dim() != 1:
            return "bias is not 1-d"
    return _all_f32(node)


def _mm_lower(b: Any, node: Node) -> None:
    if node.target == aten.addmm.default:
        bias, x, w = node.args[0], node.args[1], node.args[2]
    else:
        bias, (x, w) = None, node.args[:2]
    if b.constant_data(w) is None:  # mm of two runtime tensors
        b.node("BatchMatrixMultiply", node, input1_id=b.input(x, "nchw"),
               input2_id=b.input(w, "nchw"), output_id=b.output(node, "nchw"))
        return
    b.node("FullyConnected", node, input1_id=b.input(x, "nchw"), filter_id=b.constant(w),
           bias_id=b.constant(bias) if bias is not None else 0xFFFFFFFF,
           output_id=b.output(node, "nchw"), flags=1)  # XNN_FLAG_TRANSPOSE_WEIGHTS


def _check_bmm(ep: ExportedProgram, node: Node) -> Optional[str]:
    return _all_f32(node)


def _bmm_lower(b: Any, node: Node) -> None:
    b.node("BatchMatrixMultiply", node, input1_id=b.input(node.args[0], "nchw"),
           input2_id=b.input(node.args[1], "nchw"), output_id=b.output(node, "nchw"))


# --------------------------------------------------------------------------- #
# Convolutions
# --------------------------------------------------------------------------- #


def _check_conv(ep: ExportedProgram, node: Node) -> Optional[str]:
    x, w = node.args[0], node.args[1]
    bias = node.args[2]
    if constant_of(ep, w) is None or (bias is not None and constant_of(ep, bias) is None):
        return "weight or bias is not constant"
    if rank(x) not in (3, 4):
        return "only 1-d and 2-d convolutions"
    if not is_static(x) and not all(isinstance(s, int) for s in val(x).shape[1:]):
        return "dynamic spatial or channel dims"
    transposed, groups = node.args[6], node.args[8]
    if transposed and rank(x) != 4:
        return "only 2-d transposed convolutions"
    if transposed and any(p < 0 for p in node.args[7]):
        return "negative output padding"
    return _all_f32(node)


def _conv_weight(w: torch.Tensor, transposed: bool, depthwise: bool, groups: int) -> torch.Tensor:
    """torch's weight in the payload's layout: OHWI, [1, KH, KW, C*M] for
    depthwise, and for transposed [groups * GOC, KH, KW, GIC]."""
    if depthwise:
        return w.permute(1, 2, 3, 0)
    if not transposed:
        return w.permute(0, 2, 3, 1)
    ic, goc, kh, kw = w.shape
    gic = ic // groups
    # [g, gic, goc, kh, kw] -> [g, goc, kh, kw, gic]
    return w.reshape(groups, gic, goc, kh, kw).permute(0, 2, 3, 4, 1).reshape(groups * goc, kh, kw, gic)


def _conv_lower(b: Any, node: Node) -> None:
    x, w_node, bias_node = node.args[0], node.args[1], node.args[2]
    stride, padding, dilation = list(node.args[3]), list(node.args[4]), list(node.args[5])
    transposed, out_pad, groups = node.args[6], list(node.args[7]), int(node.args[8])
    w = b.constant_data(w_node).detach().to(torch.float32)
    bias = b.constant_data(bias_node).detach().to(torch.float32) if bias_node is not None else None
    target = node  # the node whose value the convolution writes
    bn = conv_batch_norm(node)
    if bn is not None and b.contains(bn):
        # y = (conv(x) + b - mean) * gamma / sqrt(var + eps) + beta, folded per out channel
        gamma, beta, mean, var = (b.constant_data(a).to(torch.float32) for a in bn.args[1:5])
        scale = gamma / torch.sqrt(var + float(bn.args[6]))
        if transposed:
            ic, goc = w.shape[0], w.shape[1]
            w = (w.reshape(groups, ic // groups, goc, *w.shape[2:]) *
                 scale.reshape(groups, 1, goc, *([1] * (w.dim() - 2)))).reshape(w.shape)
        else:
            w = w * scale.reshape(-1, *([1] * (w.dim() - 1)))
        bias = ((bias if bias is not None else torch.zeros_like(mean)) - mean) * scale + beta
        target = next(iter(bn.users))
    one_d = w.dim() == 3
    if one_d:  # [N, C, L] as [N, C, L, 1]
        w = w.unsqueeze(-1)
        stride, padding, dilation = stride + [1], padding + [0], dilation + [1]
        out_pad = out_pad + [0]
    cin = val(x).shape[1]
    depthwise = not transposed and w.shape[1] == 1 and groups == cin
    kh, kw = int(w.shape[2]), int(w.shape[3])
    if transposed:
        gin, gout = int(w.shape[0]) // groups, int(w.shape[1])
    else:
        gin, gout = int(w.shape[1]), int(w.shape[0]) // groups
    xin = b.input(x, "nhwc", as_4d=one_d)
    wid = b.constant_tensor(_conv_weight(w, transposed, depthwise, groups).contiguous())
    bid = b.constant_tensor(bias) if bias is not None else 0xFFFFFFFF
    kind = "ConvTranspose2d" if transposed else ("DepthwiseConv2d" if depthwise else "Conv2d")
    out = b.output(target, "nhwc", as_4d=one_d)
    xn = b.node(kind, node, padding_top=padding[0], padding_right=padding[1],
           padding_bottom=padding[0], padding_left=padding[1], kernel_height=kh, kernel_width=kw,
           subsampling_height=stride[0], subsampling_width=stride[1],
           dilation_height=dilation[0], dilation_width=dilation[1],
           group_input_channels=1 if depthwise else gin,
           group_output_channels=gout if not depthwise else int(w.shape[0]) // cin,
           groups=cin if depthwise else groups, adjustment_height=out_pad[0] if transposed else 0,
           adjustment_width=out_pad[1] if transposed else 0, input1_id=xin, filter_id=wid,
           bias_id=bid, output_id=out)
    if target is not node:  # the batch norm's handle (its getitem has none)
        handle = bn.meta.get("debug_handle")
        if isinstance(handle, int):
            xn.covers.append(handle)


def conv_batch_norm(node: Node) -> Optional[Node]:
    """The inference-mode batch norm a convolution feeds alone, if any (it folds
    into the convolution's weights)."""
    users = list(node.users)
    if len(users) != 1 or users[0].target != aten._native_batch_norm_legit_no_training.default:
        return None
    bn = users[0]
    if any(u.target is not operator.getitem or u.args[1] != 0 for u in bn.users):
        return None
    return bn


def _check_batch_norm(ep: ExportedProgram, node: Node) -> Optional[str]:
    x = node.args[0]
    if not isinstance(x, Node) or x.target != aten.convolution.default or conv_batch_norm(x) is not node:
        return "not after a convolution it can fold into"
    if any(constant_of(ep, a) is None for a in node.args[1:5]):
        return "statistics or affine parameters are not constant"
    if _check_conv(ep, x) is not None:
        return "the convolution before it stays outside"
    return None


def _batch_norm_lower(b: Any, node: Node) -> None:
    """Nothing: the convolution before it folded it in (and wrote its output)."""


def _getitem_check(ep: ExportedProgram, node: Node) -> Optional[str]:
    src = node.args[0]
    if not isinstance(src, Node) or node.args[1] != 0 or src.target not in (
            aten.max_pool2d_with_indices.default, aten._native_batch_norm_legit_no_training.default):
        return "an item of an output that stays outside"
    return unsupported_reason(ep, src)


# --------------------------------------------------------------------------- #
# Pooling and resize
# --------------------------------------------------------------------------- #


def _pair(v: Any, default: Sequence[int]) -> List[int]:
    v = list(v) if v else list(default)
    return v * 2 if len(v) == 1 else v


def _check_max_pool(ep: ExportedProgram, node: Node) -> Optional[str]:
    if rank(node.args[0]) != 4 or not is_f32(node.args[0]):
        return "input is not a 4-d float32 tensor"
    if any(u.target is not operator.getitem or u.args[1] != 0 for u in node.users):
        return "its indices are used"
    return _all_f32(node)


def _pool_extra_pad(size: int, k: int, s: int, p: int, d: int) -> int:
    """Padding to add at the end so that floor-mode pooling gives ceil mode's size."""
    eff = d * (k - 1) + 1
    floor_out = (size + 2 * p - eff) // s + 1
    ceil_out = -(-(size + 2 * p - eff) // s) + 1
    if (ceil_out - 1) * s >= size + p:  # the last window must start inside (PyTorch's rule)
        ceil_out -= 1
    return max(0, (ceil_out - floor_out) * s)


def _max_pool_lower(b: Any, node: Node) -> None:
    x = node.args[0]
    k = _pair(arg(node, 1, "kernel_size"), [1, 1])
    s = _pair(arg(node, 2, "stride", []), k)
    p = _pair(arg(node, 3, "padding", [0]), [0, 0])
    d = _pair(arg(node, 4, "dilation", [1]), [1, 1])
    extra = [0, 0]
    if arg(node, 5, "ceil_mode", False):
        h, w = val(x).shape[2], val(x).shape[3]
        extra = [_pool_extra_pad(h, k[0], s[0], p[0], d[0]), _pool_extra_pad(w, k[1], s[1], p[1], d[1])]
    xin = b.input(x, "nhwc")
    out = b.output(next(iter(node.users)), "nhwc")  # the getitem of the values
    b.node("MaxPooling2d", node, padding_top=p[0], padding_right=p[1] + extra[1],
           padding_bottom=p[0] + extra[0], padding_left=p[1], pooling_height=k[0],
           pooling_width=k[1], stride_height=s[0], stride_width=s[1], dilation_height=d[0],
           dilation_width=d[1], input_id=xin, output_id=out, flags=0x40)


def _check_avg_pool(ep: ExportedProgram, node: Node) -> Optional[str]:
    if rank(node.args[0]) != 4:
        return "input is not 4-d"
    p = _pair(arg(node, 3, "padding", [0]), [0, 0])
    if arg(node, 4, "ceil_mode", False):
        return "ceil_mode"
    if any(p) and arg(node, 5, "count_include_pad", True):
        return "padding counted in the average"
    if arg(node, 6, "divisor_override") is not None:
        return "divisor_override"
    return _all_f32(node)


def _avg_pool_lower(b: Any, node: Node) -> None:
    k = _pair(arg(node, 1, "kernel_size"), [1, 1])
    s = _pair(arg(node, 2, "stride", []), k)
    p = _pair(arg(node, 3, "padding", [0]), [0, 0])
    xin = b.input(node.args[0], "nhwc")
    b.node("AvgPooling2d", node, padding_top=p[0], padding_right=p[1], padding_bottom=p[0],
           padding_left=p[1], pooling_height=k[0], pooling_width=k[1], stride_height=s[0],
           stride_width=s[1], input_id=xin, output_id=b.output(node, "nhwc"), flags=0x40)


def _check_mean(ep: ExportedProgram, node: Node) -> Optional[str]:
    dims = sorted(d % 4 for d in (arg(node, 1, "dim") or [])) if rank(node.args[0]) == 4 else None
    if dims != [2, 3] or not arg(node, 2, "keepdim", False) or arg(node, 3, "dtype") is not None:
        return "not a mean over H and W of a 4-d tensor with keepdim"
    return _all_f32(node)


def _mean_lower(b: Any, node: Node) -> None:
    xin = b.input(node.args[0], "nhwc")
    b.node("GlobalAvgPooling2d", node, input_id=xin, output_id=b.output(node, "nhwc"), flags=0x40)


def _check_resize(ep: ExportedProgram, node: Node) -> Optional[str]:
    if rank(node.args[0]) != 4 or not is_static(node):
        return "not a 4-d resize to a static size"
    return _all_f32(node)


def _resize_lower(b: Any, node: Node) -> None:
    align = bool(arg(node, 2, "align_corners", False))
    h, w = val(node).shape[2], val(node).shape[3]
    xin = b.input(node.args[0], "nhwc")
    b.node("StaticResizeBilinear2D", node, new_height=h, new_width=w, input_id=xin,
           output_id=b.output(node, "nhwc"), flags=0x8 if align else 0)


# --------------------------------------------------------------------------- #
# Layout
# --------------------------------------------------------------------------- #


def _check_cat(ep: ExportedProgram, node: Node) -> Optional[str]:
    if len(node.args[0]) < 2 or not all(is_f32(t) for t in node.args[0]):
        return "fewer than two float32 inputs"
    if len(node.args[0]) > 5:
        return "more than five inputs"
    return _all_f32(node)


# a channels-last value stores logical (NCHW) dim d at position NHWC_POS[d],
# and its position j holds logical dim NHWC_DIM[j] (so NHWC_DIM is the
# permutation NCHW -> NHWC, and NHWC_POS its inverse)
NHWC_POS, NHWC_DIM = (0, 3, 1, 2), (0, 2, 3, 1)


def _4d_layout(b: Any, node: Node, operands: Sequence[Any]) -> str:
    """The layout a 4-d shape node (concatenate, pad, slice) runs in: channels-
    last where its operands are (see Builder.common_layout), so that a chain of
    convolutions through it needs no transposes."""
    return b.common_layout(list(operands)) if rank(node) == 4 else "nchw"


def _cat_lower(b: Any, node: Node) -> None:
    tensors = list(node.args[0])
    axis = arg(node, 1, "dim", 0) % rank(node)
    layout = _4d_layout(b, node, tensors)
    if layout == "nhwc":
        axis = NHWC_POS[axis]
    ids = [b.input(t, layout) for t in tensors] + [0xFFFFFFFF] * (5 - len(tensors))
    b.node(f"Concatenate{len(tensors)}", node, axis=axis, input1_id=ids[0], input2_id=ids[1],
           input3_id=ids[2], input4_id=ids[3], input5_id=ids[4], output_id=b.output(node, layout))


def _check_pad(ep: ExportedProgram, node: Node) -> Optional[str]:
    pads = node.args[1]
    if not all(isinstance(p, int) and p >= 0 for p in pads) or _scalar(arg(node, 2, "value", 0)) is None:
        return "negative or symbolic padding"
    return _all_f32(node)


def _pad_lower(b: Any, node: Node) -> None:
    r, pads = rank(node), list(node.args[1])
    pre, post = [0] * r, [0] * r
    for i in range(len(pads) // 2):  # (last dim's before, after, the dim before it's, ...)
        pre[r - 1 - i], post[r - 1 - i] = pads[2 * i], pads[2 * i + 1]
    layout = _4d_layout(b, node, [node.args[0]])
    if layout == "nhwc":
        pre, post = [pre[d] for d in NHWC_DIM], [post[d] for d in NHWC_DIM]
    b.node("StaticConstantPad", node, pre_paddings=pre, post_paddings=post,
           padding_value=float(arg(node, 2, "value", 0)), input_id=b.input(node.args[0], layout),
           output_id=b.output(node, layout))


def _check_slice(ep: ExportedProgram, node: Node) -> Optional[str]:
    if arg(node, 4, "step", 1) != 1 or not is_static(node) or not is_static(node.args[0]):
        return "a step or a dynamic shape"
    if 0 in val(node).shape:
        return "an empty slice"
    return _all_f32(node)


def _slice_lower(b: Any, node: Node) -> None:
    x, r = node.args[0], rank(node)
    d = arg(node, 1, "dim", 0) % r
    size = val(x).shape[d]
    start = arg(node, 2, "start") or 0
    start = max(0, min(size, start + size if start < 0 else start))
    offsets = [0] * r
    offsets[d] = start
    sizes = list(val(node).shape)
    layout = _4d_layout(b, node, [x])
    if layout == "nhwc":
        offsets, sizes = [offsets[j] for j in NHWC_DIM], [sizes[j] for j in NHWC_DIM]
    b.node("StaticSlice", node, num_dims=r, offsets=offsets, sizes=sizes,
           input_id=b.input(x, layout), output_id=b.output(node, layout))


def _permute_lower(b: Any, node: Node) -> None:
    """A transpose of the stored order. A 4-d permute of a channels-last value
    that keeps channels at dim 1 stays channels-last (an H / W swap); one that
    moves them writes a plain tensor. Two permutes only relabel the storage
    and write nothing: NCHW -> NHWC of a channels-last value is its storage
    read as a plain tensor, and NHWC -> NCHW of a plain one is that tensor
    read as a channels-last value (ConvNeXt's blocks, channels-last code)."""
    x, perm = node.args[0], [p % rank(node) for p in node.args[1]]
    have, want = b.layout_of(x), "nchw"
    if rank(node) == 4 and have == "nhwc":
        want = "nhwc" if perm[1] == 1 else "nchw"
        # of the stored orders: output position j reads input position perm[j]
        order = NHWC_DIM if want == "nhwc" else range(4)
        perm = [NHWC_POS[perm[j]] for j in order]
        if perm == [0, 1, 2, 3]:
            b.alias(node, x, want)
            return
    elif rank(node) == 4 and have == "nchw" and perm == list(NHWC_POS):
        b.alias(node, x, "nhwc")
        return
    else:
        have = "nchw"
    b.node("StaticTranspose", node, num_dims=len(perm), perm=perm, input_id=b.input(x, have),
           output_id=b.output(node, want))


def _check_view(ep: ExportedProgram, node: Node) -> Optional[str]:
    if sum(not isinstance(s, int) for s in val(node).shape) > 1:
        return "more than one dynamic dim"
    if 0 in [s for s in val(node).shape if isinstance(s, int)]:
        return "a dim of size 0"
    return _all_f32(node)


def _view_lower(b: Any, node: Node) -> None:
    shape = [s if isinstance(s, int) else 0 for s in val(node).shape]  # 0: inferred
    b.node("StaticReshape", node, num_dims=len(shape), new_shape=shape,
           input_id=b.input(node.args[0], "nchw"), output_id=b.output(node, "nchw"))


def _check_copy(ep: ExportedProgram, node: Node) -> Optional[str]:
    """A float32 clone or _to_dim_order_copy: inside the delegate a value's
    layout is the Builder's choice, so a change of dim order is a plain copy,
    and the delegate's outputs take the order the program expects."""
    if node.kwargs.get("dtype") not in (None, torch.float32):
        return "a cast to another dtype"
    return _all_f32(node)


def _copy_lower(b: Any, node: Node) -> None:
    layout = b.layout_of(node.args[0])
    b.node("Copy", node, input_id=b.input(node.args[0], layout), output_id=b.output(node, layout))


# --------------------------------------------------------------------------- #
# The table
# --------------------------------------------------------------------------- #


def _build_table() -> Dict[Any, OpSpec]:
    t: Dict[Any, OpSpec] = {}
    for op, kind in _UNARY.items():
        t[op] = OpSpec(_always, _unary_lower(kind))
    for op, kind in _BINARY.items():
        t[op] = OpSpec(_check_binary, _binary_lower(kind))
    for op in (aten.relu.default, aten.hardtanh.default, aten.clamp.default):
        t[op] = OpSpec(_check_clamp, _clamp_lower)
    t[aten.gelu.default] = OpSpec(_check_gelu, _unary_lower("Gelu"))
    t[aten.pow.Tensor_Scalar] = OpSpec(_check_pow, _unary_lower("Square"))
    t[aten.leaky_relu.default] = OpSpec(_check_leaky, _leaky_lower)
    t[aten.elu.default] = OpSpec(_check_leaky, _leaky_lower)
    t[aten._softmax.default] = OpSpec(_check_softmax, _softmax_lower)
    t[aten.prelu.default] = OpSpec(_check_prelu, _prelu_lower)
    t[aten.linear.default] = OpSpec(_check_linear, _linear_lower)
    t[aten.addmm.default] = OpSpec(_check_mm, _mm_lower)
    t[aten.mm.default] = OpSpec(_check_mm, _mm_lower)
    t[aten.bmm.default] = OpSpec(_check_bmm, _bmm_lower)
    t[aten.convolution.default] = OpSpec(_check_conv, _conv_lower)
    t[aten.max_pool2d_with_indices.default] = OpSpec(_check_max_pool, _max_pool_lower)
    t[aten.avg_pool2d.default] = OpSpec(_check_avg_pool, _avg_pool_lower)
    t[aten.mean.dim] = OpSpec(_check_mean, _mean_lower)
    t[aten.upsample_bilinear2d.default] = OpSpec(_check_resize, _resize_lower)
    t[aten.upsample_bilinear2d.vec] = OpSpec(_check_resize, _resize_lower)
    t[aten.cat.default] = OpSpec(_check_cat, _cat_lower)
    t[aten.constant_pad_nd.default] = OpSpec(_check_pad, _pad_lower)
    t[aten.slice_copy.Tensor] = OpSpec(_check_slice, _slice_lower)
    t[aten.permute_copy.default] = OpSpec(_always, _permute_lower)
    t[aten.view_copy.default] = OpSpec(_check_view, _view_lower)
    t[dim_order_ops()["clone"]] = OpSpec(_check_copy, _copy_lower)
    t[dim_order_ops()["to_copy"]] = OpSpec(_check_copy, _copy_lower)
    t[aten.unsqueeze_copy.default] = OpSpec(_check_view, _view_lower)
    t[aten.squeeze_copy.dims] = OpSpec(_check_view, _view_lower)
    t[aten.squeeze_copy.dim] = OpSpec(_check_view, _view_lower)
    t[aten._native_batch_norm_legit_no_training.default] = OpSpec(_check_batch_norm,
                                                                  _batch_norm_lower)
    t[operator.getitem] = OpSpec(_getitem_check, lambda b, node: None)
    return t


OPS: Dict[Any, OpSpec] = _build_table()

# Ops that to_edge must keep whole for the partitioner to match them.
KEEP_WHOLE = [aten.linear.default, aten.prelu.default, aten.upsample_bilinear2d.vec,
              aten.hardswish.default, aten.leaky_relu.default, aten.elu.default]


def unsupported_reason(ep: ExportedProgram, node: Node) -> Optional[str]:
    """None if node can be delegated, else why not."""
    spec = OPS.get(node.target)
    if spec is None:
        return "no XNNPACK node for it"
    return spec.check(ep, node)


def f32_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().to(torch.float32).contiguous()
    return t.numpy().tobytes() if t.numel() else b""


