"""The Vulkan delegate, ahead of time: ember's payload against ExecuTorch's.

Each model is lowered by ExecuTorch's VulkanPartitioner and by ember's
(ember.backends.vulkan); the payloads must be structurally equal: the same
operator calls in the same order with the same argument value ids, and value
by value the same kind, dtype, dims, constant, storage type and memory
layout (memory object ids are checked for soundness only: two tensors that
share one are never alive together). Constants are named data keyed by the
sha256 of their bytes, so equal keys mean equal bytes. ExecuTorch's own
(flatc) deserializer reads every ember payload back.

Then the partitioning decision per node against ExecuTorch's where both
registries have the op, nanoGPT's delegates against ExecuTorch's, nanoGPT
(seq and KV, float32 and float16) fully delegated, int8 weight-only linears,
what stays on the portable path (and still runs there), errors for bad
options and malformed payloads, and that docs/vulkan.md's table is current.

ExecuTorch's pip runtime registers no VulkanBackend, so running the payloads
is left to ember's runtime; those tests skip while it lacks the backend.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from aot_models import CNN, MLP

ember_runtime = pytest.importorskip("ember.runtime")
pytest.importorskip("executorch.backends.vulkan.partitioner.vulkan_partitioner")

from ember import ExportError, to_edge, to_edge_transform_and_lower  # noqa: E402
from ember.backend.lowering import get_lowered_modules  # noqa: E402
from ember.backends.vulkan import VulkanPartitioner  # noqa: E402
from ember.backends.vulkan import schema as vs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NANOGPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "nanogpt")
if NANOGPT not in sys.path:
    sys.path.insert(0, NANOGPT)

# --------------------------------------------------------------------------- #
# Lowering both ways
# --------------------------------------------------------------------------- #


def lower_ember(model: nn.Module, args: tuple, options: Optional[dict] = None,
                dynamic_shapes: Any = None):
    ep = torch.export.export(copy.deepcopy(model).eval(), args, dynamic_shapes=dynamic_shapes)
    part = VulkanPartitioner(options)
    edge = to_edge_transform_and_lower(ep, partitioner=[part])
    mods = [m for _, m in get_lowered_modules(edge.exported_program())]
    return edge, part, mods


def lower_reference(model: nn.Module, args: tuple, options: Optional[dict] = None,
                    dynamic_shapes: Any = None):
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import \
        VulkanPartitioner as RefPartitioner
    from executorch.exir import to_edge_transform_and_lower as ref_lower

    ep = torch.export.export(copy.deepcopy(model).eval(), args, dynamic_shapes=dynamic_shapes)
    edge = ref_lower(ep, partitioner=[RefPartitioner(options)])
    return [m for _, m in edge.exported_program().graph_module.named_children()
            if hasattr(m, "processed_bytes")]


def reference_reader(payload: bytes):
    """ExecuTorch's deserializer (flatc) applied to a payload."""
    from executorch.backends.vulkan.serialization.vulkan_graph_serialize import (
        extract_vk_flatbuffer, flatbuffer_to_vk_graph)

    return flatbuffer_to_vk_graph(extract_vk_flatbuffer(payload))


def _enum(x: Any) -> int:
    return int(getattr(x, "value", x))


def normalize_reference(g) -> vs.VkGraph:
    """ExecuTorch's VkGraph dataclasses as ember's."""
    kinds = {"Null": vs.Null, "Int": vs.Int, "Double": vs.Double, "Bool": vs.Bool,
             "IntList": vs.IntList, "DoubleList": vs.DoubleList, "BoolList": vs.BoolList,
             "ValueList": vs.ValueList, "String": vs.String, "SymInt": vs.SymInt}
    values: List[vs.Value] = []
    for v in g.values:
        x = v.value
        name = type(x).__name__
        if name == "VkTensor":
            values.append(vs.VkTensor(_enum(x.datatype), list(x.dims), x.constant_id,
                                      x.mem_obj_id, _enum(x.storage_type),
                                      _enum(x.memory_layout), _enum(x.staging_datatype)))
        else:
            values.append(kinds[name](**{k: getattr(x, k) for k in
                                         kinds[name].__dataclass_fields__}))
    chain = [vs.OperatorCall(c.node_id, c.name, list(c.args)) for c in g.chain]
    return vs.VkGraph(g.version, chain,
                      values, list(g.input_ids), list(g.output_ids),
                      [vs.VkBytes(b.offset, b.length, b.named_key or "") for b in g.constants],
                      [], _enum(g.storage_type_override), _enum(g.memory_layout_override))


def read_reference(payload: bytes) -> vs.VkGraph:
    """An ExecuTorch payload read by ember's reader (and by ExecuTorch's, which
    must agree, where the graph has no infinite doubles)."""
    g = vs.read_payload(payload)[0]
    if all(math.isfinite(v.double_val) for v in g.values if isinstance(v, vs.Double)):
        assert normalize_reference(reference_reader(payload)) == g
    return g


def strip_memory(v: vs.Value) -> vs.Value:
    if isinstance(v, vs.VkTensor):
        return copy.replace(v, mem_obj_id=-1) if hasattr(copy, "replace") else \
            vs.VkTensor(v.datatype, v.dims, v.constant_id, -1, v.storage_type, v.memory_layout,
                        v.staging_datatype)
    return v


