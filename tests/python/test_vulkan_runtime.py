"""VulkanBackend: programs lowered by the reference exporter's VulkanPartitioner
run in libember on a Vulkan device (Mesa's lavapipe on the CPU in CI) and
match eager PyTorch.

- Every operator the backend implements, one small model each, with
  broadcasting and several parameter settings; each program is checked to
  really delegate the op (a test must not pass on the portable kernels).
- Whole models (MLP, CNN, attention block) and dynamic shapes across their
  range (the command buffer is recorded once, at the upper bound).
- Corrupted payloads (flipped bytes, bad header sizes) fail with a clean
  error, never a crash.
- nanoGPT, delegated to VulkanBackend, gives the same greedy tokens as the
  portable kernels.
- float16 storage: every operator's model in float16, run with the device's
  16-bit storage and with EMBER_VULKAN_STORAGE=float32 (the widening path of
  devices without it); int8 weight-only linears keep their weights int8 on
  the GPU (a quarter of the widened bytes), with float32 and float16
  activations.
- Every program runs under each shader variant (EMBER_VULKAN_KERNELS:
  simple, one invocation per output block or row; gpu, workgroups that share
  a product's block, a row or an attention head, matvec for few rows and the
  shared-memory tiled product for many; matvec and tiled, every product in
  that one shader), whichever the device would choose.
- Reshapes, squeezes, unsqueezes and clones alias their input (no dispatch)
  where nothing else writes either tensor.
- 4-bit groupwise weight-only linears (et_vk.linear_q4gsw, from torchao's
  IntxWeightOnlyConfig as ExecuTorch's Vulkan flow quantizes them) keep
  their weights packed two to a byte on the GPU and match eager on the
  dequantized weights; corrupted group sizes and scales fail cleanly.

Tolerance: float32 rtol 1e-4, atol 1e-5 (the shaders sum in their own order
and use the device's exp/tanh); float16 rtol 1e-2, atol 1e-2 against eager
float32 on the same float16 weights and inputs (every intermediate tensor is
rounded to float16 on the GPU, ten bits of mantissa, where eager keeps
float32).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import logging
import os
import subprocess
import sys
import warnings
from typing import Any, Callable, List, Sequence

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim
from torch.utils import _pytree as pytree

from conftest import ROOT

ember_runtime = pytest.importorskip("ember.runtime")
pytest.importorskip("executorch.backends.vulkan.partitioner.vulkan_partitioner")

pytestmark = pytest.mark.skipif(not ember_runtime.backend_available("VulkanBackend"),
                                reason="no Vulkan device (or ember built without Vulkan)")

RTOL, ATOL = 1e-4, 1e-5
FP16_RTOL, FP16_ATOL = 1e-2, 1e-2


def lower_with_payloads(model: nn.Module, args: tuple, dynamic_shapes: Any = None) -> tuple:
    """(the lowered edge program, its lowered modules): the reference exporter's
    VulkanPartitioner."""
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
    from executorch.exir import to_edge_transform_and_lower

    logging.disable(logging.INFO)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)
            edge = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner({})])
            mods = [m for _, m in edge.exported_program().graph_module.named_children()
                    if hasattr(m, "processed_bytes")]
            return edge, mods
    finally:
        logging.disable(logging.NOTSET)


def lower(model: nn.Module, args: tuple, dynamic_shapes: Any = None) -> bytes:
    """The program, lowered by the reference exporter's VulkanPartitioner."""
    edge, _ = lower_with_payloads(model, args, dynamic_shapes)
    logging.disable(logging.INFO)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return edge.to_executorch().buffer
    finally:
        logging.disable(logging.NOTSET)


# The shader variants (EMBER_VULKAN_KERNELS); every program runs under each,
# and "staged" (EMBER_VULKAN_MEMORY=staged: device memory the host does not
# map, inputs, outputs and weights copied) under the device's own variant.
KERNELS = ("simple", "gpu", "matvec", "tiled", "staged")


@contextlib.contextmanager
def env(name: str, value: Any):
    """Environment variable name set to value (None: unset) while delegates
    load (VulkanBackend reads its variables at init)."""
    old = os.environ.pop(name, None)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)
        if old is not None:
            os.environ[name] = old


def kernels(value: Any):
    """EMBER_VULKAN_KERNELS set to value (None: unset) while delegates load."""
    return env("EMBER_VULKAN_KERNELS", value)


def load_forward(buffer: bytes, variant: Any = None, **kwargs: Any) -> Any:
    """The program's forward, its delegates loaded under EMBER_VULKAN_KERNELS=variant
    (variant "staged": EMBER_VULKAN_MEMORY=staged instead)."""
    staged = variant == "staged"
    with kernels(None if staged else variant), env("EMBER_VULKAN_MEMORY", "staged" if staged else None):
        return ember_runtime.Runtime.get().load_program(buffer).load_method("forward", **kwargs)


def check(model: nn.Module, example: tuple, runs: Sequence[tuple] = (), dynamic_shapes: Any = None,
          portable_ops: Sequence[str] = ()) -> bytes:
    """Lowers model, runs every input tuple in ember under every shader
    variant, compares with eager. portable_ops: operators allowed outside
    the delegate."""
    model = model.eval()
    runs = list(runs) or [example]
    buffer = lower(copy.deepcopy(model), example, dynamic_shapes)
    program = ember_runtime.Runtime.get().load_program(buffer)
    meta = program.metadata("forward")
    assert meta.num_delegates >= 1, "nothing was delegated"
    outside = [op for op in meta.operators if not op.startswith(tuple(portable_ops))]
    assert not outside, f"left outside the delegate: {outside}"
    expected_runs = []
    for args in runs:
        with torch.no_grad():
            expected_runs.append(pytree.tree_leaves(model(*[a.clone() for a in args])))
    for variant in KERNELS:
        method = load_forward(buffer, variant)
        for args, expected in zip(runs, expected_runs):
            got = method.execute([a.clone() for a in args])
            assert len(got) == len(expected)
            for i, (g, e) in enumerate(zip(got, expected)):
                where = f"{variant} shaders, output {i} for inputs {[tuple(a.shape) for a in args]}"
                assert g.shape == e.shape, f"{where}: {tuple(g.shape)} != {tuple(e.shape)}"
                if e.dtype.is_floating_point:
                    torch.testing.assert_close(g, e, rtol=RTOL, atol=ATOL, msg=where)
                else:
                    assert torch.equal(g, e), where
    return buffer


class Fn(nn.Module):
    """A module around a function (tensors passed in become parameters)."""

    def __init__(self, fn: Callable[..., Any], **params: Any) -> None:
        super().__init__()
        self.fn = fn
        for k, v in params.items():
            if isinstance(v, nn.Module):
                self.add_module(k, v)
            else:
                self.register_parameter(k, nn.Parameter(v, requires_grad=False))

    def forward(self, *args: Any) -> Any:
        return self.fn(self, *args)


