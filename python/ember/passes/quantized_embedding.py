"""Dequantized embedding tables -> quantized embedding lookups.

A pt2e-quantized embedding (torchao's EmbeddingQuantizer, or any quantizer
that quantizes an embedding's weight per row) reaches to_executorch as

    table = dequantize_per_channel(q, scales, zero_points, 0, qmin, qmax, dtype)
    out = aten.embedding(table, indices)

(or `dequantize_per_channel_group` for groups of each row), with q, scales
and zero points constants. Run as it is, that dequantizes the whole table on
every call. This pass rewrites each such embedding into one
`quantized_decomposed::embedding_{byte,4bit,2bit}` call, which dequantizes
only the rows it looks up:

- values whose quant range fits in [-8, 7] (int8 weights) are packed two per
  byte (embedding_4bit), those in [-2, 1] four per byte (embedding_2bit), as
  ExecuTorch packs them; the rest stay one per byte (embedding_byte);
- zero points that are all zero are dropped, others become float tensors in
  the scales' dtype (ExecuTorch's kernels read them so); float64 scales
  become float32;
- the op is the plain overload when the output has the scales' dtype, else
  the `.dtype` one.

The dequantize stays for its other users (a weight tied to an output
projection); a weight nothing else reads is left out of the program.

It runs on the execution graph after the specs are attached (constants carry
their data) and before the out-variant pass. The result computes the same
float32 arithmetic, (q - zero_point) * scale, as the dequantize did.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import torch
from torch.fx import GraphModule, Node

from .. import dialect
from .. import quantized_embedding_ops as qe
from ..tensor_spec import TensorSpec

_qd = torch.ops.quantized_decomposed
_FLOAT_OUT = (torch.float32, torch.float16, torch.bfloat16)


def _constants(gm: GraphModule) -> Dict[Node, torch.Tensor]:
    out = {}
    for n in gm.graph.nodes:
        spec = n.meta.get("spec")
        if (n.op == "placeholder" or n.target is dialect.constant) and \
                isinstance(spec, TensorSpec) and spec.const and spec.data is not None:
            out[n] = spec.data
    return out


def _arg(node: Node, i: int, name: str, default: Any = None) -> Any:
    if i < len(node.args):
        return node.args[i]
    return node.kwargs.get(name, default)


def _table_of(dq: Node, values: Dict[Node, torch.Tensor]
              ) -> Optional[Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor], int, int]]:
    """(q (V, D), scales (V) or (V, G), zero points or None, qmin, qmax) of a
    dequantize of a constant table by rows or row groups, else None."""
    dq_channel = _qd.dequantize_per_channel.default
    dq_group = getattr(getattr(_qd, "dequantize_per_channel_group", None), "default", None)
    if dq.op != "call_function" or dq.target not in (dq_channel, dq_group):
        return None
    q_node, s_node, z_node = dq.args[0], dq.args[1], _arg(dq, 2, "zero_points")
    if q_node not in values or s_node not in values:
        return None
    if z_node is not None and z_node not in values:
        return None
    q, scales = values[q_node], values[s_node]
    zps = values[z_node] if z_node is not None else None
    if q.dim() != 2 or q.dtype not in (torch.int8, torch.uint8) or not scales.is_floating_point():
        return None
    rows, d = q.shape
    if dq.target == dq_channel:
        axis = _arg(dq, 3, "axis")
        qmin, qmax = _arg(dq, 4, "quant_min"), _arg(dq, 5, "quant_max")
        if axis not in (0, -2) or scales.numel() != rows:
            return None
        groups = 1
    else:
        qmin, qmax = _arg(dq, 3, "quant_min"), _arg(dq, 4, "quant_max")
        group_size = _arg(dq, 6, "group_size")
        if not isinstance(group_size, int) or group_size <= 0:
            return None
        group_size = min(group_size, d)
        if d % group_size:
            return None
        groups = d // group_size
        if scales.numel() != rows * groups:
            return None
    if zps is not None and zps.numel() != scales.numel():
        return None
    shape = (rows,) if groups == 1 else (rows, groups)
    scales = scales.reshape(shape)
    zps = zps.reshape(shape) if zps is not None else None
    return q, scales, zps, int(qmin), int(qmax)


def _bits_for(q: torch.Tensor, qmin: int, qmax: int) -> int:
    """The narrowest format that holds q's values exactly."""
    if q.dtype != torch.int8 or q.numel() == 0:
        return 8
    lo, hi = int(q.min()), int(q.max())
    for bits in (2, 4):
        blo, bhi = qe.QRANGE[bits]
        if blo <= qmin and qmax <= bhi and blo <= lo and hi <= bhi and \
                q.shape[1] % (8 // bits) == 0:
            return bits
    return 8


def _constant_node(gm: GraphModule, before: Node, data: torch.Tensor, like: Node) -> Node:
    data = data.detach().contiguous()
    with gm.graph.inserting_before(before):
        node = gm.graph.call_function(dialect.constant, ())
    node.meta["spec"] = TensorSpec.from_tensor(data, const=True)
    fake = like.meta.get("val")
    mode = getattr(fake, "fake_mode", None)
    if mode is not None:
        node.meta["val"] = mode.from_tensor(data, static_shapes=True)
    else:
        node.meta["val"] = data
    return node


def fuse_quantized_embeddings(gm: GraphModule) -> int:
    """Rewrites every `embedding(dequantize(constant table), indices)` of gm
    (an execution graph with specs) into a quantized embedding op; returns
    how many it rewrote."""
    values = _constants(gm)
    fused = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten.embedding.default:
            continue
        dq, indices = node.args[0], node.args[1]
        if not isinstance(dq, Node):
            continue
        table = _table_of(dq, values)
        out_val = node.meta.get("val")
        if table is None or not isinstance(out_val, torch.Tensor) or \
                out_val.dtype not in _FLOAT_OUT:
            continue
        q, scales, zps, qmin, qmax = table
        out_dtype = out_val.dtype
        if scales.dtype == torch.float64:
            scales = scales.to(torch.float32)
        if zps is not None and bool((zps == 0).all()):
            zps = None
        if zps is not None:
            if scales.dtype != out_dtype and out_dtype == torch.float32:
                scales = scales.to(torch.float32)  # exact; ExecuTorch reads zero points as out
            zps = zps.to(scales.dtype)
        bits = _bits_for(q, qmin, qmax)
        weight = qe.pack(q, bits)
        if bits != 8:
            qmin, qmax = qe.QRANGE[bits]
        with_dtype = scales.dtype != out_dtype
        op = qe.op_for_bits(bits, with_dtype)
        w_node = _constant_node(gm, node, weight, dq)
        s_node = _constant_node(gm, node, scales, dq)
        z_node = _constant_node(gm, node, zps, dq) if zps is not None else None
        with gm.graph.inserting_before(node):
            fused_node = gm.graph.call_function(
                op, (w_node, s_node, z_node, qmin, qmax, indices),
                {"dtype": out_dtype} if with_dtype else {})
        fused_node.meta = dict(node.meta)
        node.replace_all_uses_with(fused_node)
        gm.graph.erase_node(node)
        if not dq.users:
            gm.graph.erase_node(dq)
        fused += 1
    return fused