def assert_same_graph(ours: vs.VkGraph, ref: vs.VkGraph) -> None:
    assert [(c.name, c.args) for c in ours.chain] == [(c.name, c.args) for c in ref.chain]
    assert len(ours.values) == len(ref.values)
    for i, (a, b) in enumerate(zip(ours.values, ref.values)):
        assert strip_memory(a) == strip_memory(b), f"value {i}: {a} != {b}"
    assert ours.input_ids == ref.input_ids and ours.output_ids == ref.output_ids
    assert [(c.length, c.named_key) for c in ours.constants] == \
        [(c.length, c.named_key) for c in ref.constants]


def assert_memory_sound(g: vs.VkGraph) -> None:
    """Tensors sharing a memory object are never alive at the same time."""
    spans: Dict[int, Tuple[int, int]] = {}

    def touch(vid: int, i: int) -> None:
        v = g.values[vid]
        if isinstance(v, vs.ValueList):
            for x in v.items:
                touch(x, i)
        elif isinstance(v, vs.VkTensor) and v.mem_obj_id >= 0:
            lo, hi = spans.get(vid, (i, i))
            spans[vid] = (min(lo, i), max(hi, i))

    for vid in g.input_ids:
        touch(vid, -1)
    for i, c in enumerate(g.chain):
        for a in c.args:
            touch(a, i)
    for vid in g.output_ids:
        touch(vid, len(g.chain))
    by_obj: Dict[int, List[Tuple[int, int]]] = {}
    for vid, span in spans.items():
        by_obj.setdefault(g.values[vid].mem_obj_id, []).append(span)
    for obj, ss in by_obj.items():
        ss.sort()
        for (a0, a1), (b0, b1) in zip(ss, ss[1:]):
            assert a1 < b0, f"memory object {obj} holds two live tensors"


def check_payload(mod) -> vs.VkGraph:
    """ember's payload: its reader and ExecuTorch's agree; constants hash to their keys."""
    g, raw = vs.read_payload(mod.processed_bytes)
    finite = all(math.isfinite(v.double_val) for v in g.values if isinstance(v, vs.Double))
    if finite:  # ExecuTorch's reader goes through JSON, which has no infinities
        assert normalize_reference(reference_reader(mod.processed_bytes)) == g
    assert raw == b""
    for c in g.constants:
        assert c.offset == vs.NAMED_DATA_OFFSET
        data = mod.named_data[c.named_key]
        assert len(data) == c.length and hashlib.sha256(data).hexdigest() == c.named_key
    assert_memory_sound(g)
    return g


def compare(model: nn.Module, args: tuple, options: Optional[dict] = None,
            dynamic_shapes: Any = None) -> List[vs.VkGraph]:
    _, _, ours = lower_ember(model, args, options, dynamic_shapes)
    refs = lower_reference(model, args, options, dynamic_shapes)
    assert len(ours) == len(refs) >= 1
    graphs = []
    for mod, ref in zip(ours, refs):
        g = check_payload(mod)
        assert_same_graph(g, read_reference(ref.processed_bytes))
        assert [(c.key, c.value) for c in mod.compile_specs] == \
            [(c.key, c.value) for c in ref.compile_specs]
        graphs.append(g)
    return graphs


# --------------------------------------------------------------------------- #
# Structural equality with ExecuTorch
# --------------------------------------------------------------------------- #


class Blocks(nn.Module):
    """Depthwise + pointwise convs, hardtanh / hardswish, avg pooling,
    elementwise ops with broadcasting, a permute, a cat and a softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 8, 1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AvgPool2d(2)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.hardtanh(self.dw(x), -2.0, 2.0)
        y = torch.nn.functional.hardswish(self.bn(self.pw(y)))
        y = self.pool(y)
        z = (y * 0.5 - y / 3.0).permute(0, 1, 3, 2)
        return torch.softmax(torch.cat([y, z], dim=1), dim=-1)


class Conv1dHead(nn.Module):
    """A bias-free conv + batch norm + relu6, a pointwise 1-d conv (height
    packed) and a mean over the last dim (a buffer, keepdim False)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.pw = nn.Conv1d(4, 4, 1)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.relu6(self.bn(self.conv(x)))
        return self.pw(y.flatten(2)).mean(-1)