def setup_module() -> None:
    torch.manual_seed(0)


def r(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


# ---------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------

UNARY = {
    "relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp,
    "neg": torch.neg, "abs": torch.abs, "hardswish": F.hardswish, "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "hardtanh": F.hardtanh,
    "relu6": F.relu6, "clamp": lambda x: torch.clamp(x, -0.3, 0.7), "sin": torch.sin,
    "cos": torch.cos, "sqrt": lambda x: torch.sqrt(x.abs() + 0.1),
    "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.1),
    # negative bases: integer powers keep their sign (an RMSNorm's x ** 2)
    "square": lambda x: x.pow(2), "cube": lambda x: x ** 3, "pow_neg": lambda x: x ** -2,
}

BINARY = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (y.abs() + 0.5), "add_alpha": lambda x, y: torch.add(x, y, alpha=2.5),
    "scalar": lambda x, y: (x * 0.5 + 2.0) * y - 1.0, "minimum": torch.minimum,
    "pow": lambda x, y: torch.pow(x.abs() + 0.5, y),
}

# Each test lowers one model that applies many operators (lowering is the
# slow part), returning every result.


def test_unary() -> None:
    check(Fn(lambda s, x: tuple(f(x) for f in UNARY.values())), (r(3, 37),))


def test_binary_with_broadcasting() -> None:
    shapes = [((4, 5), (4, 5)), ((2, 3, 5), (5,)), ((3, 1), (1, 6))]
    check(Fn(lambda s, *xs: tuple(f(xs[2 * k], xs[2 * k + 1]) for k in range(3)
                                  for f in BINARY.values())),
          tuple(r(*sh) for pair in shapes for sh in pair))


def test_where_comparisons_and_products() -> None:
    check(Fn(lambda s, x, y, a, b, c, d, bias: (
        torch.where(x > y, x, y * 2), torch.where(x <= 0.1, x, y + 1),
        s.lin(a), s.lin_nobias(a[0]), a @ b, torch.bmm(c, d),
        torch.addmm(bias, a[0], b, beta=0.5, alpha=2.0)),
        lin=nn.Linear(7, 9), lin_nobias=nn.Linear(7, 5, bias=False)),
        (r(4, 6), r(4, 6), r(3, 5, 7), r(7, 6), r(3, 4, 5), r(3, 5, 6), r(6)))


def test_softmax_layer_norm_embedding() -> None:
    emb = nn.Embedding(50, 12)
    args = (r(3, 5, 17), r(3, 4, 6), torch.randint(0, 50, (2, 7)))
    buffer = check(Fn(lambda s, x, y, i: tuple(F.softmax(x, d) for d in (-1, 0, 1))
                      + tuple(F.log_softmax(x, d) for d in (-1, 1))
                      + (s.ln(x), s.ln2(y), s.emb(i)),
                      ln=nn.LayerNorm(17), ln2=nn.LayerNorm([4, 6], elementwise_affine=False),
                      emb=emb), args)
    # an index outside the table: a clean error naming the operator, and the
    # method still runs afterwards
    method = ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
    bad = args[2].clone()
    bad[1, 3] = 50
    with pytest.raises(ember_runtime.EmberError, match="embedding"):
        method.execute([args[0], args[1], bad])
    torch.testing.assert_close(method.execute(list(args))[-1], emb.weight.detach()[args[2]])


def test_data_movement() -> None:
    check(Fn(lambda s, x: (
        (x * 2).view(6, 10) + 1, (x * 2).permute(2, 0, 1) + 1,
        torch.cat([x * 2, x + 1, x], dim=1), (x * 2)[:, 1:4, ::2] + 1,
        (x * 2)[1] + 1, (x * 2)[:, 2] + 1, (x * 2).unsqueeze(1) + 1,
        *[t * 3 for t in torch.split(x * 2, [1, 4], dim=2)], (x[0] * 2).t() + 1,
        (x[:, :1, :] * 2).expand(3, 4, 5) + 1)), (r(3, 4, 5),))


def test_conv_pool_batch_norm() -> None:
    convs = nn.ModuleList([nn.Conv2d(6, 12, 3, stride=s_, padding=p, dilation=d, groups=g)
                           for g, s_, p, d in [(1, 1, 1, 1), (3, 2, 0, 1), (1, 2, 2, 1),
                                               (6, 1, 1, 1)]])
    seq = nn.Sequential(nn.Conv2d(6, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 1),
                        nn.Hardtanh(0, 6), nn.Hardswish()).eval()
    with torch.no_grad():
        seq[1].running_mean.uniform_(-0.5, 0.5)
        seq[1].running_var.uniform_(0.5, 1.5)
    check(Fn(lambda s, x: tuple(c(x) for c in s.convs) + (
        s.seq(x), F.max_pool2d(x, 2), F.max_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 2),
        F.avg_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        x.mean(dim=[2, 3], keepdim=True) + x.mean(dim=-1, keepdim=True)),
        convs=convs, seq=seq), (r(1, 6, 11, 9),))


def test_transposed_conv_group_norm() -> None:
    """Transposed 2-d convolutions (stride, padding, output padding, groups,
    dilation, no bias, a fused relu) and group norms (affine or not)."""
    convs = nn.ModuleList([nn.ConvTranspose2d(4, 6, 3, stride=s_, padding=p, output_padding=op,
                                              groups=g, dilation=d, bias=b)
                           for s_, p, op, g, d, b in [(1, 0, 0, 1, 1, True), (2, 1, 1, 2, 1, True),
                                                      (3, 2, 2, 1, 2, False),
                                                      (2, 0, 1, 2, 3, True)]])
    check(Fn(lambda s, x: tuple(c(x) for c in s.convs) + (
        torch.relu(s.convs[1](x)), s.gn(x), s.gn1(x), s.gn_plain(x)),
        convs=convs, gn=nn.GroupNorm(2, 4), gn1=nn.GroupNorm(1, 4, eps=1e-3),
        gn_plain=nn.GroupNorm(4, 4, affine=False)), (r(1, 4, 5, 7),))


def test_upsample() -> None:
    """Nearest and bilinear (align_corners both ways), by scale factors
    (integral and not) and by output sizes (up and down)."""
    modes = [dict(mode="nearest"), dict(mode="bilinear", align_corners=False),
             dict(mode="bilinear", align_corners=True)]
    sizes = [dict(scale_factor=2), dict(scale_factor=(1.5, 2.5)), dict(size=(7, 11)),
             dict(size=(3, 4)), dict(size=(1, 1))]
    check(Fn(lambda s, x: tuple(F.interpolate(x, **m, **z) for m in modes for z in sizes)),
          (r(1, 3, 5, 6),))


