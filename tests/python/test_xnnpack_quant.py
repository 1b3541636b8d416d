"""Quantization for XNNPACK: ember's quantizer and ember's lowering of
quantized graphs, against ExecuTorch's.

- Quantizer: ember's XNNPACKQuantizer and the reference one, on the same
  model with the same configuration and calibration data, give the same
  converted graph (same q/dq nodes, same qparams and int8 weights).
- Lowering: ember's XnnpackPartitioner on a quantized graph writes the
  payload the reference partitioner writes for it (same node and value
  types, quant params, named-data keys), and the program runs in the
  reference runtime (ExecuTorch's XNNPACK) with the reference program's
  outputs and within one output quantization step of the eager quantized
  model (`convert_pt2e`'s module, or torchao's quantized module).
- Bad configurations and unsupported patterns fail or stay outside the
  delegates with a reason.
- ember's runtime runs ember's quantized payloads (dynamic, 4-bit and
  static int8) within the steps the reference runtime keeps.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import tempfile
from typing import Any, Dict, List, Sequence, Tuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

pytest.importorskip("executorch.backends.xnnpack")
pytest.importorskip("torchao.quantization.pt2e")

from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402

from aot_models import MLP, AttentionBlock  # noqa: E402


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def quantize(model: nn.Module, example: tuple, calibration: Sequence[tuple], by: str,
             **config: Any) -> torch.fx.GraphModule:
    """prepare_pt2e -> calibrate -> convert_pt2e -> duplicate dynamic chains,
    with ember's quantizer or the reference one."""
    if by == "ember":
        from ember.backends.transforms.duplicate_dynamic_quant_chain import (
            DuplicateDynamicQuantChainPass,
        )
        from ember.backends.xnnpack.quantizer.xnnpack_quantizer import XNNPACKQuantizer
        from ember.backends.xnnpack.quantizer import get_symmetric_quantization_config
    else:
        from executorch.backends.transforms.duplicate_dynamic_quant_chain import (
            DuplicateDynamicQuantChainPass,
        )
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer,
            get_symmetric_quantization_config,
        )
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(**config))
    m = prepare_pt2e(torch.export.export(copy.deepcopy(model).eval(), example).module(), quantizer)
    for args in calibration:
        m(*args)
    m = convert_pt2e(m)
    DuplicateDynamicQuantChainPass()(m)
    return m


def lower(model: nn.Module, example: tuple, by: str) -> Tuple[bytes, List[Any], Any]:
    """(program bytes, lowered modules, partitioner) of a quantized module."""
    ep = torch.export.export(model, example)
    if by == "reference":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower
    else:
        from ember import to_edge_transform_and_lower
        from ember.backends.xnnpack import XnnpackPartitioner
    part = XnnpackPartitioner()
    edge = to_edge_transform_and_lower(ep, partitioner=[part])
    gm = edge.exported_program().graph_module
    lowered = [m for name, m in gm.named_children() if name.startswith("lowered_module")]
    return edge.to_executorch().buffer, lowered, part


def run_reference(buffer: bytes, args: tuple) -> List[torch.Tensor]:
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(buffer).load_method("forward")
    return list(method.execute([a.clone() for a in args]))


def output_step(t: torch.Tensor, model: Any = None) -> float:
    """One int8 quantization step of the output: its scale where a static
    dequantize gives the output, else the output's range over 255."""
    if isinstance(model, torch.fx.GraphModule):
        out = model.graph.output_node().args[0]
        out = out[0] if isinstance(out, (list, tuple)) else out
        if out.target == torch.ops.quantized_decomposed.dequantize_per_tensor.default:
            return float(out.args[1])
    return float(t.max() - t.min()) / 255


def _schema() -> str:
    import executorch.backends.xnnpack.serialization as s

    return os.path.join(list(s.__path__)[0], "schema.fbs")


def _flatc() -> str:
    import executorch

    return os.path.join(list(executorch.__path__)[0], "data", "bin", "flatc")