class Views(nn.Module):
    """Views that only add or drop size-1 dims (squeeze / unsqueeze), a gelu on
    a tensor with a size-1 dim (run squeezed), view chains that fuse."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.fc(x)) + torch.relu(x.reshape(1, 3, 1, 8))


@pytest.mark.parametrize("name", ["cnn", "blocks", "conv1d", "views"])
def test_payload_matches_executorch(name: str) -> None:
    torch.manual_seed(0)
    model, args = {"cnn": (CNN(), (torch.randn(1, 3, 16, 16),)),
                   "blocks": (Blocks(), (torch.randn(1, 8, 8, 8),)),
                   "conv1d": (Conv1dHead(), (torch.randn(1, 3, 8, 8),)),
                   "views": (Views(), (torch.randn(3, 1, 8),))}[name]
    graphs = compare(model, args)
    names = {c.name for g in graphs for c in g.chain}
    if name == "cnn":
        # batch norm folded, relu fused, a layout transition before the head
        assert "et_vk.conv_with_clamp.default" in names and "aten.clone.default" in names
        assert not any("batch_norm" in n for n in names)


def test_fp16_matches_executorch() -> None:
    """force_fp16: a float32 model stored as float16 (the MLP: linear, relu)."""
    torch.manual_seed(0)
    graphs = compare(MLP(), (torch.randn(2, 16),), {"force_fp16": True})
    tensors = [v for v in graphs[0].values if isinstance(v, vs.VkTensor)]
    assert {t.datatype for t in tensors} == {vs.FLOAT16}
    assert {t.staging_datatype for t in tensors if t.constant_id < 0} == {vs.FLOAT32}


def test_float16_model() -> None:
    """A float16 model: float16 values and constants, float16 staging."""
    torch.manual_seed(0)
    _, part, mods = lower_ember(MLP().half(), (torch.randn(2, 16, dtype=torch.float16),))
    assert len(mods) == 1 and not part.reasons
    g = check_payload(mods[0])
    tensors = [v for v in g.values if isinstance(v, vs.VkTensor)]
    assert {(t.datatype, t.staging_datatype) for t in tensors} == {(vs.FLOAT16, vs.FLOAT16)}
    assert all(len(mods[0].named_data[c.named_key]) == c.length for c in g.constants)


def test_texture_limits_option_matches_executorch() -> None:
    """A tensor beyond a small texture limit goes to a buffer (or stays out)."""
    torch.manual_seed(0)
    compare(MLP(), (torch.randn(64, 16),), {"texture_limits": (4, 64, 64)})


def _rope_inputs(t: int = 3) -> tuple:
    angles = torch.outer(torch.arange(t).float(), 1.0 / (100 ** (torch.arange(0, 8, 2) / 8)))
    return (torch.randn(1, t, 4, 8), torch.randn(1, t, 2, 8), angles.cos(), angles.sin())


def _new_op_cases() -> Dict[str, Tuple[nn.Module, tuple]]:
    """One small model per operator added with the transposed convolution
    (every form the partitioners take)."""
    from ember.backends.vulkan.rope import rotate_pairs

    from test_vulkan_runtime import Fn  # noqa: E402  (a module around a function)

    torch.manual_seed(0)
    convs = nn.ModuleList([nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1,
                                              groups=2, dilation=2),
                           nn.ConvTranspose2d(4, 4, 2, stride=2, bias=False)])
    modes = [dict(mode="nearest"), dict(mode="bilinear", align_corners=False),
             dict(mode="bilinear", align_corners=True)]
    sizes = [dict(scale_factor=2), dict(scale_factor=(1.5, 2.5)), dict(size=(7, 3))]
    return {
        "conv_transpose": (Fn(lambda s, x: (s.convs[0](x), torch.relu(s.convs[1](x))),
                              convs=convs), (torch.randn(1, 4, 5, 6),)),
        "group_norm": (Fn(lambda s, x: (s.gn(x), s.gn_plain(x)), gn=nn.GroupNorm(2, 6),
                          gn_plain=nn.GroupNorm(3, 6, affine=False)), (torch.randn(1, 6, 4, 5),)),
        "upsample": (Fn(lambda s, x: tuple(F.interpolate(x, **m, **z) for m in modes
                                           for z in sizes)), (torch.randn(1, 3, 4, 5),)),
        "index": (Fn(lambda s, x, i, j: (torch.index_select(x, 1, i), torch.gather(x, 2, j),
                                         x[i[:2]], x[:, i])),
                  (torch.randn(3, 4, 5), torch.tensor([2, 0, 1]), torch.randint(0, 5, (3, 4, 2)))),
        "rope": (Fn(lambda s, q, k, c, sn: rotate_pairs(q, k, c, sn)), _rope_inputs()),
    }


@pytest.mark.parametrize("name", ["conv_transpose", "group_norm", "upsample", "index", "rope"])
def test_new_ops_match_executorch(name: str) -> None:
    """Both partitioners delegate these ops whole, with equal payloads, and
    ember's program runs in ember's runtime as eager computes it."""
    model, args = _new_op_cases()[name]
    graphs = compare(model, args)
    names = {c.name for g in graphs for c in g.chain}
    want = {"conv_transpose": "aten.convolution.default",
            "group_norm": "aten.native_group_norm.default",
            "upsample": "aten.upsample_bilinear2d.vec", "index": "aten.index.Tensor",
            "rope": "et_vk.apply_rotary_emb.default"}[name]
    assert want in names
    if name == "rope":
        assert names == {want}  # the whole subgraph is one call
    if name == "group_norm":  # the statistics are buffers (ExecuTorch's registry)
        call = next(c for c in graphs[0].chain if c.name == want)
        outs = graphs[0].values[call.args[-1]].items
        assert [graphs[0].values[o].storage_type for o in outs] == \
            [vs.TEXTURE_3D, vs.BUFFER, vs.BUFFER]
    if ember_runtime.has_backend("VulkanBackend"):
        edge, part, _ = lower_ember(model, args)
        assert not part.reasons
        method = ember_runtime.Runtime.get().load_program(edge.to_executorch().buffer) \
            .load_method("forward")
        with torch.no_grad():
            want_out = model(*args)
        for g, w in zip(method.execute(list(args)), want_out):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


def test_rope_fusion_follows_the_lists_and_dtypes() -> None:
    """With the fused op blocklisted, or float64 inputs, the rope subgraph is
    not fused (its nodes are decided one by one)."""
    from ember.backends.vulkan.rope import apply_rotary_emb, rotate_pairs

    from test_vulkan_runtime import Fn

    def fused(mods) -> bool:
        return any(c.name == "et_vk.apply_rotary_emb.default"
                   for m in mods for c in check_payload(m).chain)

    model = Fn(lambda s, *a: rotate_pairs(*a))
    ep = torch.export.export(model, _rope_inputs())
    edge = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner(
        operator_blocklist=[apply_rotary_emb])])
    assert not fused([m for _, m in get_lowered_modules(edge.exported_program())])
    _, _, mods = lower_ember(model, tuple(t.double() for t in _rope_inputs()))
    assert not fused(mods)
    assert fused(lower_ember(model, _rope_inputs())[2])


class EmbedHead(nn.Module):
    """An int64 embedding lookup, a linear and a softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.fc = nn.Linear(8, 8)

    def forward(self, i: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(self.emb(i) + x)).softmax(-1)


