"""Quantized graphs lowered by the reference exporter's XnnpackPartitioner
(and by ember's), run in libember's XnnpackBackend and in the reference
runtime (XNNPACK itself).

Dynamically quantized linear layers:

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

Statically quantized int8 (XNNPACKQuantizer, static, per channel or per
tensor): an MLP, a MobileNet-like CNN (conv + batch norm + relu,
depthwise, residual add, max pooling, global mean, linear) and ReLU6 /
Hardtanh clamps after convolutions (qint8 Clamp nodes), lowered by
ExecuTorch and by ember: both runtimes agree within one output quantization
step (the output's scale), and both stay within a few steps of the eager
fake-quantized model. Dynamically quantized convolutions (qdint8 input, one
scale per image) likewise. A corrupted qint8 payload fails at load with a
message, never a crash.

Quantized transposed convolutions (ConvTranspose2d on qint8 or qdint8
values): channels below and above the panel width (16), odd sizes, stride 1,
2 and 3 (pixels that take no tap), padding, output padding, dilation,
kernels 2, 3 and 4, static per
channel and per tensor and dynamic, lowered by both exporters; two groups
(which the quantizers leave in float32) from hand-written quantize /
dequantize steps; a small U-Net (convolution down, transposed convolution
up, skip concatenation). Same tolerances as above.
"""

from __future__ import annotations

import copy
import re
from typing import Any, List, Sequence, Tuple

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