def decode_payload(payload: bytes) -> Dict[str, Any]:
    """An XNNPACK payload's XNNGraph as JSON (through flatc and the reference
    schema)."""
    assert payload[4:8] == b"XH00", "not an XNNPACK payload"
    off = int.from_bytes(payload[10:14], "little")
    size = int.from_bytes(payload[14:18], "little")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "graph.bin")
        with open(path, "wb") as f:
            f.write(payload[off:off + size])
        subprocess.run([_flatc(), "--json", "--strict-json", "--raw-binary", "--defaults-json",
                        "-o", d, _schema(), "--", path], check=True, capture_output=True)
        with open(os.path.join(d, "graph.json")) as f:
            text = f.read()
    # flatc writes infinities as bare inf / -inf
    return json.loads(re.sub(r"(:\s*)(-?)inf\b", r'\1"\2inf"', text))


def payload_summary(payload: bytes) -> Dict[str, Any]:
    """What two payloads of the same graph must agree on: node types and
    fields (debug handles aside), values (type, dims, quant params, flags,
    external ids, constants by named key)."""
    g = decode_payload(payload)
    keys = [c.get("named_key", "") for c in g.get("constant_data", [])]
    nodes = []
    for n in g.get("xnodes", []):
        nodes.append((n["xnode_union_type"], n["xnode_union"], n.get("output_min_max")))
    values = []
    for v in g.get("xvalues", []):
        u = v["xvalue_union"]
        t = u.get("tensor_value", u)
        q = dict(u.get("quant_params") or {})
        for k in ("scale_buffer_idx",):
            if k in q:
                q[k] = keys[q[k]]
        values.append((v["xvalue_union_type"], u.get("quant_params_type"), q, t["datatype"],
                       t["dims"], keys[t.get("constant_buffer_idx", 0)], t.get("flags", 0),
                       t.get("external_id"), t.get("id_out")))
    return {"nodes": nodes, "values": values, "inputs": g.get("input_ids"),
            "outputs": g.get("output_ids"), "externs": g.get("num_externs")}


_LAYOUT_NODES = {"XNNStaticTranspose", "XNNStaticReshape", "XNNConcatenate2", "XNNConcatenate3",
                 "XNNConcatenate4", "XNNConcatenate5", "XNNCopy"}


def quantized_records(payloads: Sequence[bytes]) -> List[str]:
    """Each node that computes on a quantized value, across payloads, with
    its values spelled out (type, dims, quant params, constant key): what two
    partitioners must agree on even where they cut delegates differently or
    order a value's layout changes differently (layout nodes are left out:
    the runtime checks cover them)."""
    out = []
    for p in payloads:
        s = payload_summary(p)
        for kind, fields, minmax in s["nodes"]:
            if kind in _LAYOUT_NODES:
                continue
            ids = {k: v for k, v in fields.items() if k.endswith("_id") and v != 0xFFFFFFFF}
            vals = {k: s["values"][v][:6] for k, v in ids.items()}
            if any(v[0] == "XNNQuantizedTensorValue" for v in vals.values()):
                other = {k: v for k, v in fields.items() if not k.endswith("_id")}
                out.append(repr((kind, other, minmax, sorted(vals.items()))))
    return sorted(out)