def _options_cases() -> List[dict]:
    from executorch.backends.vulkan.serialization.vulkan_graph_schema import (VkMemoryLayout,
                                                                              VkStorageType)

    return [{"storage_type_override": VkStorageType.BUFFER,
             "memory_layout_override": VkMemoryLayout.TENSOR_CHANNELS_PACKED},
            {"skip_tag_memory_metadata": True}, {"skip_memory_planning": True},
            {"downcast_64_bit": False}]


@pytest.mark.parametrize("case", range(4))
def test_options_match_executorch(case: int) -> None:
    """ExecuTorch's other compile options: equal compile specs and payloads,
    and the programs run in ember's runtime."""
    options = _options_cases()[case]
    torch.manual_seed(0)
    args = (torch.randint(0, 10, (2, 3)), torch.randn(2, 3, 8))
    (g,) = compare(EmbedHead(), args, options)
    tensors = [v for v in g.values if isinstance(v, vs.VkTensor)]
    if "skip_tag_memory_metadata" in options:
        assert {(t.storage_type, t.memory_layout) for t in tensors} == \
            {(vs.DEFAULT_STORAGE, vs.DEFAULT_LAYOUT)}
        assert "aten.clone.default" not in {c.name for c in g.chain}
    if "skip_memory_planning" in options:
        assert {t.mem_obj_id for t in tensors} == {-1}
    if "downcast_64_bit" in options:  # the int64 indices stay int64
        assert (vs.INT64, vs.INT64) in {(t.datatype, t.staging_datatype) for t in tensors}
    if ember_runtime.has_backend("VulkanBackend"):
        model = EmbedHead()
        torch.manual_seed(0)
        model = EmbedHead().eval()
        edge, _, _ = lower_ember(model, args, options)
        method = ember_runtime.Runtime.get().load_program(edge.to_executorch().buffer) \
            .load_method("forward")
        with torch.no_grad():
            torch.testing.assert_close(method.execute(list(args))[0], model(*args),
                                       rtol=1e-4, atol=1e-5)


def test_nn_module_lists_match_executorch() -> None:
    """nn_module_blocklist / allowlist: the nodes of matching module types stay
    out (or are the only ones in), node for node as ExecuTorch decides."""
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import \
        VulkanPartitioner as RefPartitioner
    from executorch.exir import to_edge_transform_and_lower as ref_lower

    torch.manual_seed(0)
    args = (torch.randint(0, 10, (2, 3)), torch.randn(2, 3, 8))
    for kw in ({"nn_module_blocklist": ["Linear"]}, {"nn_module_allowlist": ["Embedding"]}):
        ep = torch.export.export(EmbedHead().eval(), args)
        ours = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner(**kw)])
        ref = ref_lower(torch.export.export(EmbedHead().eval(), args),
                        partitioner=[RefPartitioner({}, **kw)])

        def outside(prog) -> List[str]:
            return sorted(n.target.__name__.split(".")[-2] for n in prog.graph.nodes
                          if n.op == "call_function" and "delegate" not in str(n.target)
                          and n.target.__name__ != "getitem")

        assert outside(ours.exported_program()) == outside(ref.exported_program()), kw
        assert outside(ours.exported_program())  # something stayed out
    part = VulkanPartitioner(nn_module_blocklist=["Linear"])
    part.partition(to_edge(torch.export.export(EmbedHead().eval(), args)).exported_program())
    assert "nn_module blocklist" in " ".join(part.reasons.values())


# --------------------------------------------------------------------------- #
# Partitioning decisions, node by node
# --------------------------------------------------------------------------- #


def _gpt(n_layer: int = 1):
    from model import GPT, GPTConfig

    torch.manual_seed(0)
    return GPT(GPTConfig(block_size=16, vocab_size=64, n_layer=n_layer, n_head=2, n_embd=16,
                         dropout=0.0, bias=True)).eval()


def _reference_decisions(ep) -> List[Tuple[str, bool]]:
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanSupportedOperators
    from executorch.backends.vulkan.utils import DEFAULT_BUFFER_LIMIT, DEFAULT_TEXTURE_LIMITS
    from executorch.exir import EdgeCompileConfig as RefConfig
    from executorch.exir import to_edge as ref_to_edge

    edge = ref_to_edge(ep, compile_config=RefConfig(_check_ir_validity=False))
    sup = VulkanSupportedOperators(DEFAULT_TEXTURE_LIMITS, DEFAULT_BUFFER_LIMIT)
    out = []
    for n in edge.exported_program().graph.nodes:
        if n.op == "call_function":
            name = getattr(n.target, "__name__", str(n.target))
            out.append((name.split(".")[-2] if "." in name else name,
                        sup._is_node_supported(n)))
    return out


# Ops ExecuTorch's Vulkan registry lacks, which ember's takes (docs/vulkan.md).
EMBER_ONLY = {"mul", "any"}
# Nodes ExecuTorch's partitioner leaves out although its registry lists the
# op: it rejects a float scalar_tensor's 0-d output.
REFERENCE_ONLY_OUT = {"scalar_tensor"}


