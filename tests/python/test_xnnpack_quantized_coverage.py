"""Every node type and value form that ExecuTorch 1.5.1's XNNPACK flow
writes into a quantized graph, run in libember's XnnpackBackend and in
ExecuTorch's runtime (XNNPACK itself).

What the flow writes (XNNPACKQuantizer, XnnpackPartitioner): the quantizer
annotates convolutions, linears, add, mul, cat and adaptive average
pooling, and lets relu, hardtanh, max pooling, mean and the layout ops share
their input's quantization; the partitioner lowers an op on qint8 values
when its config takes static quantization and the op sits between
dequantize and quantize (add, sub, mul, clamp / relu / hardtanh, max
pooling, mean, cat, the layout ops, convolutions and linears), and sigmoid,
tanh, hardswish, leaky relu, softmax, average pooling, pad and upsample in
float32 between Converts; elu (its config disabled) stays outside. Where
the partitioner splits a quantized region, the int8 value crosses from one
delegate to the next; ember's partitioner splits it with float32 edges and
leaves quantize / dequantize to the portable kernels.

Each case is a small model around the ops, quantized static per channel or
per tensor (or dynamic where the flow emits it), with channel counts on
both sides of the kernels' blocks (1, 15, 16, 17, 64, 65). Checks: the
payload holds the node on the values we expect (so a float fallback cannot
pass), each output is within one of its quantization steps of ExecuTorch's
and within three of the eager fake-quantized model. The quantized unary
nodes that no 1.5.1 config writes (Sigmoid, Tanh, ELU, LeakyReLU,
Hardswish on qint8) are checked on payloads edited from lowered Clamps,
against ExecuTorch's runtime.
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


class Ops(nn.Module):
    """For each op, cat(op(a, b), op(b, a)) of two quantized convolutions
    a, b of the input, as one output: the op reads quantized values and its
    result is quantized once, for the cat (which moves bytes without
    rescaling them; ops the quantizer leaves float are quantized there
    too), so each output's step is its op's and a difference of one step in
    the op shows as one step."""

    def __init__(self, names: Sequence[str], c: int) -> None:
        super().__init__()
        self.names = list(names)
        self.a, self.b = nn.Conv2d(4, c, 1), nn.Conv2d(4, c, 1)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        a, b = self.a(x), self.b(x)
        return tuple(torch.cat([_OPS[n](a, b), _OPS[n](b, a)], 1) for n in self.names)


class Dense(nn.Module):
    def __init__(self, ic: int, oc: int) -> None:
        super().__init__()
        self.fc = nn.Linear(ic, oc)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class Grouped(nn.Module):
    def __init__(self, c: int, groups: int, stride: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, 2 * c if groups < c else c, 3, stride=stride, padding=1,
                              groups=groups)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class Unaries(nn.Module):
    """Five Hardtanh clamps of one quantized sum, each an output: ExecuTorch
    writes each as a qint8 Clamp node, which the test edits into another
    unary node."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(4, 17, 1), nn.Conv2d(4, 17, 1)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        y = self.a(x) + self.b(x)
        return tuple(F.hardtanh(y, -2.0 - k * 0.1, 2.0 + k * 0.1) for k in range(5))