# ---------------------------------------------------------------------------
# Statically quantized int8, and dynamically quantized convolutions
# ---------------------------------------------------------------------------


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(32, 64), nn.Linear(64, 48), nn.Linear(48, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l3(torch.relu(self.l2(torch.relu(self.l1(x)))))


class SmallCnn(nn.Module):
    """A MobileNet-like block: conv + bn + relu, depthwise + bn + relu,
    pointwise with a residual add and relu, max pooling, global mean, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.bn2 = nn.BatchNorm2d(16)
        self.pw = nn.Conv2d(16, 16, 1)
        self.strided = nn.Conv2d(16, 24, 3, stride=2, padding=1)
        self.fc = nn.Linear(24, 10)
        for bn in (self.bn1, self.bn2):  # statistics as a trained model has them
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv(x)))
        z = torch.relu(self.bn2(self.dw(y)))
        z = torch.relu(self.pw(z) + y)
        z = torch.relu(self.strided(torch.nn.functional.max_pool2d(z, 2)))
        return self.fc(z.mean(dim=(2, 3), keepdim=True).flatten(1))


class Clamps(nn.Module):
    """Clamps after quantized products, as MobileNetV2 has them: ReLU6 after
    a depthwise convolution, a Hardtanh of other bounds after a pointwise
    one (ExecuTorch lowers each to a qint8 Clamp node, which XNNPACK and
    ember fold into the product), and a ReLU6 of a convolution whose output
    the depthwise one reads too (a Clamp node of its own)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = nn.Conv2d(16, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        z = nn.functional.relu6(self.dw(y))
        return nn.functional.hardtanh(self.pw(nn.functional.relu6(y) + z), -0.5, 0.8)


class Deconv(nn.Module):
    """One transposed convolution; with `clamp`, a Hardtanh after it (a
    qint8 Clamp node that both runtimes fold into it)."""

    def __init__(self, ic: int, oc: int, k: int, stride: int = 1, padding: int = 0,
                 output_padding: int = 0, dilation: int = 1, clamp: bool = False) -> None:
        super().__init__()
        self.up = nn.ConvTranspose2d(ic, oc, k, stride=stride, padding=padding,
                                     output_padding=output_padding, dilation=dilation)
        self.clamp = clamp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.up(x)
        return nn.functional.hardtanh(y, -0.3, 0.5) if self.clamp else y


class TinyUNet(nn.Module):
    """An encoder-decoder: convolution, strided convolution down, transposed
    convolution up, the skip concatenated, a convolution out."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Conv2d(3, 8, 3, padding=1)
        self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.dec = nn.Conv2d(16, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.relu(self.enc(x))
        u = self.up(torch.relu(self.down(e)))  # no relu: dynamic quantizers skip one here
        return self.dec(torch.cat([u, e], dim=1))


_MODELS = {"mlp": (Mlp, (4, 32)), "cnn": (SmallCnn, (2, 3, 16, 16)),
           "clamps": (Clamps, (2, 3, 12, 12)),
           # odd sizes; output channels above 16, stride 2, padding, output padding
           "deconv_s2": (lambda: Deconv(8, 20, 3, 2, 1, 1), (2, 8, 7, 9)),
           "deconv_clamp": (lambda: Deconv(8, 20, 3, 2, 1, 1, clamp=True), (2, 8, 7, 9)),
           # input channels above 16, output channels below, kernel 4
           "deconv_k4": (lambda: Deconv(19, 5, 4, 2, 1), (1, 19, 6, 5)),
           # stride 1, kernel 2, dilation 2, 16 output channels
           "deconv_s1": (lambda: Deconv(3, 16, 2, 1, 0, 0, 2), (2, 3, 5, 5)),
           # stride 3 above kernel 2 with output padding 2: pixels that take no tap
           "deconv_s3": (lambda: Deconv(5, 18, 2, 3, 0, 2), (1, 5, 4, 6)),
           "unet": (TinyUNet, (2, 3, 12, 10))}


def quantize_and_lower(name: str, by: str, config: dict,
                       dynamic_batch: bool = False) -> Tuple[nn.Module, bytes, list]:
    """(eager quantized module, program, inputs to run) of model `name`,
    quantized and lowered by ExecuTorch (by="executorch") or ember; with
    dynamic_batch, exported with a batch dim of 1 to 8 and run at 1 and 8."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    if by == "executorch":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer,
            get_symmetric_quantization_config,
        )
        from executorch.exir import to_edge_transform_and_lower
    else:
        from ember import to_edge_transform_and_lower
        from ember.backends.xnnpack import XnnpackPartitioner
        from ember.backends.xnnpack.quantizer import (
            XNNPACKQuantizer,
            get_symmetric_quantization_config,
        )
    torch.manual_seed({"mlp": 1, "cnn": 2, "clamps": 3}.get(name, 4))
    cls, shape = _MODELS[name]
    model = cls().eval()
    calib = [(torch.randn(*shape),) for _ in range(4)]
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(**config))
    dynamic = ({0: Dim("batch", min=1, max=8)},) if dynamic_batch else None
    prepared = prepare_pt2e(torch.export.export(model, calib[0], dynamic_shapes=dynamic).module(),
                            quantizer)
    for args in calib:
        prepared(*args)
    converted = convert_pt2e(prepared)
    ep = torch.export.export(converted, calib[0], dynamic_shapes=dynamic)
    edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    runs = [calib[1], (torch.randn(*shape),), (torch.randn(*shape) * 2,)]
    if dynamic_batch:
        runs += [(torch.randn(1, *shape[1:]),), (torch.randn(8, *shape[1:]),)]
    return converted, edge.to_executorch().buffer, runs


def static_output_scale(converted: Any) -> float:
    out = converted.graph.output_node().args[0]
    out = out[0] if isinstance(out, (list, tuple)) else out
    assert out.target == torch.ops.quantized_decomposed.dequantize_per_tensor.default
    return float(out.args[1])


def run_both(buffer: bytes, runs: Sequence[tuple],
             outside: Sequence[str] = ()) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    """(ember's output, ExecuTorch's) for each input; the model must be
    delegated but for the operators in `outside`."""
    from executorch.runtime import Runtime

    program = ember_runtime.Runtime.get().load_program(buffer)
    meta = program.metadata("forward")
    assert meta.num_delegates >= 1 and set(meta.operators) <= set(outside), \
        f"not lowered whole to the delegate: {meta.operators}"
    ours = program.load_method("forward")
    ref = Runtime.get().load_program(buffer).load_method("forward")
    return [(ours.execute([x.clone() for x in args])[0], ref.execute([x.clone() for x in args])[0])
            for args in runs]


@pytest.mark.parametrize("by", ["executorch", "ember"])
@pytest.mark.parametrize("name,per_channel,dynamic_batch", [
    ("mlp", True, False), ("mlp", False, False), ("cnn", True, False), ("cnn", False, False),
    ("mlp", True, True), ("cnn", True, True), ("clamps", True, False), ("clamps", False, False)])