def test_nanogpt_partition_decisions_match_executorch() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    gpt = _gpt()
    example = (torch.randint(0, 64, (1, 16)),)
    dyn = ({1: torch.export.Dim("t", max=16)},)
    with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
        ep = torch.export.export(gpt, example, dynamic_shapes=dyn)
    ref = _reference_decisions(ep)
    edge = to_edge(ep)
    part = VulkanPartitioner()
    ours = part.decisions(edge.exported_program())
    nodes = [n for n in edge.exported_program().graph.nodes if n.op == "call_function"]
    assert len(nodes) == len(ref)
    differ = []
    for n, (ref_name, ref_ok) in zip(nodes, ref):
        name = getattr(n.target, "__name__", str(n.target))
        short = name.split(".")[-2] if "." in name else name
        assert short == ref_name
        ok = ours[n.name] is None
        if ok != ref_ok:
            differ.append((short, ok))
    # every difference is one the docs list: ember takes more, never less
    assert all(ok for _, ok in differ), differ
    assert {s for s, _ in differ} <= EMBER_ONLY | REFERENCE_ONLY_OUT | {"_clone_dim_order"}


def _signature(g: vs.VkGraph) -> Tuple[list, list, list]:
    """What a graph holds, whatever the order of its values and calls."""
    def kind(v: vs.Value) -> Any:
        if isinstance(v, vs.VkTensor):
            return ("tensor", v.datatype, tuple(v.dims), v.constant_id >= 0, v.storage_type,
                    v.memory_layout, v.staging_datatype)
        if isinstance(v, (vs.ValueList, vs.SymInt)):
            return (type(v).__name__, len(getattr(v, "items", ())))
        return (type(v).__name__, repr(v))
    return (sorted(c.name for c in g.chain), sorted(map(repr, map(kind, g.values))),
            sorted(c.named_key for c in g.constants))


def test_nanogpt_seq_partitions_match_executorch() -> None:
    """With the ops ExecuTorch leaves out blocklisted, ember's delegates of
    nanoGPT hold what ExecuTorch's hold: the same calls, values (dtype, dims,
    storage, layout) and constants. ember's lowering orders the nodes of a
    fused subgraph by first use, so the order may differ."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    gpt = _gpt()
    example = (torch.randint(0, 64, (1, 16)),)
    dyn = ({1: torch.export.Dim("t", max=16)},)
    aten = torch.ops.aten
    with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
        ep = torch.export.export(gpt, example, dynamic_shapes=dyn)
        part = VulkanPartitioner(operator_blocklist=[aten.mul.Scalar, aten.any.dim,
                                                      aten.scalar_tensor.default])
        edge = to_edge_transform_and_lower(ep, partitioner=[part])
        refs = lower_reference(gpt, example, None, dyn)
    ours = [m for _, m in get_lowered_modules(edge.exported_program())]
    assert len(ours) == len(refs) == 3
    for mod, ref in zip(ours, refs):
        assert _signature(check_payload(mod)) == _signature(read_reference(ref.processed_bytes))


def test_nanogpt_seq_fully_delegated() -> None:
    from export import export_seq

    gpt = _gpt(2)
    prog = export_seq(gpt, backend="vulkan")
    meta = ember_runtime.Runtime.get().load_program(prog.buffer).metadata("forward")
    assert meta.num_delegates == 1 and not meta.operators  # nothing left outside
    mods = [m for _, m in get_lowered_modules(prog.exported_program())]
    assert len(mods) == 1 and mods[0].backend_id == "VulkanBackend"
    g = check_payload(mods[0])
    # ExecuTorch reads the program: one VulkanBackend delegate, every
    # constant of the payload in the named data, byte for byte
    from executorch.exir._serialize._program import deserialize_pte_binary

    pte = deserialize_pte_binary(prog.buffer)
    assert [d.id for d in pte.program.execution_plan[0].delegates] == ["VulkanBackend"]
    stored = pte.named_data.pte_data
    for c in g.constants:
        entry = stored[c.named_key]
        assert bytes(pte.named_data.buffers[entry.buffer_index]) == mods[0].named_data[c.named_key]
    names = [c.name for c in g.chain]
    assert names.count("aten.linear.default") == 9 and "aten._softmax.default" in names
    assert "aten.native_layer_norm.default" in names and "aten.bmm.default" in names


def test_nanogpt_kv_fully_delegated_and_owns_its_caches() -> None:
    from export import export_kv

    gpt = _gpt(2)
    prog = export_kv(gpt, backend="vulkan")
    meta = ember_runtime.Runtime.get().load_program(prog.buffer).metadata("forward")
    assert meta.num_delegates == 1 and not meta.operators
    ep = prog.exported_program()
    mods = [m for _, m in get_lowered_modules(ep)]
    assert len(mods) == 1
    assert not ep.graph_signature.buffers_to_mutate  # the caches live in the delegate
    g = check_payload(mods[0])
    calls = [c for c in g.chain if c.name == "sdpa_with_kv_cache.default"]
    assert len(calls) == 2
    for c in calls:
        q, k_cache = g.values[c.args[0]], g.values[c.args[3]]
        # q (B, T, H, D); caches (B, L, H, D) constants; start_pos a SymInt
        assert k_cache.constant_id >= 0 and k_cache.dims == [1, 16, q.dims[2], q.dims[3]]
        assert isinstance(g.values[c.args[5]], vs.SymInt)
        assert len(c.args) == 12
    assert sum(c.name == "et_vk.select_as_symint.default" for c in g.chain) == 2
    # float16: the caches and weights are float16 constants too
    g16 = check_payload(get_lowered_modules(export_kv(gpt, backend="vulkan-fp16")
                                            .exported_program())[0][1])
    caches = [g16.values[c.args[3]] for c in g16.chain if c.name == "sdpa_with_kv_cache.default"]
    assert {t.datatype for t in caches} == {vs.FLOAT16}
    assert {v.datatype for v in g16.values if isinstance(v, vs.VkTensor) and
            v.constant_id >= 0 and len(v.dims) == 2} == {vs.FLOAT16}
    # a cache the texture limits cannot hold is a clean error, not a lost cache
    from kv_cache import KVCacheGPT

    kv = KVCacheGPT(_gpt()).eval()
    example = (torch.zeros(1, 2, dtype=torch.long), torch.tensor([0], dtype=torch.long))
    dyn = ({1: torch.export.Dim("T", min=1, max=kv.max_len)}, None)
    with torch.no_grad():
        ep = torch.export.export(kv, example, dynamic_shapes=dyn, strict=False)
    with pytest.raises(ExportError, match="attention with a KV cache"):
        to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner(
            {"texture_limits": (1, 1, 1), "buffer_limit": 1})])


def test_int8_weight_only_linear() -> None:
    """aten._weight_int8pack_mm (int8 weights, float scales per output channel)."""
    from ember.backends.vulkan.quantize import int8_weight_only

    torch.manual_seed(0)
    model = int8_weight_only(MLP().eval())
    x = torch.randn(2, 16)
    _, part, mods = lower_ember(model, (x,))
    assert len(mods) == 1 and not part.reasons
    g = check_payload(mods[0])
    mm = [c for c in g.chain if c.name == "aten._weight_int8pack_mm.default"]
    assert len(mm) == 3
    w = g.values[mm[0].args[1]]
    assert w.datatype == vs.INT8 and w.constant_id >= 0 and len(mm[0].args) == 4
    with torch.no_grad():
        assert torch.allclose(model(x), MLP_ref_int8(model, x), atol=1e-5)


def MLP_ref_int8(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The quantized model computed by hand: dequantized weights, float math."""
    for layer, act in ((model.fc1, True), (model.fc2, True), (model.fc3, False)):
        w = layer.weight_int8.float() * layer.scales[:, None]
        x = x @ w.t() + layer.bias
        if act:
            x = torch.relu(x)
    return x