def test_index_select_gather_index() -> None:
    """index_select on every dim, gather (an index smaller than the input),
    index.Tensor x[i] and x[:, i] with negative indices; an index outside the
    dim is a clean error naming the operator, and the method still runs."""
    x = r(3, 4, 5)
    i = torch.tensor([2, 0, 1, 1])
    j = torch.randint(0, 5, (3, 2, 4))
    k = torch.tensor([-1, 0, 2])
    j1 = torch.randint(0, 4, (2, 4, 5))
    args = (x, i, j, k, j1)
    buffer = check(Fn(lambda s, x, i, j, k, j1: (
        torch.index_select(x, 0, i[:2]), torch.index_select(x, 1, i), torch.index_select(x, 2, i),
        torch.gather(x, 2, j), torch.gather(x, 1, j1), x[k] * 1.0, x[:, k] * 1.0)), args)
    method = ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
    for at, value in ((1, 4), (2, 5), (3, -4)):
        bad = [a.clone() for a in args]
        bad[at][0] = value
        with pytest.raises(ember_runtime.EmberError, match="index"):
            method.execute(bad)
    torch.testing.assert_close(method.execute(list(args))[1], torch.index_select(x, 1, i))


def rope(xq: torch.Tensor, xk: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """Llama's rotary embeddings (the (even, odd) pairs of the head dim)."""
    c = cos.view(1, cos.shape[0], 1, cos.shape[1])
    s = sin.view(1, sin.shape[0], 1, sin.shape[1])

    def rotate(x: torch.Tensor) -> torch.Tensor:
        xr, xi = x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
        return torch.stack([xr * c - xi * s, xr * s + xi * c], dim=-1).flatten(3).type_as(x)

    return rotate(xq), rotate(xk)


def test_rotary_embedding() -> None:
    """The llama rope pattern, which the reference partitioner fuses into
    et_vk.apply_rotary_emb (grouped-query: fewer k heads), prefill and decode."""
    head_dim = 16
    freqs = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(6).float(), freqs)
    model = Fn(lambda s, q, k, c, sn: tuple(t * 2 for t in rope(q, k, c, sn)))
    for t in (6, 1):
        buffer = check(model, (r(1, t, 4, head_dim), r(1, t, 2, head_dim), angles[:t].cos(),
                               angles[:t].sin()))
        assert b"et_vk.apply_rotary_emb.default" in buffer