def test_static_int8(name: str, per_channel: bool, dynamic_batch: bool, by: str) -> None:
    converted, buffer, runs = quantize_and_lower(
        name, by, {"is_per_channel": per_channel, "is_dynamic": False}, dynamic_batch)
    step = static_output_scale(converted)
    # a dynamic batch leaves the flatten's size computation to the portable kernels
    outside = ("aten::sym_size.int", "executorch_prim::et_view.default") if dynamic_batch else ()
    for args, (got, want) in zip(runs, run_both(buffer, runs, outside)):
        assert got.shape == want.shape
        diff = float((got - want).abs().max())
        assert diff <= step * 1.01 + 1e-6, f"ember vs ExecuTorch: {diff}, step {step}"
        with torch.no_grad():
            eager = converted(*args)
        err = float((got - eager).abs().max())
        assert err <= 3 * step + 1e-6, f"ember vs eager fake-quantized: {err}, step {step}"


def test_static_clamps_are_quantized_nodes() -> None:
    """ExecuTorch lowers the clamps after quantized convolutions to Clamp
    nodes on qint8 values (which test_static_int8 runs), not to fused
    output ranges or float nodes."""
    _, buffer, _ = quantize_and_lower("clamps", "executorch",
                                      {"is_per_channel": True, "is_dynamic": False})
    clamps = [value_type(g, n["xnode_union"]["input_id"]) for g in map(decode, delegate_payloads(buffer))
              for n in g["xnodes"] if n["xnode_union_type"] == "XNNClamp"]
    assert clamps and set(clamps) == {"xnn_datatype_qint8"}, clamps


@pytest.mark.parametrize("by", ["executorch", "ember"])
def test_dynamically_quantized_conv(by: str) -> None:
    converted, buffer, runs = quantize_and_lower(
        "cnn", by, {"is_per_channel": True, "is_dynamic": True})
    payloads = [decode(b) for b in delegate_payloads(buffer)]
    convs = [n for g in payloads for n in g["xnodes"]
             if n["xnode_union_type"] == "XNNConv2d"
             and value_type(g, n["xnode_union"]["input1_id"]) == "xnn_datatype_qdint8"]
    assert convs, "no dynamically quantized convolution was lowered"
    for args, (got, want) in zip(runs, run_both(buffer, runs)):
        step = float(want.max() - want.min()) / 255.0
        diff = float((got - want).abs().max())
        assert diff <= step + 1e-6, f"ember vs ExecuTorch: {diff}, step {step}"
        with torch.no_grad():
            eager = converted(*args)
        # eager quantizes each activation per tensor over the batch, XNNPACK per image
        assert float((got - eager).abs().max()) <= 4 * step + 1e-5


# ---------------------------------------------------------------------------
# Transposed convolutions
# ---------------------------------------------------------------------------


def _deconv_types(buffer: bytes) -> List[str]:
    """The input types of the payloads' ConvTranspose2d nodes."""
    return [value_type(g, n["xnode_union"]["input1_id"])
            for g in map(decode, delegate_payloads(buffer)) for n in g["xnodes"]
            if n["xnode_union_type"] == "XNNConvTranspose2d"]


def _check_quantized(name: str, by: str, scheme: str) -> None:
    """Model `name` quantized by `scheme` ("pc", "pt": static per channel,
    per tensor; "dyn": dynamic) and lowered by `by`: its transposed
    convolutions are quantized nodes, and ember's runtime agrees with
    ExecuTorch's and with eager."""
    config = {"is_per_channel": scheme != "pt", "is_dynamic": scheme == "dyn"}
    converted, buffer, runs = quantize_and_lower(name, by, config)
    kinds = _deconv_types(buffer)
    assert kinds and set(kinds) == {"xnn_datatype_qdint8" if scheme == "dyn"
                                    else "xnn_datatype_qint8"}, kinds
    for args, (got, want) in zip(runs, run_both(buffer, runs)):
        assert got.shape == want.shape
        with torch.no_grad():
            eager = converted(*args)
        diff, err = float((got - want).abs().max()), float((got - eager).abs().max())
        if scheme == "dyn":
            step = float(want.max() - want.min()) / 255.0
            assert diff <= step + 1e-6, f"ember vs ExecuTorch: {diff}, step {step}"
            # eager quantizes each activation per tensor over the batch, XNNPACK per image
            assert err <= 4 * step + 1e-5, f"ember vs eager: {err}, step {step}"
        else:
            step = static_output_scale(converted)
            assert diff <= step * 1.01 + 1e-6, f"ember vs ExecuTorch: {diff}, step {step}"
            assert err <= 3 * step + 1e-6, f"ember vs eager fake-quantized: {err}, step {step}"