def _quantize_4bit(model: nn.Module, group_size: int, asymmetric: bool = False) -> nn.Module:
    """Weights to 4 bits per group as ExecuTorch's Vulkan flow quantizes them."""
    from torchao.quantization.granularity import PerGroup
    from torchao.quantization.quant_api import IntxWeightOnlyConfig, MappingType, quantize_
    from torchao.utils import unwrap_tensor_subclass

    config = IntxWeightOnlyConfig(
        weight_dtype=torch.int4, granularity=PerGroup(group_size),
        mapping_type=MappingType.ASYMMETRIC if asymmetric else MappingType.SYMMETRIC)
    quantize_(model, config)
    unwrap_tensor_subclass(model)
    return model


def _dequantized_mlp(base: nn.Module, quantized: nn.Module) -> nn.Module:
    """base in float32 with the quantized model's weights, dequantized."""
    ref = copy.deepcopy(base).float()
    for name, lin in ref.named_modules():
        if isinstance(lin, nn.Linear):
            lin.weight.data = quantized.get_submodule(name).weight.dequantize().float()
    return ref


Q4_CASES = {
    # in, hidden, out, group size, dtype, options
    "f32": (64, 96, 32, 32, torch.float32, {}),
    "f16": (64, 96, 32, 32, torch.float16, {}),
    "padded_depth": (36, 48, 12, 12, torch.float32, {}),
    "force_fp16": (64, 96, 32, 16, torch.float32, {"force_fp16": True}),
}


@pytest.mark.parametrize("case", list(Q4_CASES))
def test_linear_q4gsw_matches_executorch(case: str) -> None:
    """4-bit groupwise weight-only linears (torchao's IntxWeightOnlyConfig):
    ember's partitioner keeps dequantize_affine whole and makes the same
    et_vk.linear_q4gsw calls, repacked constants (4-bit pairs, transposed
    scales) and values as ExecuTorch's, dynamic rows included; the program
    runs in ember and matches eager on the dequantized weights."""
    k, hidden, n, group, dtype, options = Q4_CASES[case]
    torch.manual_seed(3)
    base = nn.Sequential(nn.Linear(k, hidden), nn.ReLU(), nn.Linear(hidden, n, bias=False),
                         nn.Linear(n, n)).eval().to(dtype)
    model = _quantize_4bit(copy.deepcopy(base), group)
    x = torch.randn(5, k).to(dtype)
    dyn = ({0: torch.export.Dim("rows", min=1, max=8)},)
    if dtype == torch.float16 or options.get("force_fp16"):
        # ExecuTorch's reference implementation of linear_q4gsw (its fake
        # tensors give the call's dtype) dequantizes to float32, so in its
        # payload of a float16 model (or with force_fp16) the calls' outputs,
        # and what follows, are float32 tensors; ember's keep float16 (staged
        # as the model's dtype). Everything else is the same.
        _, _, ours = lower_ember(model, (x,), options, dyn)
        refs = lower_reference(model, (x,), options, dyn)
        assert len(ours) == len(refs) == 1
        graphs = [check_payload(m) for m in ours]
        r = read_reference(refs[0].processed_bytes)
        for v in r.values:
            if isinstance(v, vs.VkTensor) and v.constant_id < 0 and v.datatype == vs.FLOAT32:
                v.datatype = vs.FLOAT16
                v.staging_datatype = vs.FLOAT16 if dtype == torch.float16 else vs.FLOAT32
        assert_same_graph(graphs[0], r)
    else:
        graphs = compare(model, (x,), options, dyn)
    names = [c.name for g in graphs for c in g.chain]
    assert names.count("et_vk.linear_q4gsw.default") == 3, names
    if not ember_runtime.has_backend("VulkanBackend"):
        return
    edge, part, _ = lower_ember(model, (x,), options, dyn)
    assert not part.reasons, part.reasons
    method = ember_runtime.Runtime.get().load_program(
        edge.to_executorch().buffer).load_method("forward")
    fp16 = dtype == torch.float16 or options.get("force_fp16")
    rtol, atol = (1e-2, 1e-2) if fp16 else (1e-4, 1e-5)
    for rows in (5, 1, 8):
        xr = torch.randn(rows, k).to(dtype)
        with torch.no_grad():
            expected = _dequantized_mlp(base, model)(xr.float())
        got = method.execute([xr])[0]
        torch.testing.assert_close(got.float(), expected, rtol=rtol, atol=atol)