# ---------------------------------------------------------------------------
# Shapes at the shaders' edges: products with dynamic rows and odd sizes,
# reductions shorter and longer than a workgroup, attention over a KV cache
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("k,n", [(37, 19), (64, 33), (50, 128)])
def test_linear_rows_across_the_variants(k: int, n: int) -> None:
    """One linear with dynamic rows (1 to 70), K and N that are not
    multiples of the shader's 4x4 tiles, and a batch dim folded into the
    rows."""
    class Linears(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin, self.lin_nobias = nn.Linear(k, n), nn.Linear(k, n, bias=False)

        def forward(self, x: torch.Tensor) -> tuple:
            return self.lin(x), self.lin_nobias(x[0])

    check(Linears(), (r(2, 3, k),), runs=[(r(2, m, k),) for m in (1, 2, 3, 4, 5, 16, 33, 70)],
          dynamic_shapes=({1: Dim("rows", min=1, max=70)},))


def test_matmul_strides_batches_and_edges() -> None:
    """mm and bmm read a [K, N] operand (unit stride along N, where a
    linear's weight has it along K); bmm runs batches; addmm scales and
    broadcasts its bias."""
    check(Fn(lambda s, a1, b1, a9, b9, c1, d1, c7, d7, bias: (
        a1 @ b1, a9 @ b9, torch.bmm(c1, d1), torch.bmm(c7, d7),
        torch.addmm(bias, a9, b9, beta=0.5, alpha=2.0), torch.addmm(bias, a1, b1))),
        (r(1, 45), r(45, 31), r(9, 45), r(45, 31), r(3, 4, 33), r(3, 33, 65),
         r(2, 37, 20), r(2, 20, 41), r(31)))


def test_reductions_across_workgroup_sizes() -> None:
    """Softmax, log-softmax and layer norm with lines shorter and longer than
    a workgroup (64), along the last dim and along a middle one."""
    check(Fn(lambda s, x, y, z: (
        F.softmax(x, -1), F.log_softmax(x, -1), F.softmax(y, -1), F.softmax(y, 1),
        F.log_softmax(z, 0), s.ln_long(x), s.ln_short(y), s.ln_plain(z)),
        ln_long=nn.LayerNorm(200), ln_short=nn.LayerNorm(7),
        ln_plain=nn.LayerNorm(130, elementwise_affine=False)),
        (r(3, 200) * 4, r(2, 5, 7), r(70, 130)))


def test_gpu_times_in_the_event_tracer() -> None:
    """With an event tracer, every operator of the payload is a delegate event
    (its name, its debug handle, the shaders that ran it as metadata),
    timed on the GPU, in every traced execute; so are the run's GPU span
    ("vulkan.gpu", holding every node's event) and the host's submit and
    wait ("vulkan.submit_wait"), which the GPU's work fits in: no timing is
    asserted, only how the spans nest."""
    from ember.devtools.etdump_reader import parse_etdump

    buffer = lower(nn.Sequential(nn.Linear(24, 40), nn.LayerNorm(40)).eval(), (r(3, 24),),
                   ({0: Dim("rows", min=1, max=16)},))
    # the gpu variant picks the product's shader by its rows: one row runs
    # matvec (matvec_sg where the device has subgroup arithmetic), nine the
    # tiled product
    matvec = b"matvec" if os.environ.get("EMBER_VULKAN_SUBGROUPS") == "off" else None
    for variant, want in (("simple", [b"matmul", b"matmul"]),
                          ("gpu", [matvec, b"matmul_tiled"])):
        method = load_forward(buffer, variant, event_tracer=ember_runtime.EventTracerConfig())
        method.execute([r(1, 24)])
        method.execute([r(9, 24)])
        runs = [run for run in parse_etdump(method.etdump()).run_data if run.name == "forward"]
        assert len(runs) == 2
        shaders = []
        for run in runs:
            events = {e.name: e for e in run.profile_events if e.delegate_debug_id_int >= 0}
            assert {"aten.linear.default", "aten.native_layer_norm.default"} <= set(events)
            for e in events.values():
                assert e.end_time >= e.start_time > 0
            assert events["aten.native_layer_norm.default"].delegate_debug_metadata == b"layer_norm"
            shaders.append(events["aten.linear.default"].delegate_debug_metadata)
            whole = {e.delegate_debug_id_str: e for e in run.profile_events
                     if e.delegate_debug_id_str is not None}
            assert set(whole) == {"vulkan.gpu", "vulkan.submit_wait"}
            gpu, wait = whole["vulkan.gpu"], whole["vulkan.submit_wait"]
            assert gpu.name == "vulkan.gpu" and wait.name == "vulkan.submit_wait"
            assert gpu.start_time == wait.start_time > 0
            for e in events.values():
                assert gpu.start_time <= e.start_time <= e.end_time <= gpu.end_time
            # the GPU's span fits in the host's wait for it; a tenth of slack
            # for a device clock that runs a little apart from the host's
            gpu_ns, wait_ns = gpu.end_time - gpu.start_time, wait.end_time - wait.start_time
            assert 0 < wait_ns and gpu_ns <= 1.1 * wait_ns, (gpu_ns, wait_ns)
        if want[0] is None and shaders[0] in (b"matvec", b"matvec_sg"):
            want[0] = shaders[0]
        assert shaders == want, variant


def test_views_alias_their_input() -> None:
    """Reshapes, squeezes, unsqueezes and clones between products, and the
    copies of weights into the arena (et_vk.prepack), run no dispatch (the
    output shares the input's bytes, so the operator has no GPU-time event),
    and the results still match eager; a view that is the delegate's output
    still works."""
    from ember.devtools.etdump_reader import parse_etdump

    def fn(s, x):
        h = s.a(x).view(2, 3, 4, 8).unsqueeze(0).squeeze(0).reshape(6, 32)
        h = torch.clone(h).flatten()
        return s.b(h.view(6, 32)), h.view(3, 64)

    buffer = check(Fn(fn, a=nn.Linear(16, 32), b=nn.Linear(32, 8)), (r(6, 16),))
    method = load_forward(buffer, event_tracer=ember_runtime.EventTracerConfig())
    method.execute([r(6, 16)])
    names = [e.name for run in parse_etdump(method.etdump()).run_data
             for e in run.profile_events if e.delegate_debug_id_int >= 0]
    assert names.count("aten.linear.default") == 2, names
    assert names.count("et_vk.prepack.default") == 0, names
    views = [n for n in names if "view" in n or "squeeze" in n or "clone" in n]
    assert views == [], names


@pytest.mark.parametrize("n_embd,n_head", [(256, 2), (60, 5)])
def test_kv_cache_attention_matches_portable(n_embd: int, n_head: int) -> None:
    """A GPT with a KV cache in the delegate (head dims 128, the largest, and
    12): prompts in chunks, then decode steps, with cache lengths past the
    attention shader's workgroup size; the logits equal the portable
    program's at every step."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "nanogpt"))
    from export import export_kv
    from model import GPT, GPTConfig

    torch.manual_seed(1)
    model = GPT(GPTConfig(block_size=160, vocab_size=96, n_layer=1, n_head=n_head,
                          n_embd=n_embd)).eval()
    vulkan = export_kv(model, backend="vulkan").buffer
    portable = load_forward(export_kv(model, backend="portable").buffer)
    tokens = torch.randint(0, 96, (1, 160))
    steps = [(0, 10), (10, 60), (70, 1), (71, 1), (72, 57), (129, 1), (130, 1), (159, 1)]
    for variant in KERNELS:
        methods = [load_forward(vulkan, variant), portable]
        for start, count in steps:
            args = [tokens[:, start:start + count], torch.tensor([start], dtype=torch.long)]
            got, want = (m.execute([a.clone() for a in args])[0] for m in methods)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4,
                                       msg=f"{variant} shaders, {count} tokens at {start}")


# ---------------------------------------------------------------------------
# Models and dynamic shapes
# ---------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(),
                                 nn.Linear(32, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softmax(self.net(x), dim=-1)


class Attention(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = F.softmax(q @ k.transpose(-2, -1) * (1.0 / (c // self.heads) ** 0.5), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return x + self.proj(y)


def test_mlp_dynamic_batch() -> None:
    buffer = check(MLP(), (r(4, 16),), [(r(b, 16),) for b in (1, 7, 16, 3, 16)],
                   dynamic_shapes=({0: Dim("B", min=1, max=16)},))
    # above the bound: a clean error, and the method still runs afterwards
    method = ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
    with pytest.raises(ember_runtime.EmberError):
        method.execute([r(17, 16)])
    assert method.execute([r(3, 16)])[0].shape == (3, 8)


def test_attention_dynamic_sequence() -> None:
    check(Attention(), (r(1, 8, 32),), [(r(1, t, 32),) for t in (1, 5, 8, 2)],
          dynamic_shapes=({1: Dim("T", min=1, max=8)},))


# ---------------------------------------------------------------------------
# Corrupted payloads
# ---------------------------------------------------------------------------


def _payload_span(buffer: bytes) -> tuple:
    """(start, end) of the first Vulkan payload: its header's magic is VH00 at +4."""
    at = buffer.find(b"VH00")
    assert at >= 4, "no Vulkan payload in the program"
    start = at - 4
    fb_at = int.from_bytes(buffer[start + 10:start + 14], "little")
    fb_size = int.from_bytes(buffer[start + 14:start + 18], "little")
    return start, start + fb_at + fb_size


def _try_run(buffer: bytes, x: torch.Tensor) -> None:
    try:
        method = ember_runtime.Runtime.get().load_program(bytes(buffer)).load_method("forward")
        method.execute([x])
    except ember_runtime.EmberError as e:
        assert e.message, "an error without a message"


def test_corrupted_payloads_fail_cleanly() -> None:
    torch.manual_seed(1)
    buffer = lower(Attention().eval(), (r(1, 4, 32),))
    start, end = _payload_span(buffer)
    x = r(1, 4, 32)
    # header fields: flatbuffer offset and size, constant offset and size
    for field, value in [(10, 0xFFFFFF00), (14, 0xFFFFFF00), (14, 4), (18, 0xFFFFFFF0),
                         (22, 0xFFFFFFFF)]:
        bad = bytearray(buffer)
        bad[start + field:start + field + 4] = value.to_bytes(4, "little")
        with pytest.raises(ember_runtime.EmberError):
            ember_runtime.Runtime.get().load_program(bytes(bad)).load_method("forward")
    # flipped bytes all over the flatbuffer: a clean error or a run, never a crash
    gen = torch.Generator().manual_seed(0)
    for _ in range(300):
        bad = bytearray(buffer)
        for _ in range(int(torch.randint(1, 4, (1,), generator=gen))):
            at = int(torch.randint(start + 30, end, (1,), generator=gen))
            bad[at] ^= int(torch.randint(1, 256, (1,), generator=gen))
        _try_run(bad, x)


def test_device_name() -> None:
    name = ember_runtime.vulkan_device_name()
    assert isinstance(name, str) and name
    info = ember_runtime.vulkan_info()
    assert info["device"] == name and isinstance(info["float16_storage"], bool)


def test_device_context_lifecycle() -> None:
    """One device context for the process: programs loaded one after another
    make no second Vulkan instance and leave no Vulkan object behind; the
    context cannot be released while a delegate is loaded, and a release
    destroys every object; the next program makes it anew and runs."""
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).eval()
    x = torch.randn(3, 16)
    with torch.no_grad():
        expected = model(x)
    buffer = lower(model, (x,))
    gc.collect()
    before = ember_runtime.vulkan_info()
    idle = before["objects"] - before["pipelines"]
    for _ in range(5):
        method = ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
        torch.testing.assert_close(method.execute([x])[0], expected, rtol=1e-4, atol=1e-5)
        loaded = ember_runtime.vulkan_info()
        assert loaded["delegates"] == before["delegates"] + 1
        assert loaded["objects"] > idle + loaded["pipelines"]
        with pytest.raises(ember_runtime.EmberError) as e:
            ember_runtime.vulkan_device_release()
        assert e.value.status == ember_runtime.Status.INVALID_STATE
        del method
        gc.collect()
        after = ember_runtime.vulkan_info()
        assert after["delegates"] == before["delegates"]
        assert after["objects"] - after["pipelines"] == idle
    assert ember_runtime.vulkan_info()["instances_made"] == before["instances_made"]
    if before["delegates"] == 0:  # nothing else of this process holds a delegate
        ember_runtime.vulkan_device_release()
        released = ember_runtime.vulkan_info()
        assert released["objects"] == 0 and released["pipelines"] == 0
        method = ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
        torch.testing.assert_close(method.execute([x])[0], expected, rtol=1e-4, atol=1e-5)
        assert ember_runtime.vulkan_info()["instances_made"] == before["instances_made"] + 1