class Crossing(nn.Module):
    """A quantized add read both by a flip, which XNNPACK does not take, and
    by a convolution whose result is added to the flipped one: one
    partition would depend on itself through the flip, so the partitioner
    splits it, and the add's qint8 result leaves the first delegate and
    enters the second as an int8 tensor of the program."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(4, 17, 1), nn.Conv2d(4, 17, 1)
        self.c, self.d = nn.Conv2d(17, 6, 1), nn.Conv2d(17, 6, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x) + self.b(x)
        return self.c(y) + self.d(torch.flip(y, [3]))


_OPS: Dict[str, Callable] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "relu": lambda a, b: torch.relu(a + b),
    "hardtanh": lambda a, b: F.hardtanh(a, -0.6, 0.9),
    "maxpool": lambda a, b: F.max_pool2d(a, 2),
    "mean": lambda a, b: a.mean((2, 3), keepdim=True),
    "permute": lambda a, b: (a * b).permute(0, 1, 3, 2),
    "slice": lambda a, b: (a + b)[:, :, 1:, :],
    "sigmoid": lambda a, b: torch.sigmoid(a),
    "tanh": lambda a, b: torch.tanh(a),
    "hardswish": lambda a, b: F.hardswish(a),
    "leaky_relu": lambda a, b: F.leaky_relu(a, 0.1),
    "elu": lambda a, b: F.elu(a),
    "softmax": lambda a, b: torch.softmax(a, -1),
    "avgpool": lambda a, b: F.avg_pool2d(a, 2),
    "pad": lambda a, b: F.pad(a, (1, 1, 1, 1)),
    "upsample": lambda a, b: F.interpolate(a, scale_factor=2, mode="bilinear"),
}

# The node that carries each op, and on which values: qint8 in and out, or
# float32 between Converts (the partitioner takes the op only in float); the
# relu folds into the Add before it as its output range.
_NODE = {
    "add": ("XNNAdd", QINT8), "sub": ("XNNSubtract", QINT8), "mul": ("XNNMultiply", QINT8),
    "relu": ("XNNAdd", QINT8), "hardtanh": ("XNNClamp", QINT8),
    "maxpool": ("XNNMaxPooling2d", QINT8), "mean": ("XNNGlobalAvgPooling2d", QINT8),
    "permute": ("XNNStaticTranspose", QINT8),
    "slice": ("XNNStaticSlice", QINT8),
    "sigmoid": ("XNNSigmoid", FP32), "tanh": ("XNNTanh", FP32),
    "hardswish": ("XNNHardswish", FP32), "leaky_relu": ("XNNLeakyReLU", FP32),
    "elu": (None, None), "softmax": ("XNNSoftmax", FP32),
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


def _model(kind: str, arg: Any) -> Tuple[nn.Module, Tuple[int, ...]]:
    torch.manual_seed(7)
    if kind == "ops":
        group, c = arg
        return Ops(_GROUPS[group], c), (2, 4, 6, 6)
    if kind == "linear":
        return Dense(*arg), (3, arg[0])
    if kind == "conv":
        c, groups, stride = arg
        return Grouped(c, groups, stride), (2, c, 9, 9)
    if kind == "unaries":
        return Unaries(), (2, 4, 5, 5)
    return Crossing(), (2, 4, 5, 7)


@functools.lru_cache(maxsize=None)
def lowered(kind: str, arg: Any, per_channel: bool, by: str = "executorch",
            dynamic: bool = False) -> Tuple[nn.Module, bytes, list]:
    """(eager quantized model, program, inputs) of one case, lowered once."""
    model, shape = _model(kind, arg)
    converted, ep, runs = _quantize(model, shape, per_channel, dynamic, seed=len(str(arg)))
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


def output_scales(converted: nn.Module) -> List[float]:
    """The quantization step of each output (each is a dequantize)."""
    outs = converted.graph.output_node().args[0]
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    assert all(o.target == torch.ops.quantized_decomposed.dequantize_per_tensor.default
               for o in outs)
    return [float(o.args[1]) for o in outs]


def check_runs(converted: nn.Module, buffer: bytes, runs: list,
               outside: Sequence[str] = ()) -> None:
    """Every output within one of its steps of ExecuTorch, three of eager
    fake-quant."""
    from executorch.runtime import Runtime

    steps = output_scales(converted)
    program = ember_runtime.Runtime.get().load_program(buffer)
    meta = program.metadata("forward")
    assert meta.num_delegates >= 1 and set(meta.operators) <= set(outside), meta.operators
    ours = program.load_method("forward")
    ref = Runtime.get().load_program(buffer).load_method("forward")
    for args in runs:
        got = ours.execute([x.clone() for x in args])
        want = ref.execute([x.clone() for x in args])
        with torch.no_grad():
            eager = converted(*args)
        eager = eager if isinstance(eager, (list, tuple)) else [eager]
        assert len(got) == len(want) == len(eager) == len(steps)
        for k, (g, w, e, step) in enumerate(zip(got, want, eager, steps)):
            assert g.shape == w.shape
            diff = float((g - w).abs().max())
            assert diff <= step * 1.01 + 1e-6, f"output {k}: ember vs ExecuTorch {diff}, {step}"
            err = float((g - e).abs().max())
            assert err <= 3 * step + 1e-6, f"output {k}: ember vs eager fake-quant {err}, {step}"


# ops that run on qint8 values, and ops lowered in float32 between Converts
_GROUPS = {
    # (every output is a cat: Concatenate2 on qint8 in each case)
    "qint8": ["add", "sub", "mul", "relu", "hardtanh", "maxpool", "mean", "permute", "slice"],
    "float": ["sigmoid", "tanh", "hardswish", "leaky_relu", "elu", "softmax", "avgpool", "pad",
              "upsample"],
}


def _check_nodes(buffer: bytes, group: str) -> None:
    """Each op of the group is the node we expect, on the values we expect."""
    found = nodes(buffer)
    assert any(t == "XNNConcatenate2" and set(ins + outs) == {QINT8} for t, ins, outs in found)
    for name in _GROUPS[group]:
        want_type, on = _NODE[name]
        if want_type is None:
            continue
        mine = [(ins, outs) for t, ins, outs in found if t == want_type]
        assert any(set(ins + outs) == {on} for ins, outs in mine), (name, found)


# channel counts across the kernels' blocks (64 channels a chunk in pooling,
# 64 elements in the elementwise loops), per channel and per tensor
@pytest.mark.parametrize("group,c,per_channel", [
    ("qint8", 1, True), ("qint8", 65, False), ("float", 17, True)])
def test_quantized_ops(group: str, c: int, per_channel: bool) -> None:
    converted, buffer, runs = lowered("ops", (group, c), per_channel)
    _check_nodes(buffer, group)
    # ELU: its config is disabled in 1.5.1, it stays outside
    check_runs(converted, buffer, runs, outside=("aten::elu.out",) if group == "float" else ())


def test_quantized_ops_ember_partitioner() -> None:
    """ember's partitioner lowers some of these ops in float32 between
    Converts: the program runs alike either way."""
    converted, buffer, runs = lowered("ops", ("qint8", 16), True, "ember")
    for kind in ("XNNAdd", "XNNSubtract", "XNNMultiply"):
        assert any(t == kind and ins == [QINT8, QINT8] for t, ins, _ in nodes(buffer)), kind
    check_runs(converted, buffer, runs)


@pytest.mark.parametrize("ic,oc,per_channel", [(17, 64, False)])
def test_quantized_linear(ic: int, oc: int, per_channel: bool) -> None:
    converted, buffer, runs = lowered("linear", (ic, oc), per_channel)
    assert any(t == "XNNFullyConnected" and ins[0] == QINT8 for t, ins, _ in nodes(buffer))
    check_runs(converted, buffer, runs)


@pytest.mark.parametrize("c,groups,stride,per_channel", [(16, 2, 1, True), (15, 5, 2, False)])
def test_quantized_conv(c: int, groups: int, stride: int, per_channel: bool) -> None:
    """Convolutions in groups (test_static_int8 runs the depthwise ones)."""
    converted, buffer, runs = lowered("conv", (c, groups, stride), per_channel)
    want = "XNNDepthwiseConv2d" if groups == c else "XNNConv2d"
    assert any(t == want and ins[0] == QINT8 for t, ins, _ in nodes(buffer)), nodes(buffer)
    if want == "XNNConv2d":
        graphs = [decode(b) for b in delegate_payloads(buffer)]
        assert any(n["xnode_union"]["groups"] == groups for g in graphs for n in g["xnodes"]
                   if n["xnode_union_type"] == "XNNConv2d")
    check_runs(converted, buffer, runs)


@pytest.mark.parametrize("by", ["executorch", "ember"])
def test_dynamically_quantized_grouped_conv(by: str) -> None:
    """A grouped convolution quantized dynamically: qdint8 input, one scale
    per image, Conv2d in groups on it."""
    converted, buffer, runs = lowered("conv", (16, 4, 1), True, by, dynamic=True)
    graphs = [decode(b) for b in delegate_payloads(buffer)]
    convs = [n["xnode_union"] for g in graphs for n in g["xnodes"]
             if n["xnode_union_type"] == "XNNConv2d"
             and value_type(g, n["xnode_union"]["input1_id"]) == "xnn_datatype_qdint8"]
    assert [c["groups"] for c in convs] == [4], convs
    for args, (got, want) in zip(runs, run_both(buffer, runs)):
        step = float(want.max() - want.min()) / 255.0
        assert float((got - want).abs().max()) <= step + 1e-6
        with torch.no_grad():
            eager = converted(*args)
        # eager quantizes each activation per tensor over the batch, XNNPACK per image
        assert float((got - eager).abs().max()) <= 4 * step + 1e-5


def _edges(buffer: bytes) -> List[List[Tuple[str, int]]]:
    """(datatype, flags) of each delegate's external values."""
    return [[(t["datatype"], t["flags"]) for v in g["xvalues"]
             for t in [v["xvalue_union"].get("tensor_value", v["xvalue_union"])] if t["flags"]]
            for g in map(decode, delegate_payloads(buffer))]


