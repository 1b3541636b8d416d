"""The XNNPACK values and nodes of quantized patterns (see quant.py): the
quantized values, their quant params and named data, written as ExecuTorch
writes them."""

from __future__ import annotations

from typing import Any, Callable, Tuple

import torch
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
from .ops import _conv_weight, val
from .quant_patterns import DynamicInput, Weight, _Static

_qd = torch.ops.quantized_decomposed


def lower_quantize(b: Any, q: Node, params: Tuple[float, int]) -> None:
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


def lower_dequantize(b: Any, dq: Node, plan: Any) -> None:
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


def _static_bias(b: Any, op: _Static, plan: Any) -> int:
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


def static_linear(b: Any, op: _Static, plan: Any) -> None:
    node = op.node
    x = b.input(node.args[0], "nchw")
    fid = _static_filter(b, op, lambda w: w, 0)
    bid = _static_bias(b, op, plan)
    b.node("FullyConnected", node, input1_id=x, filter_id=fid, bias_id=bid,
           output_id=b.output(node, "nchw"))


def static_conv(b: Any, op: _Static, plan: Any) -> None:
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


def dynamic_value(b: Any, act: DynamicInput, layout: str = "nchw") -> int:
    """The qdint8 value of a dynamically quantized input (one Convert per
    dequantize node, as each quantizes on its own): a row of a linear's
    input, or a pixel (H, W, C: three non-batch dims) of a convolution's."""
    key = ("qdint8", act.nodes[0], layout)
    if key not in b.extra:
        x = b.input(act.source, layout)
        q = b.g.value(b.g.values[x].dims, datatype=QDINT8, quant=QuantParams(
            PER_TOKEN_DYNAMIC, {"num_nonbatch_dims": 3 if layout == "nhwc" else 1}))
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


def weight_value(b: Any, w: Weight) -> int:
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


def dynamic_conv(b: Any, lin: Any) -> None:
    """A 2-d convolution of a dynamically quantized input: qdint8 NHWC input,
    qcint8 OHWI filter, float32 bias and output."""
    node, w = lin.node, lin.weight
    stride, padding, dilation = list(node.args[3]), list(node.args[4]), list(node.args[5])
    xin = dynamic_value(b, lin.act, "nhwc")
    if w.data is None or w.scale is None:
        raise ValueError(f"xnnpack: the data of weight {w.node.name} is not known")
    tag = b.tag_of(w.node)
    data = w.data.detach().to(torch.int8).permute(0, 2, 3, 1).contiguous()  # OHWI
    scales = w.scale.detach().to(torch.float32).contiguous()
    didx = b.g.constant_data(data.numpy().tobytes(), tag)
    sidx = b.g.constant_data(scales.numpy().tobytes(), tag, "scale_")
    fid = b.g.value(list(data.shape), constant=didx, datatype=QCINT8, quant=QuantParams(
        PER_CHANNEL, {"scale": [], "channel_dim": 0, "scale_buffer_idx": sidx,
                      "num_scales": scales.numel()}))
    out = b.output(node, "nhwc")  # before the bias, as ExecuTorch numbers them
    bid = b.constant(lin.bias) if lin.bias is not None else 0xFFFFFFFF
    oc, ic, kh, kw = (int(d) for d in w.shape)  # ic: input channels of a group
    groups = int(node.args[8])
    b.node("Conv2d", node, padding_top=padding[0], padding_right=padding[1],
           padding_bottom=padding[0], padding_left=padding[1], kernel_height=kh, kernel_width=kw,
           subsampling_height=stride[0], subsampling_width=stride[1],
           dilation_height=dilation[0], dilation_width=dilation[1], group_input_channels=ic,
           group_output_channels=oc // groups, groups=groups, input1_id=xin, filter_id=fid,
           bias_id=bid, output_id=out)