# ---------------------------------------------------------------------------
# Storage types: float16 and int8 on the GPU
# ---------------------------------------------------------------------------


def storage(value: Any):
    """EMBER_VULKAN_STORAGE set to value (None: unset) while delegates load."""
    return env("EMBER_VULKAN_STORAGE", value)


def load_measured(buffer: bytes, mode: Any = None, variant: Any = None) -> tuple:
    """(method, weights bytes, arena bytes): the program's forward loaded
    under EMBER_VULKAN_STORAGE=mode and EMBER_VULKAN_KERNELS=variant, and the
    GPU bytes its delegates hold."""
    gc.collect()
    before = ember_runtime.vulkan_info()
    with storage(mode):
        method = load_forward(buffer, variant)
    after = ember_runtime.vulkan_info()
    return (method, after["weights_bytes"] - before["weights_bytes"],
            after["arena_bytes"] - before["arena_bytes"])


def float16_storage() -> bool:
    with storage(None):
        return ember_runtime.vulkan_info()["float16_storage"]


def check_fp16(model: nn.Module, example: tuple, runs: Sequence[tuple] = (),
               dynamic_shapes: Any = None) -> None:
    """model and its float inputs in float16, lowered by the reference
    VulkanPartitioner, run with the device's storage and with every tensor
    widened to float32; both against eager float32 on the same float16
    weights and inputs, within float16 tolerances. With 16-bit storage the
    arena and the weights take fewer bytes than widened."""
    half = lambda args: tuple(a.half() if a.is_floating_point() else a for a in args)
    model16 = copy.deepcopy(model).eval().half()
    reference = copy.deepcopy(model16).float()
    runs = [half(a) for a in (list(runs) or [example])]
    buffer = lower(model16, half(example), dynamic_shapes)
    assert ember_runtime.Runtime.get().load_program(buffer).metadata("forward").num_delegates >= 1
    sizes = {}
    for mode, variant in [(None, v) for v in KERNELS] + [("float32", "simple")]:
        method, weights, arena = load_measured(buffer, mode, variant)
        sizes[mode] = (weights, arena)
        for args in runs:
            with torch.no_grad():
                expected = pytree.tree_leaves(
                    reference(*[a.float() if a.is_floating_point() else a for a in args]))
            got = method.execute([a.clone() for a in args])
            assert len(got) == len(expected)
            for i, (g, e) in enumerate(zip(got, expected)):
                where = (f"storage {mode or 'native'}, {variant} shaders, output {i}, "
                         f"inputs {[tuple(a.shape) for a in args]}")
                assert g.shape == e.shape, where
                if e.dtype.is_floating_point:
                    assert g.dtype == torch.float16, where
                    torch.testing.assert_close(g.float(), e, rtol=FP16_RTOL, atol=FP16_ATOL,
                                               msg=where)
                else:
                    assert torch.equal(g, e), where
    if float16_storage():
        assert sizes[None][1] < sizes["float32"][1], sizes
        assert sizes[None][0] <= sizes["float32"][0], sizes
    else:
        assert sizes[None] == sizes["float32"], sizes


def test_float16_storage_elementwise() -> None:
    shapes = [((4, 5), (4, 5)), ((2, 3, 5), (5,)), ((3, 1), (1, 6))]
    check_fp16(Fn(lambda s, x, *ys: tuple(f(x) for f in UNARY.values()) + tuple(
        f(ys[2 * k], ys[2 * k + 1]) for k in range(3) for f in BINARY.values())),
        (r(3, 37),) + tuple(r(*sh) for pair in shapes for sh in pair))


def test_float16_storage_where_comparisons_and_products() -> None:
    check_fp16(Fn(lambda s, x, y, a, b, c, d, bias: (
        torch.where(x > y, x, y * 2), (x <= 0.1).to(y.dtype) + y, s.lin(a), s.lin_nobias(a[0]),
        a @ b, torch.bmm(c, d), torch.addmm(bias, a[0], b, beta=0.5, alpha=2.0)),
        lin=nn.Linear(7, 9), lin_nobias=nn.Linear(7, 5, bias=False)),
        (r(4, 6), r(4, 6), r(3, 5, 7), r(7, 6), r(3, 4, 5), r(3, 5, 6), r(6)))


def test_float16_storage_softmax_layer_norm_embedding_data_movement() -> None:
    check_fp16(Fn(lambda s, x, y, i, z: tuple(F.softmax(x, d) for d in (-1, 0))
                  + (F.log_softmax(x, -1), s.ln(x), s.ln2(y), s.emb(i),
                     (z * 2).permute(2, 0, 1) + 1, torch.cat([z * 2, z + 1, z], dim=1),
                     (z * 2)[:, 1:4, ::2] + 1, (z * 2)[1] + 1, (z * 2).unsqueeze(1) + 1,
                     *[t * 3 for t in torch.split(z * 2, [1, 4], dim=2)],
                     (z[:, :1, :] * 2).expand(3, 4, 5) + 1, z.sum(dim=-1), z.amax(dim=1)),
                  ln=nn.LayerNorm(17), ln2=nn.LayerNorm([4, 6], elementwise_affine=False),
                  emb=nn.Embedding(50, 12)),
               (r(3, 5, 17), r(3, 4, 6), torch.randint(0, 50, (2, 7)), r(3, 4, 5)))


