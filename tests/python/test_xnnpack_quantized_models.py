"""Whole models quantized as a user of ExecuTorch's XNNPACK flow would:
`XNNPACKQuantizer` (per-channel int8 weights), static (calibrated int8
activations) and dynamic (int8 activations quantized at run time), lowered by
ExecuTorch's `XnnpackPartitioner` and run in ember's runtime and in
ExecuTorch's, on the same file.

Models (static; the U-Net and the transformer also dynamic): MobileNetV2, MobileNetV3-Small (squeeze-excite with hardsigmoid,
hardswish), ResNet-18, EfficientNet-B0 (SiLU, squeeze-excite with sigmoid)
from examples/vision at 64x64 (the layers and their order are those of
224x224; only the pixels are fewer), a small U-Net-style encoder-decoder
(strided convolutions down, transposed convolutions up, skip
concatenations) and a small transformer encoder (attention on quantized
linears, layer norm, GELU).

Tolerance: static, one step of the output's quantization (the output is
int8 in both runtimes, dequantized with the same scale); dynamic, one 255th
of the reference output's range, the rule of test_xnnpack_quantized.py.
ember's lowering of the same quantized models runs in ExecuTorch's runtime
for two of them (the other direction), with the same tolerances.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Tuple

import pytest
import torch
import torch.nn as nn

from conftest import ROOT

ember_runtime = pytest.importorskip("ember.runtime")
pytest.importorskip("executorch.backends.xnnpack")
pytest.importorskip("torchao")

sys.path.insert(0, os.path.join(ROOT, "examples", "vision"))

SIZE = 64


class UNet(nn.Module):
    """Two levels down (stride-2 convolutions), two up (transposed
    convolutions), each up level concatenated with its skip."""

    def __init__(self) -> None:
        super().__init__()

        def block(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout),
                                 nn.ReLU())

        self.enc0, self.enc1, self.enc2 = block(3, 16), block(16, 32, 2), block(32, 64, 2)
        self.up1 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.dec1 = block(64, 32)
        self.up0 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec0 = block(32, 16)
        self.head = nn.Conv2d(16, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e0 = self.enc0(x)
        e1 = self.enc1(e0)
        d1 = self.dec1(torch.cat([self.up1(self.enc2(e1)), e1], dim=1))
        d0 = self.dec0(torch.cat([self.up0(d1), e0], dim=1))
        return self.head(d0)


class Encoder(nn.Module):
    """Two pre-norm transformer layers over 16 tokens of 64 features."""

    def __init__(self, dim: int = 64, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(dim), "qkv": nn.Linear(dim, 3 * dim),
                "proj": nn.Linear(dim, dim), "ln2": nn.LayerNorm(dim),
                "up": nn.Linear(dim, 4 * dim), "down": nn.Linear(4 * dim, dim)}))
        self.out = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        hd = c // self.heads
        for blk in self.blocks:
            q, k, v = blk["qkv"](blk["ln1"](x)).split(c, dim=-1)
            q, k, v = (z.reshape(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
            a = torch.softmax(q @ k.transpose(-1, -2) / hd ** 0.5, dim=-1) @ v
            x = x + blk["proj"](a.transpose(1, 2).reshape(b, t, c))
            x = x + blk["down"](torch.nn.functional.gelu(blk["up"](blk["ln2"](x))))
        return self.out(x.mean(dim=1))


def _model(name: str) -> Tuple[nn.Module, Tuple[int, ...]]:
    if name == "unet":
        torch.manual_seed(7)
        return UNet().eval(), (1, 3, SIZE, SIZE)
    if name == "transformer":
        torch.manual_seed(8)
        return Encoder().eval(), (1, 16, 64)
    import models

    return models.build(name), (1, 3, SIZE, SIZE)


def quantize(name: str, dynamic: bool, by: str) -> Tuple[nn.Module, bytes, List[tuple]]:
    """(converted module, program, inputs) for model `name`, quantized with
    `by`'s XNNPACKQuantizer and lowered by its partitioner."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    if by == "executorch":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer, get_symmetric_quantization_config)
        from executorch.exir import to_edge_transform_and_lower
    else:
        from ember import to_edge_transform_and_lower
        from ember.backends.xnnpack import XnnpackPartitioner
        from ember.backends.xnnpack.quantizer import (XNNPACKQuantizer,
                                                      get_symmetric_quantization_config)
    model, shape = _model(name)
    g = torch.Generator().manual_seed(11)
    calib = [(torch.randn(*shape, generator=g),) for _ in range(3)]
    config = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic)
    quantizer = XNNPACKQuantizer().set_global(config)
    prepared = prepare_pt2e(torch.export.export(model, calib[0]).module(), quantizer)
    for args in calib:
        prepared(*args)
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(torch.export.export(converted, calib[0]),
                                       partitioner=[XnnpackPartitioner()])
    runs = [calib[1], (torch.randn(*shape, generator=g) * 1.5,)]
    return converted, edge.to_executorch().buffer, runs


def _output_scale(converted: Any) -> float:
    out = converted.graph.output_node().args[0]
    out = out[0] if isinstance(out, (list, tuple)) else out
    assert out.target == torch.ops.quantized_decomposed.dequantize_per_tensor.default, out.target
    return float(out.args[1])


def _run(buffer: bytes, runs: List[tuple]) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    from executorch.runtime import Runtime

    program = ember_runtime.Runtime.get().load_program(buffer)
    assert program.metadata("forward").num_delegates >= 1, "nothing was delegated"
    ours = program.load_method("forward")
    ref = Runtime.get().load_program(buffer).load_method("forward")
    return [(ours.execute([x.clone() for x in a])[0], ref.execute([x.clone() for x in a])[0])
            for a in runs]


def _check(name: str, dynamic: bool, by: str) -> None:
    converted, buffer, runs = quantize(name, dynamic, by)
    for i, (got, want) in enumerate(_run(buffer, runs)):
        assert got.shape == want.shape and torch.isfinite(got).all()
        err = float((got - want).abs().max())
        if dynamic:
            tol = float(want.max() - want.min()) / 255
            what = "1/255 of the output's range"
        else:
            tol = _output_scale(converted) * 1.0001
            what = "one output step"
        assert err <= tol, f"{name} ({'dynamic' if dynamic else 'static'}, lowered by {by}), " \
                           f"run {i}: max |ember - executorch| {err:.4g} > {what} {tol:.4g}"


# Every model static; dynamically quantized, the two whose products the
# dynamic config changes most (transposed convolutions, attention's linears):
# the CNNs' dynamic convolutions are the same kernels as the U-Net's.
CASES = [(name, False) for name in ["mobilenet_v2", "mobilenet_v3_small", "resnet18",
                                    "efficientnet_b0", "unet", "transformer"]] + \
        [("unet", True), ("transformer", True)]


@pytest.mark.parametrize("name,dynamic", CASES,
                         ids=[f"{n}-{'dynamic' if d else 'static'}" for n, d in CASES])
def test_executorch_quantized_model_runs_in_ember(name: str, dynamic: bool) -> None:
    _check(name, dynamic, "executorch")


@pytest.mark.parametrize("name,dynamic", [("mobilenet_v2", False), ("transformer", True)])
def test_ember_quantized_model_runs_in_executorch(name: str, dynamic: bool) -> None:
    _check(name, dynamic, "ember")
