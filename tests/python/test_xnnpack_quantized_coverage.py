"""Every node type and value form that ExecuTorch 1.5.1's XNNPACK flow
writes into a quantized graph, one at a time, run in libember's
XnnpackBackend and in ExecuTorch's runtime (XNNPACK itself).

What the flow writes (XNNPACKQuantizer, XnnpackPartitioner): the quantizer
annotates convolutions, linears, add, mul, cat and adaptive average
pooling, and lets relu, hardtanh, max pooling, mean and the layout ops share
their input's quantization; the partitioner lowers an op on qint8 values
when its config takes static quantization and the op sits between
dequantize and quantize (add, sub, mul, clamp / relu / hardtanh, max
pooling, mean, cat and the layout ops, convolutions and linears), and
every other op (sigmoid, tanh, hardswish, leaky relu, elu, softmax, average
pooling, pad, upsample) in float32 between Converts. A partition that ends
on a quantized value hands the int8 bytes over to the next delegate or to
the portable quantize / dequantize kernels.

Each case is a small model around the op, quantized static per channel or
per tensor (or dynamic where the flow emits it), over channel counts that
cross the kernels' blocks (1, 15, 16, 17, 64). Checks: the payload holds
the node on the values we expect (so a float fallback cannot pass),
ember's output is within one output quantization step of ExecuTorch's and
within three of the eager fake-quantized model. The quantized unary nodes
that no config of 1.5.1 writes (Sigmoid, Tanh, ELU, LeakyReLU, Hardswish
on qint8) are checked on payloads edited from a lowered Clamp, against
ExecuTorch's runtime only.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Sequence, Tuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from test_xnnpack_quantized import decode, delegate_payloads, encode, run_both, \
    static_output_scale, value_type

ember_runtime = pytest.importorskip("ember.runtime")

QINT8 = "xnn_datatype_qint8"
FP32 = "xnn_datatype_fp32"


class Around(nn.Module):
    """op(conv_a(x), conv_b(x)) then a 1x1 convolution: the op reads two
    quantized values and its output is quantized again for the last
    convolution, as in a real network."""

    def __init__(self, op: Callable, c: int, out_c: int, groups: int = 1) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(4, c, 1), nn.Conv2d(4, c, 1)
        self.op = op
        self.last = nn.Conv2d(out_c, 8, 3 if groups > 1 else 1, padding=1 if groups > 1 else 0,
                              groups=groups)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.last(self.op(self.a(x), self.b(x)))


class Dense(nn.Module):
    def __init__(self, ic: int, oc: int) -> None:
        super().__init__()
        self.l1, self.l2 = nn.Linear(ic, oc), nn.Linear(oc, 9)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.relu(self.l1(x)))


class Convs(nn.Module):
    """A grouped (or depthwise) convolution between two plain ones."""

    def __init__(self, c: int, groups: int, stride: int) -> None:
        super().__init__()
        self.first = nn.Conv2d(3, c, 1)
        self.mid = nn.Conv2d(c, c, 3, stride=stride, padding=1, groups=groups)
        self.last = nn.Conv2d(c, 5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.last(self.mid(self.first(x)))


class Split(nn.Module):
    """Two quantized parts with an op XNNPACK does not take (flip) between
    them: the first delegate's output and the second's input are qint8
    values, and the portable kernels quantize and dequantize around the flip."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Conv2d(4, 17, 1), nn.Conv2d(4, 17, 1), nn.Conv2d(17, 6, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.flip(self.a(x) + self.b(x), [3]))


_OPS: Dict[str, Tuple[Callable, Callable[[int], int]]] = {
    # name: (op of the two branches, channels of its output)
    "add": (lambda a, b: a + b, lambda c: c),
    "sub": (lambda a, b: a - b, lambda c: c),
    "mul": (lambda a, b: a * b, lambda c: c),
    "relu": (lambda a, b: torch.relu(a + b), lambda c: c),
    "hardtanh": (lambda a, b: F.hardtanh(a - b, -0.6, 0.9), lambda c: c),
    "maxpool": (lambda a, b: F.max_pool2d(a, 2), lambda c: c),
    "mean": (lambda a, b: a.mean((2, 3), keepdim=True), lambda c: c),
    "cat": (lambda a, b: torch.cat([a, b], 1), lambda c: 2 * c),
    "permute": (lambda a, b: (a * b).permute(0, 1, 3, 2), lambda c: c),
    "slice": (lambda a, b: (a + b)[:, :, 1:, :], lambda c: c),
    "sigmoid": (lambda a, b: torch.sigmoid(a), lambda c: c),
    "tanh": (lambda a, b: torch.tanh(a), lambda c: c),
    "hardswish": (lambda a, b: F.hardswish(a), lambda c: c),
    "leaky_relu": (lambda a, b: F.leaky_relu(a, 0.1), lambda c: c),
    "elu": (lambda a, b: F.elu(a), lambda c: c),
    "softmax": (lambda a, b: torch.softmax(a, -1), lambda c: c),
    "avgpool": (lambda a, b: F.avg_pool2d(a, 2), lambda c: c),
    "pad": (lambda a, b: F.pad(a, (1, 1, 1, 1)), lambda c: c),
    "upsample": (lambda a, b: F.interpolate(a, scale_factor=2, mode="bilinear"), lambda c: c),
}