class _TiedQ4(nn.Module):
    """One linear applied twice (its weight repacked once), to a 3-d input."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.gelu(self.fc(x)))


@pytest.mark.skipif(not ember_runtime.has_backend("VulkanBackend"),
                    reason="no Vulkan device (or ember built without Vulkan)")
def test_linear_q4gsw_shared_weight_3d_input() -> None:
    """A 4-bit weight read by two linears is repacked once and both become
    et_vk.linear_q4gsw; a 3-d input runs through views; the program matches
    eager on the dequantized weights."""
    torch.manual_seed(5)
    base = _TiedQ4().eval()
    model = _quantize_4bit(copy.deepcopy(base), 16)
    x = torch.randn(2, 3, 64)
    edge, part, mods = lower_ember(model, (x,))
    assert not part.reasons, part.reasons
    g = vs.read_payload(mods[0].processed_bytes)[0]
    calls = [c for c in g.chain if c.name == "et_vk.linear_q4gsw.default"]
    assert len(calls) == 2 and calls[0].args[1] == calls[1].args[1]
    assert g.values[calls[0].args[1]].datatype == vs.UINT8
    assert g.values[calls[0].args[1]].dims == [64, 32]
    got = ember_runtime.Runtime.get().load_program(
        edge.to_executorch().buffer).load_method("forward").execute([x])[0]
    with torch.no_grad():
        torch.testing.assert_close(got, _dequantized_mlp(base, model)(x), rtol=1e-4, atol=1e-5)


def test_linear_q4gsw_needs_symmetric_weights() -> None:
    """Weights with zero points (asymmetric) are not fused (the call has no
    zero points, and ExecuTorch's fusion would drop them): ember's partitioner
    leaves dequantize_affine to decompose and the program still matches eager."""
    torch.manual_seed(4)
    base = nn.Sequential(nn.Linear(64, 32), nn.ReLU()).eval()
    model = _quantize_4bit(copy.deepcopy(base), 32, asymmetric=True)
    x = torch.randn(3, 64)
    edge, _, mods = lower_ember(model, (x,))
    names = [c.name for m in mods for c in vs.read_payload(m.processed_bytes)[0].chain]
    assert "et_vk.linear_q4gsw.default" not in names and names, names
    if not ember_runtime.has_backend("VulkanBackend"):
        return
    got = ember_runtime.Runtime.get().load_program(
        edge.to_executorch().buffer).load_method("forward").execute([x])[0]
    with torch.no_grad():
        torch.testing.assert_close(got, _dequantized_mlp(base, model)(x), rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- #
# The portable path and errors
# --------------------------------------------------------------------------- #


class Mixed(nn.Module):
    """A float32 linear (Vulkan), then float64 and 5-d work (portable)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor):
        y = torch.relu(self.fc(x))
        five = torch.sigmoid(y.reshape(1, 2, 2, 2, 2))
        return y.double().sum(), five


def test_unsupported_stays_portable_and_runs() -> None:
    torch.manual_seed(0)
    model, x = Mixed().eval(), torch.randn(2, 8)
    edge, part, mods = lower_ember(model, (x,))
    assert len(mods) == 1
    assert "dtype torch.float64" in " ".join(part.reasons.values())
    assert any("more than 4 dims" in r for r in part.reasons.values())
    # without the linear, nothing is delegated and the portable kernels run it
    ep = torch.export.export(model, (x,))
    prog = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner(
        {"texture_limits": (1, 1, 1), "buffer_limit": 1})]).to_executorch()
    method = ember_runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    got = method.execute([x])
    with torch.no_grad():
        want = model(x)
    for g, w in zip(got, want):
        assert torch.allclose(g, w, atol=1e-5)


@pytest.mark.skipif(not ember_runtime.has_backend("VulkanBackend"),
                    reason="ember's runtime has no VulkanBackend in this build")
def test_mixed_program_runs_with_vulkan() -> None:
    torch.manual_seed(0)
    model, x = Mixed().eval(), torch.randn(2, 8)
    edge, _, _ = lower_ember(model, (x,))
    method = ember_runtime.Runtime.get().load_program(edge.to_executorch().buffer) \
        .load_method("forward")
    got = method.execute([x])
    with torch.no_grad():
        want = model(x)
    for g, w in zip(got, want):
        assert torch.allclose(g.double(), w.double(), rtol=1e-4, atol=1e-4)