@pytest.mark.parametrize("name,scheme,by", [
    ("deconv_clamp", "pc", "executorch"), ("deconv_s2", "pt", "ember"),
    ("deconv_s2", "dyn", "executorch"), ("deconv_k4", "pc", "ember"),
    ("deconv_k4", "pt", "executorch"), ("deconv_s1", "pc", "ember"),
    ("deconv_s1", "dyn", "ember"), ("deconv_s3", "pc", "ember"), ("deconv_s3", "dyn", "ember"),
])
def test_quantized_deconv(name: str, scheme: str, by: str) -> None:
    _check_quantized(name, by, scheme)


@pytest.mark.parametrize("scheme,by", [("pc", "executorch"), ("pt", "ember"), ("dyn", "ember")])
def test_quantized_unet(scheme: str, by: str) -> None:
    _check_quantized("unet", by, scheme)


class GroupedQDeconv(nn.Module):
    """A statically quantized transposed convolution in two groups, written
    as the quantize / dequantize steps a pt2e conversion leaves (int8 input
    and output per tensor, int8 weights per tensor or per output channel of
    a group (dim 1), float32 bias): the quantizers leave grouped transposed
    convolutions in float32."""

    def __init__(self, per_channel: bool = False) -> None:
        super().__init__()
        w = torch.randn(10, 9, 3, 3) * 0.3  # [in, out / groups, KH, KW], 2 groups
        self.per_channel = per_channel
        self.w_scale = float(w.abs().max()) / 127
        scales = w.abs().amax(dim=(0, 2, 3)) / 127 if per_channel else torch.full((9,), self.w_scale)
        self.register_buffer("w_q", torch.round(w / scales.reshape(1, -1, 1, 1))
                             .clamp(-127, 127).to(torch.int8))
        self.register_buffer("w_scales", scales)
        self.register_buffer("w_zero_points", torch.zeros(9, dtype=torch.int64))
        self.bias = nn.Parameter(torch.randn(18) * 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qd = torch.ops.quantized_decomposed
        x = qd.dequantize_per_tensor(qd.quantize_per_tensor(x, 0.02, 3, -128, 127, torch.int8),
                                     0.02, 3, -128, 127, torch.int8)
        if self.per_channel:
            w = qd.dequantize_per_channel(self.w_q, self.w_scales, self.w_zero_points, 1, -127, 127,
                                          torch.int8)
        else:
            w = qd.dequantize_per_tensor(self.w_q, self.w_scale, 0, -127, 127, torch.int8)
        y = nn.functional.conv_transpose2d(x, w, self.bias, stride=2, padding=1,
                                           output_padding=1, groups=2)
        return qd.dequantize_per_tensor(qd.quantize_per_tensor(y, 0.03, -4, -128, 127, torch.int8),
                                        0.03, -4, -128, 127, torch.int8)


@pytest.mark.parametrize("by,per_channel", [("executorch", False), ("ember", False),
                                            ("ember", True)])
def test_quantized_deconv_two_groups(by: str, per_channel: bool) -> None:
    """Per tensor, by both exporters; per channel by ember only (ExecuTorch
    1.5.1 leaves per-channel transposed convolutions in groups outside),
    each group's filter taking the same scales, as XNNPACK runs it too."""
    if by == "executorch":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower
    else:
        from ember import to_edge_transform_and_lower
        from ember.backends.xnnpack import XnnpackPartitioner
    torch.manual_seed(6)
    model = GroupedQDeconv(per_channel).eval()
    runs = [(torch.randn(2, 10, 5, 7),), (torch.randn(2, 10, 5, 7) * 2,)]
    ep = torch.export.export(model, runs[0])
    buffer = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]) \
        .to_executorch().buffer
    assert _deconv_types(buffer) == ["xnn_datatype_qint8"]
    for args, (got, want) in zip(runs, run_both(buffer, runs)):
        diff = float((got - want).abs().max())
        assert diff <= 0.03 * 1.01, f"ember vs ExecuTorch: {diff}, step 0.03"
        with torch.no_grad():
            err = float((got - model(*args)).abs().max())
        assert err <= 3 * 0.03, f"ember vs eager fake-quantized: {err}, step 0.03"