# The node that carries each op, and on which values: qint8 in and out, or
# float32 between Converts (the partitioner takes the op only in float).
_NODE = {
    "add": ("XNNAdd", QINT8), "sub": ("XNNSubtract", QINT8), "mul": ("XNNMultiply", QINT8),
    "relu": ("XNNClamp", QINT8), "hardtanh": ("XNNClamp", QINT8),
    "maxpool": ("XNNMaxPooling2d", QINT8), "mean": ("XNNGlobalAvgPooling2d", QINT8),
    "cat": ("XNNConcatenate2", QINT8), "permute": ("XNNStaticTranspose", QINT8),
    "slice": ("XNNStaticSlice", QINT8),
    "sigmoid": ("XNNSigmoid", FP32), "tanh": ("XNNTanh", FP32),
    "hardswish": ("XNNHardswish", FP32), "leaky_relu": ("XNNLeakyReLU", FP32),
    "elu": ("XNNELU", FP32), "softmax": ("XNNSoftmax", FP32),
    "avgpool": ("XNNAvgPooling2d", FP32), "pad": ("XNNStaticConstantPad", FP32),
    "upsample": ("XNNStaticResizeBilinear2D", FP32),
}


def _quantize(model: nn.Module, shape: Sequence[int], per_channel: bool, dynamic: bool,
              seed: int) -> Tuple[nn.Module, Any, list]:
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    torch.manual_seed(seed)
    calib = [(torch.randn(*shape),) for _ in range(3)]
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(
        is_per_channel=per_channel, is_dynamic=dynamic))
    prepared = prepare_pt2e(torch.export.export(model.eval(), calib[0]).module(), quantizer)
    for args in calib:
        prepared(*args)
    converted = convert_pt2e(prepared)
    runs = [calib[1], (torch.randn(*shape) * 1.5,)]
    return converted, torch.export.export(converted, calib[0]), runs


def _lower(ep: Any, by: str) -> Any:
    if by == "executorch":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower
    else:
        from ember import to_edge_transform_and_lower
        from ember.backends.xnnpack import XnnpackPartitioner
    return to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])


@functools.lru_cache(maxsize=None)
def lowered(kind: str, arg: Any, per_channel: bool = True, by: str = "executorch",
            dynamic: bool = False) -> Tuple[nn.Module, bytes, list]:
    """(eager quantized model, program, inputs) of one case, lowered once."""
    torch.manual_seed(7)
    if kind == "op":
        name, c = arg
        op, out_c = _OPS[name]
        model, shape = Around(op, c, out_c(c)), (2, 4, 6, 6)
    elif kind == "linear":
        ic, oc = arg
        model, shape = Dense(ic, oc), (3, ic)
    elif kind == "conv":
        c, groups, stride = arg
        model, shape = Convs(c, groups, stride), (2, 3, 9, 9)
    else:
        model, shape = Split(), (2, 4, 5, 7)
    converted, ep, runs = _quantize(model, shape, per_channel, dynamic, seed=hash(arg) % 1000)
    return converted, _lower(ep, by).to_executorch().buffer, runs


def nodes(buffer: bytes) -> List[Tuple[str, List[str], List[str]]]:
    """(node type, input value types, output value types) of every node of
    every delegate."""
    out = []
    for g in map(decode, delegate_payloads(buffer)):
        for n in g["xnodes"]:
            u = n["xnode_union"]
            ins = [value_type(g, u[k]) for k in sorted(u)
                   if k.startswith("input") and k.endswith("_id") and u[k] != 0xFFFFFFFF]
            outs = [value_type(g, u["output_id"])] if "output_id" in u else []
            out.append((n["xnode_union_type"], ins, outs))
    return out


def check_runs(converted: nn.Module, buffer: bytes, runs: list,
               outside: Sequence[str] = (), eager_steps: float = 3.0) -> None:
    step = static_output_scale(converted)
    for args, (got, want) in zip(runs, run_both(buffer, runs, outside)):
        assert got.shape == want.shape
        diff = float((got - want).abs().max())
        assert diff <= step * 1.01 + 1e-6, f"ember vs ExecuTorch: {diff}, step {step}"
        with torch.no_grad():
            eager = converted(*args)
        err = float((got - eager).abs().max())
        assert err <= eager_steps * step + 1e-6, f"ember vs eager fake-quantized: {err}, {step}"


_OP_CASES = [(name, c) for name in _OPS for c in ((15, 17) if name in ("add", "mul") else (16,))]
_OP_CASES += [("sub", 1), ("relu", 64), ("maxpool", 17), ("mean", 64), ("cat", 1)]


