"""Int8 weight-only linears for the Vulkan delegate.

`int8_weight_only(model)` replaces every nn.Linear with an Int8Linear: its
weight rounded to int8 per output channel (symmetric, scale = max|w| / 127)
and applied with `aten._weight_int8pack_mm(x, weight_int8, scales)`, plus
the float bias. The Vulkan payload runs that op as ExecuTorch's Vulkan
runtime registers it (aten._weight_int8pack_mm.default: input, int8 weight
[N, K], scales [N], output); activations stay float.
"""

from __future__ import annotations

import torch
import torch.nn as nn


class Int8Linear(nn.Module):
    """y = x @ (weight_int8 * scales[:, None]).T + bias, weights stored int8."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        w = linear.weight.detach().float()
        scales = w.abs().amax(dim=1).clamp(min=1e-12) / 127.0
        q = torch.clamp(torch.round(w / scales[:, None]), -127, 127).to(torch.int8)
        self.register_buffer("weight_int8", q)
        self.register_buffer("scales", scales.to(linear.weight.dtype))
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone())
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        y = torch.ops.aten._weight_int8pack_mm(x.reshape(-1, shape[-1]), self.weight_int8,
                                               self.scales)
        y = y.reshape(*shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias


def int8_weight_only(model: nn.Module) -> nn.Module:
    """model with each nn.Linear replaced by an Int8Linear (in place; returns model)."""
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Linear):
            setattr(model, name, Int8Linear(child))
        else:
            int8_weight_only(child)
    return model


__all__ = ["Int8Linear", "int8_weight_only"]