# ---------------------------------------------------------------------------
# Corrupted payloads
# ---------------------------------------------------------------------------


def _flatc() -> Tuple[str, str]:
    import os

    import executorch
    import executorch.backends.xnnpack.serialization as s

    return (os.path.join(list(executorch.__path__)[0], "data", "bin", "flatc"),
            os.path.join(list(s.__path__)[0], "schema.fbs"))


def decode(payload: bytes) -> dict:
    """An XNNPACK payload's XNNGraph as a dict (flatc and the reference schema)."""
    import json
    import os
    import re
    import subprocess
    import tempfile

    flatc, schema = _flatc()
    off = int.from_bytes(payload[10:14], "little")
    size = int.from_bytes(payload[14:18], "little")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "graph.bin")
        with open(path, "wb") as f:
            f.write(payload[off:off + size])
        subprocess.run([flatc, "--json", "--strict-json", "--raw-binary", "--defaults-json",
                        "-o", d, schema, "--", path], check=True, capture_output=True)
        with open(os.path.join(d, "graph.json")) as f:
            text = f.read()
    return json.loads(re.sub(r"(:\s*)(-?)inf\b", r"\1\2Infinity", text))


def encode(graph: dict) -> bytes:
    """The payload (XH00 header, flatbuffer, no constant data) of a decoded graph."""
    import json
    import os
    import struct
    import subprocess
    import tempfile

    flatc, schema = _flatc()
    text = json.dumps(graph).replace("-Infinity", "-inf").replace("Infinity", "inf")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "graph.json")
        with open(path, "w") as f:
            f.write(text)
        subprocess.run([flatc, "--binary", "-o", d, schema, path], check=True,
                       capture_output=True)
        with open(os.path.join(d, "graph.bin"), "rb") as f:
            fb = f.read()
    fb += b"\0" * (-len(fb) % 16)
    header = struct.pack("<4s4sHIIIQ", b"\0\0\0\0", b"XH00", 30, 32, len(fb), 32 + len(fb), 0)
    return header + b"\0" * 2 + fb


def value_type(graph: dict, vid: int) -> str:
    for v in graph["xvalues"]:
        u = v["xvalue_union"]
        t = u.get("tensor_value", u)
        if t["id_out"] == vid:
            return t["datatype"]
    raise KeyError(vid)


def delegate_payloads(buffer: bytes) -> List[bytes]:
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(buffer)
    program = getattr(program, "program", program)
    out = []
    for plan in program.execution_plan:
        for d in plan.delegates:
            if d.id == "XnnpackBackend":
                data = d.processed
                if data.location.name == "INLINE":
                    out.append(bytes(program.backend_delegate_data[data.index].data))
                else:
                    seg = program.segments[data.index]
                    base = int.from_bytes(buffer[8 + 8:8 + 16], "little")  # extended header
                    out.append(buffer[base + seg.offset:base + seg.offset + seg.size])
    return out