def canonical_graph(gm: torch.fx.GraphModule) -> List[str]:
    """A converted module's graph as the sorted structural digests of its
    nodes: each digest covers the node's operator, its literal arguments
    (floats to 9 digits), the values of constants it reads, and the digests
    of the nodes it reads. Equal lists: the same graph up to node names and
    order."""
    import hashlib

    digest: Dict[Any, str] = {}

    def norm(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            return digest[a]
        if isinstance(a, (list, tuple)):
            return tuple(norm(x) for x in a)
        if isinstance(a, dict):
            return tuple(sorted((k, norm(v)) for k, v in a.items()))
        if isinstance(a, float):
            return round(a, 9)
        return a

    for n in gm.graph.nodes:
        if n.op == "get_attr":
            owner, _, leaf = n.target.rpartition(".")
            t = getattr(gm.get_submodule(owner) if owner else gm, leaf)
            key: Any = ("attr", str(t.dtype), tuple(t.shape),
                        tuple(round(x, 9) for x in t.detach().double().flatten().tolist()))
        elif n.op == "placeholder":
            key = ("input", len([d for d in digest if d.op == "placeholder"]))
        else:
            key = (n.op, str(n.target), norm(n.args), norm(dict(n.kwargs)))
        digest[n] = hashlib.sha256(repr(key).encode()).hexdigest()[:16] + " " + str(n.target)
    return sorted(digest.values())


class TransformerBlock(nn.Module):
    """Pre-norm attention and MLP, the linears a transformer quantizes."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        h = self.ln1(x)
        q, k, v = (f(h).view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for f in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.relu(self.fc1(self.ln2(x))))


def setup_module() -> None:
    torch.manual_seed(0)


# ---------------------------------------------------------------------------
# The quantizer
# ---------------------------------------------------------------------------


_MODELS = {
    "mlp": (MLP, (torch.randn(4, 16),)),
    "transformer": (TransformerBlock, (torch.randn(2, 8, 32),)),
}


@pytest.mark.parametrize("config", [
    dict(is_per_channel=True, is_dynamic=True), dict(is_per_channel=True),
    dict(is_per_channel=False), dict(is_per_channel=True, act_qmin=-100, act_qmax=100),
])
@pytest.mark.parametrize("name", ["mlp", "transformer"])
def test_quantizer_matches_reference(name: str, config: dict) -> None:
    torch.manual_seed(1)
    cls, example = _MODELS[name]
    model = cls().eval()
    calib = [tuple(torch.randn_like(a) for a in example) for _ in range(3)]
    ours = quantize(model, example, calib, "ember", **config)
    ref = quantize(model, example, calib, "reference", **config)
    a, b = canonical_graph(ours), canonical_graph(ref)
    assert a == b, f"the converted graphs differ:\n{ours.code}\n{ref.code}"
    qdq = [n for n in ours.graph.nodes if "quantize" in str(n.target)]
    assert qdq, "nothing was quantized"


class ConvNet(nn.Module):
    """Convolutions with relu, a residual add, pooling, a concatenation."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.up = nn.ConvTranspose2d(16, 4, 2, stride=2)
        self.fc = nn.Linear(4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.c1(x))
        z = F.relu(self.c2(y) + y)
        z = F.max_pool2d(z, 2)
        z = torch.cat([z, self.dw(z)], dim=1) * 0.5
        z = self.up(z)
        return self.fc(F.adaptive_avg_pool2d(z, 1).flatten(1))


@pytest.mark.parametrize("config", [dict(is_per_channel=True), dict(is_per_channel=False),
                                    dict(is_per_channel=True, is_dynamic=True)])
def test_quantizer_matches_reference_on_a_cnn(config: dict) -> None:
    torch.manual_seed(2)
    model, example = ConvNet().eval(), (torch.randn(1, 3, 12, 12),)
    calib = [(torch.randn(1, 3, 12, 12),) for _ in range(3)]
    a = canonical_graph(quantize(model, example, calib, "ember", **config))
    b = canonical_graph(quantize(model, example, calib, "reference", **config))
    assert a == b


def test_module_name_type_and_operator_settings() -> None:
    """Configs by module name and type, by operator, and global, in that
    order of precedence, as the reference quantizer applies them."""
    from ember.backends.xnnpack.quantizer import XNNPACKQuantizer as Ours
    from ember.backends.xnnpack.quantizer import get_symmetric_quantization_config as ours_cfg
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer as Ref,
        get_symmetric_quantization_config as ref_cfg,
    )

    torch.manual_seed(3)
    model, example = TransformerBlock().eval(), (torch.randn(2, 8, 32),)

    def run(q: Any, cfg: Any) -> List[Any]:
        q.set_module_name("fc1", cfg(is_per_channel=True))
        q.set_module_type(nn.LayerNorm, cfg(is_per_channel=False))
        q.set_operator_type(torch.ops.aten.linear.default, cfg(is_per_channel=True, is_dynamic=True))
        m = prepare_pt2e(torch.export.export(copy.deepcopy(model), example).module(), q)
        m(*example)
        return canonical_graph(convert_pt2e(m))

    assert run(Ours(), ours_cfg) == run(Ref(), ref_cfg)


