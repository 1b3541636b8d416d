"""Dynamically quantized linear layers lowered by the reference exporter's
XnnpackPartitioner, run in libember's XnnpackBackend and in the reference
runtime (XNNPACK itself).

- int8 per-channel weights with int8 activations quantized per row at run
  time (XNNPACKQuantizer, dynamic): Convert to qdint8, FullyConnected with a
  qcint8 filter;
- int4 weights in groups (torchao Int8DynamicActivationIntxWeightConfig,
  "8da4w"): qbint4 filters with bfloat16 scales;

over input channels that are odd, below and above the kernels' block sizes,
output channels around the panel width (16), with and without bias, 2-d and
3-d inputs (every leading dim a row) and a dynamic batch.

Tolerance: one quantization step of the output, (max - min) / 255 of the
reference's output (a row quantized one step apart from XNNPACK's would move
the output by about that much; ember quantizes as XNNPACK does and lands far
closer, see tests/fixtures/README.md).
"""

from __future__ import annotations

from typing import Any, Sequence

import pytest
import torch
import torch.nn as nn
from torch.export import Dim

ember_runtime = pytest.importorskip("ember.runtime")
pytest.importorskip("executorch.backends.xnnpack")
pytest.importorskip("torchao")


class Linear(nn.Module):
    def __init__(self, ic: int, oc: int, bias: bool, relu: bool) -> None:
        super().__init__()
        self.fc = nn.Linear(ic, oc, bias=bias)
        self.relu = relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return torch.relu(y) if self.relu else y


def lower(model: nn.Module, example: tuple, dynamic_shapes: Any, scheme: str) -> bytes:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    if scheme == "qd8":
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer,
            get_symmetric_quantization_config,
        )
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

        quantizer = XNNPACKQuantizer().set_global(
            get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True))
        graph = torch.export.export(model, example, dynamic_shapes=dynamic_shapes).module()
        prepared = prepare_pt2e(graph, quantizer)
        prepared(*example)
        model = convert_pt2e(prepared)
    else:
        from torchao.quantization.granularity import PerGroup
        from torchao.quantization.quant_api import (
            Int8DynamicActivationIntxWeightConfig,
            quantize_,
        )

        quantize_(model, Int8DynamicActivationIntxWeightConfig(
            weight_dtype=torch.int4, weight_granularity=PerGroup(int(scheme[len("8da4w-g"):]))))
    ep = torch.export.export(model, example, dynamic_shapes=dynamic_shapes)
    edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    return edge.to_executorch().buffer


def check(model: nn.Module, example: tuple, runs: Sequence[torch.Tensor], scheme: str,
          dynamic_shapes: Any = None) -> None:
    from executorch.runtime import Runtime

    torch.manual_seed(0)
    buffer = lower(model.eval(), example, dynamic_shapes, scheme)
    program = ember_runtime.Runtime.get().load_program(buffer)
    meta = program.metadata("forward")
    assert meta.num_delegates >= 1 and not meta.operators, \
        f"not lowered whole to the delegate: {meta.operators}"
    ours = program.load_method("forward")
    ref = Runtime.get().load_program(buffer).load_method("forward")
    for x in runs:
        (want,) = ref.execute([x.clone()])
        (got,) = ours.execute([x.clone()])
        step = float(want.max() - want.min()) / 255.0
        assert got.shape == want.shape
        diff = float((got - want).abs().max()) if want.numel() else 0.0
        assert diff <= max(step, 1e-6), f"{scheme} {tuple(x.shape)}: max diff {diff}, step {step}"


@pytest.mark.parametrize("ic,oc,bias,relu", [
    (7, 1, True, False), (33, 17, True, True), (64, 16, False, False), (130, 40, True, False),
])
def test_qd8_linear(ic: int, oc: int, bias: bool, relu: bool) -> None:
    torch.manual_seed(ic * 100 + oc)
    model = Linear(ic, oc, bias, relu)
    x = torch.randn(3, ic)
    check(model, (x,), [x, torch.randn(3, ic) * 4, torch.zeros(3, ic)], "qd8")


def test_qd8_three_dims_and_dynamic_batch() -> None:
    torch.manual_seed(3)
    model = Linear(20, 24, True, False)
    x = torch.randn(2, 5, 20)
    batch = Dim("batch", min=1, max=6)
    check(model, (x,), [x, torch.randn(1, 5, 20), torch.randn(6, 5, 20)], "qd8",
          dynamic_shapes=({0: batch},))


@pytest.mark.parametrize("ic,oc,bias,group", [
    (32, 5, True, 32), (64, 17, False, 32), (160, 16, True, 32), (128, 33, True, 64),
])
def test_8da4w_linear(ic: int, oc: int, bias: bool, group: int) -> None:
    torch.manual_seed(ic + oc)
    model = Linear(ic, oc, bias, False)
    x = torch.randn(2, 3, ic)
    check(model, (x,), [x, torch.randn(2, 3, ic) * 0.1], f"8da4w-g{group}")


def test_static_quantization_is_refused_naming_the_node() -> None:
    """Statically quantized operands (qint8 activations, qcint32 biases) are not
    run: method load fails at init and names the node and its debug handle."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    torch.manual_seed(5)
    model = Linear(16, 8, True, True).eval()
    x = torch.randn(2, 16)
    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True, is_dynamic=False))
    prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
    prepared(x)
    ep = torch.export.export(convert_pt2e(prepared), (x,))
    edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    buffer = edge.to_executorch().buffer
    program = ember_runtime.Runtime.get().load_program(buffer)
    named = r"xnnpack node \d+ \(\w+, debug handle \d+\).*qint8"
    with pytest.raises(ember_runtime.EmberError, match=named):
        program.load_method("forward")