def test_quantized_values_between_delegates() -> None:
    """The first delegate writes a qint8 output that the second reads as a
    qint8 input: ember hands the int8 bytes over as they are."""
    converted, buffer, runs = lowered("crossing", None, True)
    edges = _edges(buffer)
    assert len(edges) == 2
    assert (QINT8, 2) in edges[0] and (QINT8, 1) in edges[1], edges
    check_runs(converted, buffer, runs, outside=("aten::flip.out",))


def test_quantize_dequantize_outside_delegates() -> None:
    """ember's partitioner splits the same model with float32 edges and
    leaves quantize / dequantize ops (and what it does not take) outside:
    the portable quantized_decomposed kernels run them."""
    converted, buffer, runs = lowered("crossing", None, True, "ember")
    ops = set(ember_runtime.Runtime.get().load_program(buffer).metadata("forward").operators)
    assert {"quantized_decomposed::quantize_per_tensor.out",
            "quantized_decomposed::dequantize_per_tensor.out"} <= ops, ops
    check_runs(converted, buffer, runs, outside=tuple(ops))


# ---------------------------------------------------------------------------
# Edited payloads: qint8 at the delegate's input, quantized unary nodes
# ---------------------------------------------------------------------------


def edited_program(kind: str, arg: Any, edit: Callable[[dict], None]) -> Tuple[nn.Module, bytes,
                                                                                list]:
    """The case lowered by ExecuTorch, each XNNPACK payload passed through
    edit(graph) before the program is written."""
    model, shape = _model(kind, arg)
    converted, ep, runs = _quantize(model, shape, True, False, seed=len(str(arg)))
    edge = _lower(ep, "executorch")
    for name, module in edge.exported_program().graph_module.named_children():
        if name.startswith("lowered_module"):
            graph = decode(module.processed_bytes)
            edit(graph)
            module._processed_bytes = encode(graph)
    return converted, edge.to_executorch().buffer, runs