def test_bad_configurations_fail_clearly() -> None:
    from torchao.quantization.pt2e import MinMaxObserver
    from torchao.quantization.pt2e.quantizer import QuantizationConfig, QuantizationSpec

    from ember.backends.xnnpack.quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

    q = XNNPACKQuantizer()
    with pytest.raises(ValueError, match="expected a QuantizationConfig"):
        q.set_global("int8")
    with pytest.raises(ValueError, match="act range"):
        get_symmetric_quantization_config(act_qmin=10, act_qmax=5)
    with pytest.raises(ValueError, match="weight range"):
        get_symmetric_quantization_config(weight_qmin=-300)
    with pytest.raises(ValueError, match="has no quantized pattern"):
        q.set_operator_type(torch.ops.aten.sin.default, get_symmetric_quantization_config())
    with pytest.raises(ValueError, match="None config"):
        q.set_module_name("fc1", None)
    with pytest.raises(ValueError, match="module class"):
        q.set_module_type("Linear", get_symmetric_quantization_config())
    good = get_symmetric_quantization_config(is_per_channel=True)
    uint8 = QuantizationSpec(dtype=torch.uint8, quant_min=0, quant_max=255,
                             qscheme=torch.per_tensor_affine,
                             observer_or_fake_quant_ctr=MinMaxObserver)
    with pytest.raises(ValueError, match="int8 per-tensor"):
        q.set_global(QuantizationConfig(uint8, uint8, good.weight, None))
    asym = QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127,
                            qscheme=torch.per_channel_affine, ch_axis=0,
                            observer_or_fake_quant_ctr=MinMaxObserver)
    with pytest.raises(ValueError, match="weight spec must be static int8, symmetric"):
        q.set_global(QuantizationConfig(good.input_activation, good.output_activation, asym, None))
    dyn = get_symmetric_quantization_config(is_dynamic=True)
    with pytest.raises(ValueError, match="dynamic activations have no output spec"):
        q.set_global(QuantizationConfig(dyn.input_activation, dyn.input_activation, good.weight,
                                        None))


# ---------------------------------------------------------------------------
# Lowering
# ---------------------------------------------------------------------------


def _quantized_8da4w(model: nn.Module, group: int) -> nn.Module:
    from torchao.quantization.granularity import PerGroup
    from torchao.quantization.quant_api import Int8DynamicActivationIntxWeightConfig, quantize_

    quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4,
                                                           weight_granularity=PerGroup(group)))
    return model