def test_float16_storage_conv_pool() -> None:
    convs = nn.ModuleList([nn.Conv2d(6, 12, 3, stride=s_, padding=p, groups=g)
                           for g, s_, p in [(1, 1, 1), (3, 2, 0), (6, 1, 1)]])
    seq = nn.Sequential(nn.Conv2d(6, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 1),
                        nn.Hardtanh(0, 6)).eval()
    check_fp16(Fn(lambda s, x: tuple(c(x) for c in s.convs) + (
        s.seq(x), F.max_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 2),
        x.mean(dim=[2, 3], keepdim=True) + x.mean(dim=-1, keepdim=True)),
        convs=convs, seq=seq), (r(1, 6, 11, 9),))


def test_float16_storage_transposed_conv_group_norm_upsample_gather() -> None:
    check_fp16(Fn(lambda s, x, i, j: (
        s.up(x), s.gn(x), F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
        F.interpolate(x, size=(7, 11), mode="nearest"), torch.index_select(x, 1, i),
        torch.gather(x, 3, j)),
        up=nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
        gn=nn.GroupNorm(2, 4)),
        (r(1, 4, 5, 7), torch.tensor([2, 0, 1]), torch.randint(0, 7, (1, 4, 5, 3))))


def test_float16_storage_attention_dynamic_sequence() -> None:
    check_fp16(Attention(), (r(1, 8, 32),), [(r(1, t, 32),) for t in (1, 5, 8)],
               dynamic_shapes=({1: Dim("T", min=1, max=8)},))


def test_float16_storage_corrupted_payloads_fail_cleanly() -> None:
    torch.manual_seed(2)
    x = r(1, 4, 32).half()
    buffer = lower(Attention().eval().half(), (x,))
    start, end = _payload_span(buffer)
    gen = torch.Generator().manual_seed(1)
    for _ in range(150):
        bad = bytearray(buffer)
        for _ in range(int(torch.randint(1, 4, (1,), generator=gen))):
            at = int(torch.randint(start + 30, end, (1,), generator=gen))
            bad[at] ^= int(torch.randint(1, 256, (1,), generator=gen))
        _try_run(bad, x)


# ---------------------------------------------------------------------------
# nanoGPT
# ---------------------------------------------------------------------------


def _ember_llm() -> str:
    env = os.environ.get("EMBER_LLM")
    if env:
        return env if os.path.isabs(env) else os.path.join(ROOT, env)
    for exe in (os.path.join(ROOT, "build", "ember-llm"),
                os.path.join(os.path.dirname(sys.executable), "ember-llm")):
        if os.access(exe, os.X_OK):
            return exe
    pytest.skip("no ember-llm binary")


def test_nanogpt_greedy_tokens_match_portable(tmp_path) -> None:
    """The committed checkpoint, exported as "seq" (dynamic token dim) and
    lowered by the reference VulkanPartitioner: the ops it leaves outside run
    on the portable kernels, the rest in VulkanBackend; the greedy
    continuation equals the one of the portable-only program. The first two
    of its six layers only: the reference lowering costs about 10 s a layer
    (its pattern fusion re-traces each of the two partitions a layer makes),
    and two layers already hand tensors from one layer's delegates to the
    next's (5 delegates; 13 with six layers, at 119 s instead of 68)."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "nanogpt"))
    from export import export_seq
    from model import GPT
    from torch.nn.attention import SDPBackend, sdpa_kernel

    model = GPT.from_checkpoint(os.path.join(ROOT, "examples", "nanogpt", "ckpt.pt")).eval()
    model.crop_block_size(32)
    model.transformer.h = model.transformer.h[:2]
    model.config.n_layer = 2
    block = model.config.block_size
    with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
        buffer = lower(model, (torch.randint(0, 100, (1, block)),),
                       ({1: Dim("token_dim", max=block)},))
    program = ember_runtime.Runtime.get().load_program(buffer)
    meta = program.metadata("forward")
    assert meta.num_delegates >= 1
    # what the partitioner leaves outside: scalars and the mask's any()
    assert set(meta.operators) <= {"aten::scalar_tensor.out", "aten::mul.Scalar_out",
                                   "aten::any.out"}, meta.operators
    vulkan = program.load_method("forward")
    portable = ember_runtime.Runtime.get().load_program(export_seq(model).buffer).load_method("forward")
    for t in (1, 13, block):
        idx = torch.randint(0, model.config.vocab_size, (1, t))
        with torch.no_grad():
            expected = model(idx)[0]
        torch.testing.assert_close(vulkan.execute([idx])[0], expected, rtol=RTOL, atol=ATOL)
    ids_v = ids_p = [1, 2, 3]
    for _ in range(40):  # past the window: it slides
        ids_v = ids_v + [int(vulkan.execute([torch.tensor([ids_v[-block:]])])[0][0, -1].argmax())]
        ids_p = ids_p + [int(portable.execute([torch.tensor([ids_p[-block:]])])[0][0, -1].argmax())]
    assert ids_v == ids_p
    # and ember-llm generates the same continuation from the Vulkan program
    path = tmp_path / "nanogpt_vulkan.pte"
    path.write_bytes(buffer)
    out = subprocess.run([_ember_llm(), "--model", str(path), "--prompt-ids", "1 2 3",
                          "--max-new-tokens", "40", "--temperature", "0"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert [int(t) for t in out.stdout.split()] == ids_p[3:]


@pytest.mark.parametrize("backend", ["vulkan", "vulkan-fp16"])
def test_nanogpt_lowered_by_ember_matches_portable(backend: str) -> None:
    """The same model through ember's own partitioner (one payload for the
    whole seq export; vulkan-fp16: force_fp16): the same greedy tokens as the
    portable program (float16: the logits within float16 tolerance)."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "nanogpt"))
    from export import export_seq
    from model import GPT

    model = GPT.from_checkpoint(os.path.join(ROOT, "examples", "nanogpt", "ckpt.pt")).eval()
    model.crop_block_size(32)
    block = model.config.block_size
    program = ember_runtime.Runtime.get().load_program(export_seq(model, backend=backend).buffer)
    assert program.metadata("forward").num_delegates >= 1
    vulkan = program.load_method("forward")
    portable = ember_runtime.Runtime.get().load_program(export_seq(model).buffer).load_method("forward")
    idx = torch.randint(0, model.config.vocab_size, (1, 19))
    tol = 1e-2 if backend == "vulkan-fp16" else ATOL
    torch.testing.assert_close(vulkan.execute([idx])[0], portable.execute([idx])[0], rtol=tol,
                               atol=max(tol, 1e-4))
    if backend == "vulkan":
        ids_v = ids_p = [1, 2, 3]
        for _ in range(40):
            ids_v = ids_v + [int(vulkan.execute([torch.tensor([ids_v[-block:]])])[0][0, -1].argmax())]
            ids_p = ids_p + [int(portable.execute([torch.tensor([ids_p[-block:]])])[0][0, -1].argmax())]
        assert ids_v == ids_p