def _value(graph: dict, vid: int) -> dict:
    for v in graph["xvalues"]:
        u = v["xvalue_union"]
        if u.get("tensor_value", u)["id_out"] == vid:
            return u
    raise KeyError(vid)


def _qint8_input(graph: dict) -> None:
    """The delegate takes its input as qint8: the Convert that quantizes
    the float32 input goes, and its qint8 result becomes the input."""
    (i,) = [i for i, n in enumerate(graph["xnodes"]) if n["xnode_union_type"] == "XNNConvert"
            and n["xnode_union"]["input_id"] == graph["input_ids"][0]]
    node = graph["xnodes"].pop(i)["xnode_union"]
    old = _value(graph, node["input_id"])
    new = _value(graph, node["output_id"])["tensor_value"]
    new["flags"], new["external_id"] = old["flags"], old["external_id"]
    graph["xvalues"] = [v for v in graph["xvalues"]
                        if v["xvalue_union"].get("id_out") != node["input_id"]]
    graph["input_ids"] = [node["output_id"]]


def test_quantized_input_given_float_fails() -> None:
    """A qint8 delegate input handed the program's float32 tensor fails at
    execute with a message naming both types, never reading it as int8."""
    _, buffer, _ = edited_program("linear", (16, 17), _qint8_input)
    assert (QINT8, 1) in _edges(buffer)[0]
    method = ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
    with pytest.raises(ember_runtime.EmberError,
                       match=r"argument 0 is float32, the delegate's value \d+ is qint8"):
        method.execute([torch.randn(3, 16)])