class Mlp64(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(64, 96), nn.Linear(96, 64), nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


class StaticCNN(nn.Module):
    """What static int8 lowers whole: convolutions (one depthwise) with relu,
    a residual add with relu, max pooling, a global mean, a linear."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.c1(x))
        z = F.relu(self.c2(y) + y)
        z = self.dw(F.max_pool2d(z, 2))
        return self.fc(z.mean(dim=(2, 3), keepdim=True).flatten(1))


class StaticLayout(nn.Module):
    """Static int8 through cat and permute (they keep their input's qparams)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 1), nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.cat([F.relu(self.a(x)), F.relu(self.b(x))], dim=1)
        return self.fc(z.permute(0, 2, 3, 1))


def _quantized(name: str) -> Tuple[nn.Module, tuple, List[tuple]]:
    """A quantized module, its example input and more inputs to run."""
    torch.manual_seed(5)
    if name == "cnn-dynamic":
        ex = (torch.randn(1, 3, 12, 12),)
        return quantize(StaticCNN().eval(), ex, [ex], "ember", is_per_channel=True,
                        is_dynamic=True), ex, [ex, (torch.randn(1, 3, 12, 12),)]
    if name.split("-")[1] == "static":
        cls, shape = {"mlp": (Mlp64, (4, 64)), "cnn": (StaticCNN, (1, 3, 12, 12)),
                      "layout": (StaticLayout, (1, 3, 5, 6))}[name.split("-")[0]]
        calib = [(torch.randn(*shape),) for _ in range(4)]
        return quantize(cls().eval(), calib[0], calib, "ember",
                        is_per_channel=not name.endswith("per-tensor")), calib[0], \
            [calib[1], (torch.randn(*shape),)]
    if name == "mlp-dynamic":
        ex = (torch.randn(4, 64),)
        runs = [ex, (torch.randn(4, 64) * 3,)]
        return quantize(Mlp64().eval(), ex, [ex], "ember", is_per_channel=True,
                        is_dynamic=True), ex, runs
    if name == "transformer-dynamic":
        ex = (torch.randn(2, 8, 32),)
        return quantize(TransformerBlock().eval(), ex, [ex], "ember", is_per_channel=True,
                        is_dynamic=True), ex, [ex, (torch.randn(2, 8, 32),)]
    if name == "mlp-8da4w":
        ex = (torch.randn(3, 64),)
        return _quantized_8da4w(Mlp64().eval(), 32), ex, [ex, (torch.randn(3, 64),)]
    if name == "transformer-8da4w":
        ex = (torch.randn(1, 8, 64),)
        blk = TransformerBlock(dim=64).eval()
        return _quantized_8da4w(blk, 32), ex, [ex, (torch.randn(1, 8, 64),)]
    raise KeyError(name)


_LOWERED = ["mlp-dynamic", "transformer-dynamic", "cnn-dynamic", "mlp-8da4w", "transformer-8da4w", "mlp-static",
            "mlp-static-per-tensor", "cnn-static", "cnn-static-per-tensor", "layout-static"]


# The models whose single delegate ember writes value for value as the
# reference does (elsewhere the two may place layout changes differently).
_WHOLE_PAYLOAD_EQUAL = {"mlp-dynamic", "mlp-8da4w", "mlp-static", "mlp-static-per-tensor",
                        "cnn-static", "cnn-static-per-tensor"}


def _quantized_nodes(lowered: List[Any]) -> int:
    n = 0
    for m in lowered:
        g = decode_payload(m.processed_bytes)
        n += sum(v["xvalue_union_type"] == "XNNQuantizedTensorValue" for v in g["xvalues"])
    return n


@pytest.mark.parametrize("name", _LOWERED)
def test_payload_matches_reference(name: str) -> None:
    """Every delegate's payload states what the reference partitioner's states."""
    model, example, _ = _quantized(name)
    ours, ours_lowered, _ = lower(copy.deepcopy(model), example, "ember")
    ref, ref_lowered, _ = lower(copy.deepcopy(model), example, "reference")
    assert _quantized_nodes(ours_lowered) > 0, "no quantized value in ember's payloads"
    ours_q = [m for m in ours_lowered if _quantized_nodes([m])]
    ref_q = [m for m in ref_lowered if _quantized_nodes([m])]
    a = quantized_records([m.processed_bytes for m in ours_q])
    b = quantized_records([m.processed_bytes for m in ref_q])
    assert a == b, "the quantized nodes differ:\n" + "\n".join(a) + "\n--\n" + "\n".join(b)
    if name in _WHOLE_PAYLOAD_EQUAL:  # one delegate each, the same layouts: every value agrees
        assert len(ours_q) == len(ref_q) == 1
        sa, sb = payload_summary(ours_q[0].processed_bytes), payload_summary(ref_q[0].processed_bytes)
        for part in ("nodes", "values", "inputs", "outputs", "externs"):
            assert sa[part] == sb[part], f"{part} differ:\n{sa[part]}\n{sb[part]}"
    # the named data is the bytes its keys hash
    import hashlib

    for m in ours_q:
        for key, data in m.named_data.items():
            assert key.split("_")[-1] == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("name", _LOWERED)
def test_runs_in_reference_runtime(name: str) -> None:
    """ember's program in ExecuTorch's runtime: the reference program's
    outputs (both run XNNPACK on the same quantized values), and within one
    output quantization step of the eager quantized model. pt2e's dynamic
    graphs quantize activations per tensor in eager, where XNNPACK quantizes
    each row on its own (qdint8, as ExecuTorch lowers them too): the two
    round differently (measured: up to 2.2 steps on the MLP with inputs three
    times the calibration data), so those get three steps."""
    model, example, runs = _quantized(name)
    ours, lowered, part = lower(copy.deepcopy(model), example, "ember")
    ref, _, _ = lower(copy.deepcopy(model), example, "reference")
    assert _quantized_nodes(lowered) > 0
    for args in runs:
        with torch.no_grad():
            eager = model(*args)
        got = run_reference(ours, args)[0]
        want = run_reference(ref, args)[0]
        torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
        err = float((got - eager).abs().max())
        steps = 3 if name.endswith("-dynamic") else 1
        step = output_step(eager, model)
        assert err <= steps * step + 1e-6, f"{name}: off by {err}, {steps} step(s) is {steps * step}"


def test_quantized_linears_are_all_delegated() -> None:
    model, example, _ = _quantized("transformer-dynamic")
    _, lowered, part = lower(copy.deepcopy(model), example, "ember")
    linears = [k for k, v in part.reasons.items() if "linear" in k]
    assert not linears, f"linears left outside: { {k: part.reasons[k] for k in linears} }"
    fcs = sum(sum(n["xnode_union_type"] == "XNNFullyConnected"
                  for n in decode_payload(m.processed_bytes)["xnodes"]) for m in lowered)
    assert fcs == 6


def test_group_size_xnnpack_cannot_take_stays_outside() -> None:
    """int4 groups of 16 (XNNPACK needs multiples of 32): the linears stay on
    the portable path, with the reason, and the program still runs."""
    torch.manual_seed(6)
    model = _quantized_8da4w(Mlp64().eval(), 16)
    x = torch.randn(2, 64)
    buffer, lowered, part = lower(copy.deepcopy(model), (x,), "ember")
    assert _quantized_nodes(lowered) == 0
    got = run_reference(buffer, (x,))[0]
    with torch.no_grad():
        eager = model(x)
    torch.testing.assert_close(got, eager, rtol=1e-4, atol=1e-4)


def test_activation_range_xnnpack_cannot_take_stays_outside() -> None:
    """Static activations in [-100, 100] (XNNPACK's qint8 values span
    [-128, 127]): nothing quantized is delegated, each quantize / dequantize
    and linear left outside says why, and the program runs like the eager
    quantized model on the portable kernels."""
    torch.manual_seed(11)
    x = torch.randn(4, 64)
    m = quantize(Mlp64().eval(), (x,), [(x,)], "ember", is_per_channel=True, act_qmin=-100,
                 act_qmax=100)
    buffer, lowered, part = lower(copy.deepcopy(m), (x,), "ember")
    assert _quantized_nodes(lowered) == 0
    assert any(k.startswith("quantize_per_tensor") for k in part.reasons), part.reasons
    with torch.no_grad():
        eager = m(x)
    torch.testing.assert_close(run_reference(buffer, (x,))[0], eager, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp-dynamic", "mlp-8da4w", "cnn-static", "mlp-static",
                                  "cnn-static-per-tensor", "layout-static", "cnn-dynamic"])
def test_runs_in_ember_runtime(name: str) -> None:
    """ember's runtime on its own quantized payloads, within the steps the
    reference runtime keeps."""
    ember_runtime = pytest.importorskip("ember.runtime")
    model, example, runs = _quantized(name)
    buffer, _, _ = lower(copy.deepcopy(model), example, "ember")
    method = ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
    outs = [method.execute([a.clone() for a in args])[0] for args in runs]
    steps = 3 if name.endswith("-dynamic") else 1
    for args, got in zip(runs, outs):
        with torch.no_grad():
            eager = model(*args)
        assert float((got - eager).abs().max()) <= steps * output_step(eager, model) + 1e-6


def test_duplicate_dynamic_quant_chain_gives_each_reader_a_chain() -> None:
    from ember.backends.transforms import DuplicateDynamicQuantChainPass
    from ember.backends.xnnpack.quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

    class Fan(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(8, 16), nn.Linear(8, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.a(x) + self.b(x)

    x = torch.randn(2, 8)
    q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True,
                                                                        is_dynamic=True))
    m = prepare_pt2e(torch.export.export(Fan().eval(), (x,)).module(), q)
    m(x)
    m = convert_pt2e(m)
    choose = torch.ops.quantized_decomposed.choose_qparams.tensor
    assert sum(n.target == choose for n in m.graph.nodes) == 1
    before = m(x)
    DuplicateDynamicQuantChainPass()(m)
    assert sum(n.target == choose for n in m.graph.nodes) == 2
    torch.testing.assert_close(m(x), before, rtol=0, atol=0)