def corrupted_programs(per_channel: bool, corrupts: Sequence[Any],
                       name: str = "mlp") -> List[bytes]:
    """The static int8 MLP (or model `name`) lowered by ExecuTorch once, then
    written with its payload passed through each corrupt(graph dict)."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    torch.manual_seed(5)
    cls, shape = _MODELS[name]
    model = cls().eval()
    x = torch.randn(*shape)
    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=per_channel, is_dynamic=False))
    prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
    prepared(x)
    ep = torch.export.export(convert_pt2e(prepared), (x,))
    edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    gm = edge.exported_program().graph_module
    (lowered,) = [m for n, m in gm.named_children() if n.startswith("lowered_module")]
    graph = decode(lowered.processed_bytes)
    out = []
    for corrupt in corrupts:
        changed = copy.deepcopy(graph)
        corrupt(changed)
        lowered._processed_bytes = encode(changed)
        out.append(edge.to_executorch().buffer)
    return out


def corrupted_program(per_channel: bool, corrupt: Any) -> bytes:
    """The static int8 MLP lowered by ExecuTorch, its payload passed through
    corrupt(graph dict) before the program is written."""
    return corrupted_programs(per_channel, [corrupt])[0]


def _quantized_values(graph: dict, datatype: str) -> List[dict]:
    out = []
    for v in graph["xvalues"]:
        u = v["xvalue_union"]
        if "tensor_value" in u and u["tensor_value"]["datatype"] == datatype:
            out.append(u)
    return out


def _set_activation(field: str, value: Any) -> Any:
    def corrupt(graph: dict) -> None:  # every qint8 activation (not constant)
        for u in _quantized_values(graph, "xnn_datatype_qint8"):
            if u["tensor_value"].get("constant_buffer_idx", 0) == 0:
                u["quant_params"][field] = value
    return corrupt


def _scale_bias(graph: dict) -> None:
    for u in _quantized_values(graph, "xnn_datatype_qint32"):
        u["quant_params"]["scale"] *= 2.0


def _zero_point_filter(graph: dict) -> None:
    for u in _quantized_values(graph, "xnn_datatype_qint8"):
        if u["tensor_value"].get("constant_buffer_idx", 0) != 0:
            u["quant_params"]["zero_point"] = 3


def _bias_per_tensor_filter_per_channel(graph: dict) -> None:
    for u in _quantized_values(graph, "xnn_datatype_qcint32"):
        u["tensor_value"]["datatype"] = "xnn_datatype_qint32"
        u["quant_params_type"] = "PerTensorQuant"
        u["quant_params"] = {"scale": 0.001, "zero_point": 0}


@pytest.mark.parametrize("per_channel,corrupt,message", [
    (True, _set_activation("scale", 0.0), r"scale 0 is not a positive number"),
    (True, _set_activation("scale", -0.5), r"scale -0.5 is not a positive number"),
    (True, _set_activation("zero_point", 300), r"zero point 300 is outside int8"),
    (False, _scale_bias, r"bias \(value \d+\): channel 0 has scale"),
    (False, _zero_point_filter, r"has zero point 3; int8 weights are symmetric"),
    (True, _bias_per_tensor_filter_per_channel, r"bias \(value \d+\) is quantized per tensor"),
])
def test_corrupted_static_payload_fails_at_load(per_channel: bool, corrupt: Any,
                                                message: str) -> None:
    buffer = corrupted_program(per_channel, corrupt)
    with pytest.raises(ember_runtime.EmberError, match=message) as info:
        ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
    if "payload" not in str(info.value):  # decoded, then refused by a node: it is named
        assert re.search(r"xnnpack node \d+ \(\w+, debug handle \d+\)", str(info.value))


def _filter_channel_dim(graph: dict) -> None:
    for u in _quantized_values(graph, "xnn_datatype_qcint8"):
        u["quant_params"]["channel_dim"] = 3


def test_corrupted_deconv_payload_fails_at_load() -> None:
    """A quantized ConvTranspose2d whose filter's scales do not match its
    channels fails as the payload is read; one whose bias is quantized per
    tensor and filter per channel fails naming the node."""
    cases = [(_filter_channel_dim, r"value \d+: 20 scales for 8 channels", False),
             (_bias_per_tensor_filter_per_channel, r"bias \(value \d+\) is quantized per tensor",
              True)]
    buffers = corrupted_programs(True, [c[0] for c in cases], "deconv_s2")
    for buffer, (_, message, named) in zip(buffers, cases):
        with pytest.raises(ember_runtime.EmberError, match=message) as info:
            ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
        if named:
            assert re.search(r"xnnpack node \d+ \(ConvTranspose2d, debug handle \d+\)",
                             str(info.value))


def test_unchanged_payload_round_trips() -> None:
    """The corruption helpers' decode / encode alone leave a program that runs."""
    buffer = corrupted_program(True, lambda graph: None)
    x = torch.randn(4, 32)
    (got, want), = run_both(buffer, [(x,)])
    assert float((got - want).abs().max()) <= 0.1