@pytest.mark.parametrize("backend", ["vulkan", "vulkan-fp16"])
def test_nanogpt_kv_cache_lowered_by_ember_in_ember_llm(tmp_path, backend: str) -> None:
    """The KV-cache export through ember's partitioner: the caches live in the
    delegate (sdpa_with_kv_cache updates them in place, the start position
    comes in through select_as_symint); ember-llm's greedy tokens, prompt
    then one token at a time, equal the portable program's. vulkan-fp16
    (force_fp16: weights, caches and activations in 16-bit storage where the
    device has it): the committed checkpoint's greedy tokens agree too (its
    top logits are far enough apart for float16 rounding)."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "nanogpt"))
    from export import export_kv
    from model import GPT

    model = GPT.from_checkpoint(os.path.join(ROOT, "examples", "nanogpt", "ckpt.pt")).eval()
    model.crop_block_size(48)
    runs = []
    for name in (backend, "portable"):
        path = tmp_path / f"kv_{name}.pte"
        path.write_bytes(export_kv(model, backend=name).buffer)
        out = subprocess.run([_ember_llm(), "--model", str(path), "--prompt-ids", "5 6 7 8 9",
                              "--max-new-tokens", "40", "--temperature", "0"],
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        runs.append([int(t) for t in out.stdout.split()])
    assert len(runs[0]) == 40 and runs[0] == runs[1]


# ---------------------------------------------------------------------------
# float16
# ---------------------------------------------------------------------------


def test_float16_model_and_force_fp16() -> None:
    """A float16 model (float16 inputs, weights, outputs), and a float32 model
    lowered with force_fp16 (the graph's tensors float16, staged as float32):
    the delegate computes in float32; held to float16 tolerances."""
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
    from executorch.exir import to_edge_transform_and_lower

    torch.manual_seed(3)
    mlp = MLP().eval()
    x = r(5, 16)
    with torch.no_grad():
        expected = mlp(x)
    cases = [(copy.deepcopy(mlp).half(), x.half(), {}), (mlp, x, {"force_fp16": True})]
    for model, inp, options in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = torch.export.export(model, (inp,))
            buffer = to_edge_transform_and_lower(
                ep, partitioner=[VulkanPartitioner(options)]).to_executorch().buffer
        program = ember_runtime.Runtime.get().load_program(buffer)
        assert program.metadata("forward").num_delegates >= 1
        got = program.load_method("forward").execute([inp])[0]
        assert got.dtype == inp.dtype
        torch.testing.assert_close(got.float(), expected, rtol=1e-2, atol=1e-2,
                                   msg=f"options {options}, input {inp.dtype}")


def test_no_vulkan_driver_is_a_clean_error() -> None:
    """With no Vulkan driver (the loader pointed at none), ember-run reports
    that the program needs an unavailable backend: an error, not a crash."""
    exe = os.path.join(os.path.dirname(_ember_llm()), "ember-run")
    if not os.access(exe, os.X_OK):
        pytest.skip("no ember-run binary")
    env = dict(os.environ, VK_ICD_FILENAMES="/nonexistent.json", VK_DRIVER_FILES="/nonexistent.json")
    out = subprocess.run([exe, os.path.join(ROOT, "tests", "fixtures", "vulkan", "attention.pte")],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode > 0, (out.returncode, out.stderr)
    assert "VulkanBackend" in out.stderr, out.stderr


def test_int8_weight_only_linear() -> None:
    """torchao's int8 weight-only linear: the partitioner leaves the int8
    weight's conversion to the portable kernels and delegates the product and
    the per-channel scales."""
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8)).eval()
    quantize_(model, Int8WeightOnlyConfig())
    check(model, (r(3, 64),), portable_ops=("aten::permute_copy", "dim_order_ops::_to_dim_order_copy",
                                            "aten::_to_copy"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_int8_weight_only_lowered_by_ember(dtype: torch.dtype) -> None:
    """ember's int8 weight-only linear (aten._weight_int8pack_mm in the
    payload): the int8 weights stay int8 on the GPU (packed four to a word,
    dequantized in registers by the matmul shader with the per-channel
    scales), with float32 or float16 activations; the same results with every
    tensor widened to float32 (EMBER_VULKAN_STORAGE=float32), whose weights
    take four times the bytes."""
    from ember import to_edge_transform_and_lower
    from ember.backends.vulkan import VulkanPartitioner
    from ember.backends.vulkan.quantize import int8_weight_only

    torch.manual_seed(5)
    model = int8_weight_only(nn.Sequential(nn.Linear(64, 256), nn.ReLU(),
                                           nn.Linear(256, 32)).eval().to(dtype))
    x = r(3, 64).to(dtype)
    with torch.no_grad():
        expected = copy.deepcopy(model).float()(x.float())
    ep = torch.export.export(model, (x,))
    buffer = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner({})]).to_executorch().buffer
    program = ember_runtime.Runtime.get().load_program(buffer)
    meta = program.metadata("forward")
    assert meta.num_delegates >= 1 and not meta.operators, meta.operators
    rtol, atol = (RTOL, ATOL) if dtype == torch.float32 else (FP16_RTOL, FP16_ATOL)
    weights = {}
    for mode, variant in [(None, v) for v in KERNELS] + [("float32", "simple"),
                                                         ("float32", "tiled")]:
        method, weights[mode], _ = load_measured(buffer, mode, variant)
        got = method.execute([x])[0]
        assert got.dtype == dtype
        torch.testing.assert_close(got.float(), expected, rtol=rtol, atol=atol,
                                   msg=f"storage {mode or 'native'}, {variant} shaders")
    int8_bytes = 64 * 256 + 256 * 32
    # widened: 4 bytes an int8 element; packed: 1 (plus scales, biases, alignment)
    assert weights["float32"] >= 4 * int8_bytes, weights
    assert weights[None] < int8_bytes + 4 * (256 + 32) * 2 + 4096, weights


# ---------------------------------------------------------------------------
# 4-bit groupwise weight-only linears (et_vk.linear_q4gsw)
# ---------------------------------------------------------------------------


def quantize_4bit(model: nn.Module, group_size: int) -> nn.Module:
    """model's linears quantized as ExecuTorch's Vulkan flow expects:
    torchao's IntxWeightOnlyConfig, int4 weights, symmetric, per group."""
    from torchao.quantization.granularity import PerGroup
    from torchao.quantization.quant_api import IntxWeightOnlyConfig, quantize_
    from torchao.utils import unwrap_tensor_subclass

    quantize_(model, IntxWeightOnlyConfig(weight_dtype=torch.int4,
                                          granularity=PerGroup(group_size)))
    unwrap_tensor_subclass(model)
    return model


