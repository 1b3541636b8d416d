"""4-bit groupwise weight-only linears as one `et_vk.linear_q4gsw` call.

torchao's `IntxWeightOnlyConfig(weight_dtype=torch.int4,
granularity=PerGroup(group_size))` (after `unwrap_tensor_subclass`) leaves
each linear reading `torchao.dequantize_affine(w, [1, group_size], scales,
zero_points, torch.int8, -8, 7)` of int8 constants `w [N, K]` (values in
[-8, 7]) and float scales `[N, K / group_size]`. ExecuTorch's Vulkan flow
runs that pair as `et_vk.linear_q4gsw(x, weight, scales, group_size, bias)`
with the constants repacked: the weight's values plus 8 two to a byte along
K (column 2j in the low half of byte j, K padded with zeros to a multiple
of 8), the scales transposed to `[K / group_size, N]`, scales and bias
padded to a multiple of 4 columns; the zero points are dropped (the
weights must be symmetric).

ember does the same: the partitioner keeps `dequantize_affine` whole where
`match` accepts it (so that the edge lowering does not decompose it) and
takes it with the product it feeds; preprocess (builder.py) repacks the
constants with `pack_weight` / `pack_scales` / `pad_columns` and emits the
call. As in ExecuTorch, the input depth K must be a multiple of 4; unlike
ExecuTorch, nonzero zero points are not fused (ExecuTorch would drop them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx import Node

aten = torch.ops.aten
_WEIGHT_T = (aten.permute_copy.default, aten.t_copy.default)

# a constant placeholder's data, or None
ConstOf = Callable[[Node], Optional[torch.Tensor]]


def dequantize_affine() -> Optional[torch._ops.OpOverload]:
    """torchao's dequantize_affine, where torchao has registered it."""
    ns = getattr(torch.ops, "torchao")
    return ns.dequantize_affine.default if hasattr(ns, "dequantize_affine") else None


def constant_of(ep: ExportedProgram, node: Node) -> Optional[torch.Tensor]:
    """The data of a constant placeholder of ep (parameter, buffer or lifted constant)."""
    if not isinstance(node, Node) or node.op != "placeholder":
        return None
    for s in ep.graph_signature.input_specs:
        if getattr(s.arg, "name", None) != node.name or s.kind == InputKind.USER_INPUT:
            continue
        if s.target in ep.state_dict:
            return ep.state_dict[s.target]
        if s.target in ep.constants:
            return ep.constants[s.target]
    return None


@dataclass
class Q4Weight:
    weight: Node      # int8 [N, K], values in [-8, 7]
    scales: Node      # float [N, K / group_size]
    group_size: int
    product: Node     # the linear / mm / addmm reading the dequantized weight


def product_of(dq: Node) -> Optional[Node]:
    """The linear, mm or addmm that reads dq as its (transposed) weight."""
    if len(dq.users) != 1:
        return None
    user = next(iter(dq.users))
    if user.target is aten.linear.default and len(user.args) > 1 and user.args[1] is dq:
        return user
    if user.target in _WEIGHT_T and len(user.users) == 1:
        mm = next(iter(user.users))
        if mm.target in (aten.mm.default, aten.addmm.default) and mm.args[-1] is user:
            return mm
    return None


def _arg(node: Node, i: int, name: str, default=None):
    return node.args[i] if len(node.args) > i else node.kwargs.get(name, default)


def match(dq: Node, const_of: ConstOf) -> Optional[Q4Weight]:
    """dq as the 4-bit groupwise weight of a linear, or None."""
    op = dequantize_affine()
    if op is None or not isinstance(dq, Node) or dq.target is not op:
        return None
    w, block, s, z = (_arg(dq, i, n) for i, n in enumerate(
        ("input", "block_size", "scale", "zero_point")))
    if (_arg(dq, 4, "input_dtype"), _arg(dq, 5, "quant_min"), _arg(dq, 6, "quant_max")) != \
            (torch.int8, -8, 7):
        return None
    wd, sd = const_of(w), const_of(s)
    zd = const_of(z) if isinstance(z, Node) else None
    if wd is None or sd is None or (z is not None and zd is None):
        return None
    if wd.dim() != 2 or sd.dim() != 2 or wd.dtype != torch.int8 or \
            sd.dtype not in (torch.float32, torch.float16):
        return None
    n, k = wd.shape
    if list(block) != [1, k // sd.shape[1]] or sd.shape[0] != n or k % sd.shape[1] != 0:
        return None
    out = dq.meta.get("val")
    if k % 4 != 0 or not isinstance(out, torch.Tensor) or out.dtype != sd.dtype:
        return None
    if zd is not None and bool(zd.any()):
        return None
    if wd.numel() and (int(wd.min()) < -8 or int(wd.max()) > 7):
        return None
    product = product_of(dq)
    if product is None:
        return None
    return Q4Weight(w, s, int(block[1]), product)


def pack_weight(w: torch.Tensor) -> torch.Tensor:
    """int8 [N, K] in [-8, 7] -> uint8 [N, K8 / 2]: w + 8 two to a byte, the
    even column low, K padded with zeros to K8, a multiple of 8."""
    k = w.shape[1]
    w = F.pad(w, (0, -k % 8)) if k % 8 else w
    u = (w.to(torch.int16) + 8).to(torch.uint8)
    return (u[:, 1::2] << 4 | u[:, ::2]).contiguous()


def pad_columns(t: torch.Tensor, multiple: int = 4) -> torch.Tensor:
    """t with its last dim padded with zeros to a multiple."""
    n = t.shape[-1]
    return F.pad(t, (0, -n % multiple)).contiguous() if n % multiple else t


def pack_scales(s: torch.Tensor) -> torch.Tensor:
    """[N, groups] -> [groups, N padded to a multiple of 4]."""
    return pad_columns(s.transpose(0, 1).contiguous())


__all__ = ["Q4Weight", "constant_of", "dequantize_affine", "match", "pack_scales",
           "pack_weight", "pad_columns", "product_of"]