def test_sequential_model() -> None:
    """nn.Sequential names its input "input", which a graph copy renames
    ("input_1"); lowering keeps the input's spec and the program runs."""
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(8, 4), nn.ReLU()).eval(), torch.randn(2, 8)
    edge, _, mods = lower_ember(model, (x,))
    assert len(mods) == 1
    (spec,) = edge.exported_program().graph_signature.input_specs
    assert spec.kind.name == "USER_INPUT"
    if ember_runtime.has_backend("VulkanBackend"):
        method = ember_runtime.Runtime.get().load_program(edge.to_executorch().buffer) \
            .load_method("forward")
        with torch.no_grad():
            assert torch.allclose(method.execute([x])[0], model(x), atol=1e-5)


def test_reference_runtime_has_no_vulkan_backend() -> None:
    """Documents why the e2e checks run in ember's runtime only."""
    from executorch.runtime import Runtime

    assert not Runtime.get().backend_registry.is_available("VulkanBackend")


@pytest.mark.parametrize("options, message", [
    ({"force_fp32": True}, "unknown compile option 'force_fp32'"),
    ({"texture_limits": (16, 16)}, "texture_limits must be 3 positive ints"),
    ({"buffer_limit": -1}, "buffer_limit must be a positive int"),
    ({"force_fp16": 1}, "force_fp16 must be True or False"),
    ({"storage_type_override": 7}, "storage_type_override must be one of 0, 1, 2"),
    ({"memory_layout_override": "W"}, "memory_layout_override must be one of"),
    ({"skip_memory_planning": "yes"}, "skip_memory_planning must be True or False"),
])
def test_bad_options(options: dict, message: str) -> None:
    with pytest.raises(ExportError, match=message):
        VulkanPartitioner(options)


def test_payload_reader_rejects_garbage() -> None:
    torch.manual_seed(0)
    _, _, mods = lower_ember(MLP(), (torch.randn(2, 16),))
    payload = mods[0].processed_bytes
    from ember.flatbuffer import FlatbufferError

    for bad in (payload[:20], b"\0" * 4 + b"XX00" + payload[8:], payload[:40],
                payload[:10] + b"\xff\xff\xff\x7f" + payload[14:]):
        with pytest.raises(FlatbufferError):
            vs.read_payload(bad)


def test_coverage_table_is_current() -> None:
    """docs/vulkan.md's operator table is what scripts/vulkan_coverage.py writes now."""
    import importlib.util

    root = os.path.dirname(os.path.dirname(HERE))
    spec = importlib.util.spec_from_file_location(
        "vulkan_coverage", os.path.join(root, "scripts", "vulkan_coverage.py"))
    cov = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cov)
    with open(os.path.join(root, "docs", "vulkan.md")) as f:
        doc = f.read()
    current = doc.split(cov.BEGIN, 1)[1].split(cov.END, 1)[0]
    assert current.strip() == cov.table().strip(), \
        "docs/vulkan.md is stale: run .venv/bin/python scripts/vulkan_coverage.py"


# Registry entries that differ from ExecuTorch's on purpose (docs/vulkan.md).
REGISTRY_DIFFERENCES = {
    # ember takes the int8 weight (ExecuTorch's dtype check refuses it)
    "aten::_weight_int8pack_mm.default": {"dtypes"},
    # start_pos arrives as an int tensor (ExecuTorch's op takes a SymInt)
    "llama::sdpa_with_kv_cache.default": {"dtypes"},
    # only copies that change nothing are taken (and dropped): no storage of their own
    "dim_order_ops::_to_dim_order_copy.default": {"storage"},
    # float64 and 8-bit tensors never enter ember's payloads
    "aten::sym_size.int": {"dtypes"},
    "aten::copy.default": {"dtypes"},
}


def test_registry_matches_executorch() -> None:
    """For every op both registries have: the same dtypes, storage (texture /
    buffer x layouts), >4-d support, weight prepacking and resizing."""
    import importlib.util

    from executorch.backends.vulkan.op_registry import vulkan_supported_ops

    from ember.backends.vulkan.ops import pairs_of

    root = os.path.dirname(os.path.dirname(HERE))
    spec = importlib.util.spec_from_file_location(
        "vulkan_coverage", os.path.join(root, "scripts", "vulkan_coverage.py"))
    cov = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cov)
    ours = cov.ember_ops()
    layouts = {0: "W", 1: "H", 2: "C"}
    compared = 0
    for op, feat in vulkan_supported_ops.items():
        key = cov.key_of(op)
        if key not in ours:
            continue
        mine = ours[key]
        differ = set()
        theirs_dt = set().union(*[set(d) for d in feat.inputs_dtypes.vals])
        if set(mine.dtypes) != theirs_dt:
            differ.add("dtypes")
        reps = feat.inputs_storage.vals
        if len(reps) == 1 and mine.layouts_for is None and mine.pairs_for is None:
            r = reps[0]
            theirs_st = {("T", layouts[int(x)]) for x in r.valid_texture_layouts
                         if int(x) in layouts}
            theirs_st |= {("B", layouts[int(x)]) for x in r.valid_buffer_layouts
                          if int(x) in layouts}
            if pairs_of(mine, None) != theirs_st:
                differ.add("storage")
        for name, a, b in (("highdim", mine.highdim, feat.supports_highdim),
                           ("prepack", mine.prepacks, feat.supports_prepacking),
                           ("resize", mine.resize, feat.supports_resize)):
            if a != b:
                differ.add(name)
        assert differ <= REGISTRY_DIFFERENCES.get(key, set()), (key, differ)
        compared += 1
    assert compared >= 70