@pytest.mark.parametrize("name,c", _OP_CASES)
def test_quantized_op(name: str, c: int) -> None:
    converted, buffer, runs = lowered("op", (name, c))
    want_type, on = _NODE[name]
    found = [(ins, outs) for t, ins, outs in nodes(buffer) if t == want_type]
    assert found, f"no {want_type} in the payload: {nodes(buffer)}"
    assert any(set(ins + outs) == {on} for ins, outs in found), found
    check_runs(converted, buffer, runs)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "hardtanh", "mean"])
def test_quantized_op_per_tensor(name: str) -> None:
    converted, buffer, runs = lowered("op", (name, 17), per_channel=False)
    check_runs(converted, buffer, runs)


@pytest.mark.parametrize("by", ["executorch", "ember"])
@pytest.mark.parametrize("name", ["sub", "mul", "relu"])
def test_quantized_op_ember_partitioner(name: str, by: str) -> None:
    converted, buffer, runs = lowered("op", (name, 16), by=by)
    check_runs(converted, buffer, runs)


@pytest.mark.parametrize("ic,oc,per_channel", [
    (1, 15, True), (16, 17, True), (64, 16, False), (17, 64, True)])
def test_quantized_linear(ic: int, oc: int, per_channel: bool) -> None:
    converted, buffer, runs = lowered("linear", (ic, oc), per_channel)
    assert any(t == "XNNFullyConnected" and ins[0] == QINT8 for t, ins, _ in nodes(buffer))
    check_runs(converted, buffer, runs)


@pytest.mark.parametrize("c,groups,stride,per_channel", [
    (16, 2, 1, True), (16, 4, 2, False), (12, 3, 1, True), (64, 16, 1, True),
    (17, 17, 1, True), (64, 64, 2, False), (15, 1, 2, True)])
def test_quantized_conv(c: int, groups: int, stride: int, per_channel: bool) -> None:
    """Grouped, depthwise (groups = channels) and plain convolutions."""
    converted, buffer, runs = lowered("conv", (c, groups, stride), per_channel)
    want = "XNNDepthwiseConv2d" if groups == c else "XNNConv2d"
    found = [n for n in nodes(buffer) if n[0] == want and n[1][0] == QINT8]
    assert found, nodes(buffer)
    if want == "XNNConv2d" and groups > 1:
        graphs = [decode(b) for b in delegate_payloads(buffer)]
        assert any(n["xnode_union"]["groups"] == groups for g in graphs for n in g["xnodes"]
                   if n["xnode_union_type"] == "XNNConv2d")
    check_runs(converted, buffer, runs)


def test_quantized_values_between_delegates() -> None:
    """A flip that XNNPACK does not take splits the graph: the first
    delegate's output and the second's input are qint8 (int8 tensors in the
    program), and ember's portable kernels dequantize and quantize around
    the flip."""
    converted, buffer, runs = lowered("split", None)
    graphs = [decode(b) for b in delegate_payloads(buffer)]
    assert len(graphs) == 2
    edges = [t["datatype"] for g in graphs for v in g["xvalues"]
             for t in [v["xvalue_union"].get("tensor_value", v["xvalue_union"])]
             if t.get("flags", 0) and t["datatype"] != FP32]
    assert edges == [QINT8, QINT8], edges
    program = ember_runtime.Runtime.get().load_program(buffer)
    outside = set(program.metadata("forward").operators)
    assert "quantized_decomposed::dequantize_per_tensor.out" in outside, outside
    assert "quantized_decomposed::quantize_per_tensor.out" in outside, outside
    check_runs(converted, buffer, runs, outside=outside)


def test_quantized_edge_wrong_dtype_fails() -> None:
    """A delegate whose qint8 input is handed a float32 tensor fails with a
    message at execute, never reads past the tensor."""
    _, buffer, _ = lowered("split", None)
    edited = _edit_program(buffer, _float_input_of_second_delegate)
    method = ember_runtime.Runtime.get().load_program(edited).load_method("forward")
    with pytest.raises(ember_runtime.EmberError, match=r"argument \d+ is float32, the "
                                                       r"delegate's value \d+ is qint8"):
        method.execute([torch.randn(2, 4, 5, 7)])


# ---------------------------------------------------------------------------
# Quantized unary nodes on edited payloads
# ---------------------------------------------------------------------------


def _edit_program(buffer: bytes, edit: Callable[[int, dict], None]) -> bytes:
    """The program with each XNNPACK payload passed through edit(index, graph)."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary

    pte = deserialize_pte_binary(buffer)
    program = getattr(pte, "program", pte)
    k = 0
    for plan in program.execution_plan:
        for d in plan.delegates:
            if d.id != "XnnpackBackend":
                continue
            assert d.processed.location.name == "INLINE"
            data = program.backend_delegate_data[d.processed.index]
            graph = decode(bytes(data.data))
            edit(k, graph)
            data.data = encode(graph)
            k += 1
    return bytes(serialize_pte_binary(pte))


def _float_input_of_second_delegate(k: int, graph: dict) -> None:
    return None  # replaced below, needs the tensor's dtype in the program


_UNARY = {
    "XNNSigmoid": {}, "XNNTanh": {}, "XNNHardswish": {},
    "XNNELU": {"alpha": 0.7}, "XNNLeakyReLU": {"negative_slope": 0.2},
}