# node type: (its fields besides the operands, the output (scale, zero
# point) XNNPACK's qint8 operator is defined for, or None: any)
_UNARY = {
    "XNNSigmoid": ({}, (1.0 / 256.0, -128)),
    "XNNTanh": ({}, (1.0 / 128.0, 0)),
    "XNNELU": ({"alpha": 0.7}, None),
    "XNNLeakyReLU": ({"negative_slope": 0.2}, None),
    "XNNHardswish": ({}, None),
}


def _clamps_to_unaries(graph: dict) -> None:
    clamps = [n for n in graph["xnodes"] if n["xnode_union_type"] == "XNNClamp"]
    assert len(clamps) == len(_UNARY)
    for n, kind in zip(clamps, _UNARY):
        fields, out_q = _UNARY[kind]
        u = n["xnode_union"]
        n["xnode_union_type"] = kind
        n["xnode_union"] = {**fields, "input_id": u["input_id"], "output_id": u["output_id"],
                            "flags": 0}
        n.pop("output_min_max", None)
        # the new output quantization, carried through the layout nodes after it
        vid = u["output_id"]
        while out_q is not None:
            q = _value(graph, vid)["quant_params"]
            q["scale"], q["zero_point"] = out_q
            nxt = [m["xnode_union"]["output_id"] for m in graph["xnodes"]
                   if m["xnode_union_type"] == "XNNStaticTranspose"
                   and m["xnode_union"]["input_id"] == vid]
            if not nxt:
                break
            vid = nxt[0]


def test_quantized_unary_tables() -> None:
    """Sigmoid, Tanh, ELU, LeakyReLU and Hardswish on qint8 values, which
    no 1.5.1 config writes (the five qint8 Clamps of a lowered program are
    edited into them): each output within one of its quantization steps of
    ExecuTorch's runtime."""
    from executorch.runtime import Runtime

    _, buffer, runs = edited_program("unaries", None, _clamps_to_unaries)
    kinds = {t for t, ins, outs in nodes(buffer) if ins == [QINT8] and outs == [QINT8]}
    assert set(_UNARY) <= kinds, kinds
    ours = ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
    ref = Runtime.get().load_program(buffer).load_method("forward")
    for (x,) in runs:
        got, want = ours.execute([x.clone()]), ref.execute([x.clone()])
        assert len(got) == len(want) == len(_UNARY)
        for k, (a, b) in enumerate(zip(got, want)):
            # the output's step: the smallest gap between its dequantized values
            levels = torch.unique(b)
            step = float((levels[1:] - levels[:-1]).min())
            diff = float((a - b).abs().max())
            assert diff <= step * 1.01 + 1e-6, f"output {k}: {diff}, step {step}"