def dequantized(float_model: nn.Module, quantized: nn.Module) -> nn.Module:
    """float_model in float32 with each linear's weight replaced by the
    quantized model's weight, dequantized (what linear_q4gsw multiplies by)."""
    ref = copy.deepcopy(float_model).float()
    for name, lin in ref.named_modules():
        if isinstance(lin, nn.Linear):
            w = quantized.get_submodule(name).weight
            lin.weight.data = w.dequantize().float()
            if lin.bias is not None:
                lin.bias.data = quantized.get_submodule(name).bias.detach().float()
    return ref


Q4_MODELS = {
    # in, hidden, out, group size: groups of 32; depth 36 (rows of 4-bit
    # values padded to 40) in groups of 12
    "k64_g32": (64, 256, 32, 32),
    "k36_g12": (36, 48, 12, 12),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", list(Q4_MODELS))
def test_linear_q4gsw(shape: str, dtype: torch.dtype) -> None:
    """An MLP quantized to 4-bit weights in groups, lowered by ExecuTorch's
    VulkanPartitioner (both linears become et_vk.linear_q4gsw), runs with
    dynamic rows and matches eager float32 on the dequantized weights, with
    the weights packed on the GPU (two 4-bit values a byte, an eighth of
    their float32 bytes) and widened (EMBER_VULKAN_STORAGE=float32, a byte
    a word)."""
    from ember.backends.vulkan import schema as vs

    k, hidden, n, group = Q4_MODELS[shape]
    torch.manual_seed(7)
    base = nn.Sequential(nn.Linear(k, hidden), nn.ReLU(), nn.Linear(hidden, n)).eval().to(dtype)
    model = quantize_4bit(copy.deepcopy(base), group)
    reference = dequantized(base, model)
    edge, mods = lower_with_payloads(model, (r(5, k).to(dtype),),
                                     ({0: Dim("rows", min=1, max=8)},))
    names = [c.name for m in mods for c in vs.read_payload(m.processed_bytes)[0].chain]
    assert names.count("et_vk.linear_q4gsw.default") == 2, names
    buffer = edge.to_executorch().buffer
    meta = ember_runtime.Runtime.get().load_program(buffer).metadata("forward")
    assert meta.num_delegates == 1 and not meta.operators, meta.operators
    rtol, atol = (RTOL, ATOL) if dtype == torch.float32 else (FP16_RTOL, FP16_ATOL)
    weights = {}
    # widened weights read through the same accessors in every shader: the
    # simple and the tiled product cover them
    for mode, variant in [(None, v) for v in KERNELS] + [("float32", "simple"),
                                                         ("float32", "tiled")]:
        method, weights[mode], _ = load_measured(buffer, mode, variant)
        for rows in (5, 1, 8, 3):
            x = r(rows, k).to(dtype)
            with torch.no_grad():
                expected = reference(x.float())
            got = method.execute([x])[0]
            assert got.dtype == dtype and got.shape == (rows, n)
            torch.testing.assert_close(got.float(), expected, rtol=rtol, atol=atol,
                                       msg=f"storage {mode or 'native'}, {variant} shaders, "
                                           f"rows {rows}")
    # packed: [N, K padded to 8 / 2] bytes per weight; the scales [K / group, N]
    # and the biases stay float (padding N to 4 adds nothing here)
    packed = sum(o * (-(-i // 8) * 4) for i, o in ((k, hidden), (hidden, n)))
    float_bytes = 4 * (k * hidden + hidden * n)
    extra = dtype.itemsize * (k // group * hidden + hidden + hidden // group * n + n)
    slack = 6 * 256  # each constant's offset aligned for binding
    assert packed <= float_bytes / 8 + 4 * (hidden + n)
    assert weights[None] <= packed + extra + slack, weights
    if dtype == torch.float32 or float16_storage():
        assert weights["float32"] >= 4 * packed, weights


def _q4gsw_variant(edge, mod, change: Callable[[Any, Any], None]) -> bytes:
    """The program with its payload's first linear_q4gsw call changed by
    change(graph, call)."""
    from ember.backends.vulkan import schema as vs

    g, raw = vs.read_payload(mod.processed_bytes)
    original = mod._processed_bytes
    bad = copy.deepcopy(g)
    change(bad, next(c for c in bad.chain if c.name == "et_vk.linear_q4gsw.default"))
    try:
        mod._processed_bytes = vs.serialize_payload(bad, raw)
        return edge.to_executorch().buffer
    finally:
        mod._processed_bytes = original


def test_linear_q4gsw_bad_payloads() -> None:
    """A group size that does not divide the depth or disagrees with the
    scales, scales or weights of the wrong shape or dtype: a clean error at
    load naming the operator; the unchanged payload runs."""
    torch.manual_seed(8)
    base = nn.Sequential(nn.Linear(64, 96), nn.ReLU(), nn.Linear(96, 32)).eval()
    model = quantize_4bit(copy.deepcopy(base), 32)
    x = r(3, 64)
    edge, mods = lower_with_payloads(model, (x,))
    assert len(mods) == 1

    def value(k: int, **fields: Any) -> Callable[[Any, Any], None]:
        def change(g, call) -> None:
            v = g.values[call.args[k]]
            for name, val in fields.items():
                setattr(v, name, val)
        return change

    ok = _q4gsw_variant(edge, mods[0], lambda g, call: None)
    got = ember_runtime.Runtime.get().load_program(ok).load_method("forward").execute([x])[0]
    with torch.no_grad():
        torch.testing.assert_close(got, dequantized(base, model)(x), rtol=RTOL, atol=ATOL)
    cases = {
        "group size 16 (4 groups, 2 rows of scales)": value(3, int_val=16),
        "group size 0": value(3, int_val=0),
        "group size -32": value(3, int_val=-32),
        "group size 48 (does not divide 64)": value(3, int_val=48),
        "scales [1, 96]": value(2, dims=[1, 96]),
        "scales [2, 100]": value(2, dims=[2, 100]),
        "scales int32": value(2, datatype=3),
        "weight [96, 16] (half its 4-bit values)": value(1, dims=[96, 16]),
        "weight int8": value(1, datatype=2),
        "bias [95]": value(4, dims=[95]),
    }
    for what, change in cases.items():
        bad = _q4gsw_variant(edge, mods[0], change)
        with pytest.raises(ember_runtime.EmberError, match="linear_q4gsw") as info:
            ember_runtime.Runtime.get().load_program(bad).load_method("forward")
        assert info.value.message, what
