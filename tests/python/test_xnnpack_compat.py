"""XNNPACK delegate compatibility, both directions.

Every model is lowered twice, by the reference exporter's XnnpackPartitioner
and by ember's (ember.backends.xnnpack), and each program runs in libember's
XnnpackBackend and in the reference runtime (which runs XNNPACK itself); all
four results must match eager.

- A zoo of whole models (MLP, CNNs, depthwise and residual nets, a transposed
  convolution, attention blocks with a static and a dynamic sequence, nanoGPT).
- Every node type the partitioners emit for float32, one small model each,
  over shapes that cross kernel block sizes (odd sizes, 1, larger), with
  broadcasting and several parameter settings.
- Each program is checked to really delegate the op (a test must not pass on
  the portable kernels).

Tolerance: float32 rtol 1e-4, atol 1e-4 (the products sum in another order
than PyTorch's).
"""

from __future__ import annotations

import copy
from typing import Any, Callable, List, Sequence

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim
from torch.utils import _pytree as pytree

from aot_models import CNN, MLP, AttentionBlock
from test_zoo import BasicBlock, Deconv, DepthwiseSeparable, NanoGPT, ResNetTiny

ember_runtime = pytest.importorskip("ember.runtime")
pytest.importorskip("executorch.backends.xnnpack")

RTOL = ATOL = 1e-4


def lower(model: nn.Module, args: tuple, dynamic_shapes: Any, by: str) -> bytes:
    """The program, lowered by the reference exporter or by ember."""
    ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)
    if by == "reference":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower

        edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
        return edge.to_executorch().buffer
    from ember import to_edge_transform_and_lower
    from ember.backends.xnnpack import XnnpackPartitioner

    edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    return edge.to_executorch().buffer


def check(model: nn.Module, example: tuple, runs: Sequence[tuple], dynamic_shapes: Any = None,
          portable_ops: Sequence[str] = (), reference_leaves: Sequence[str] = ()) -> None:
    """Lowers model both ways; runs every input tuple of each program in ember
    and in the reference runtime; compares with eager. portable_ops: ops
    allowed to stay outside delegates; reference_leaves: ops the reference
    partitioner leaves outside where ember's delegates them."""
    from executorch.runtime import Runtime

    model = model.eval()
    eager = copy.deepcopy(model)
    expected = []
    for args in runs:
        with torch.no_grad():
            expected.append(pytree.tree_leaves(eager(*[a.clone() for a in args])))
    for by in ("reference", "ember"):
        buffer = lower(copy.deepcopy(model), example, dynamic_shapes, by)
        program = ember_runtime.Runtime.get().load_program(buffer)
        meta = program.metadata("forward")
        assert meta.num_delegates >= 1, f"{by}: nothing was delegated"
        allowed = tuple(portable_ops) + (tuple(reference_leaves) if by == "reference" else ())
        outside = [op for op in meta.operators if not op.startswith(allowed)]
        assert not outside, f"{by}: left outside the delegate: {outside}"
        runtimes = {"ember": program.load_method("forward"),
                    "reference runtime": Runtime.get().load_program(buffer).load_method("forward")}
        for name, method in runtimes.items():
            for args, exp in zip(runs, expected):
                got = method.execute([a.clone() for a in args])
                assert len(got) == len(exp)
                for i, (g, e) in enumerate(zip(got, exp)):
                    where = f"lowered by {by}, run by {name}, output {i}"
                    assert g.shape == e.shape, f"{where}: {tuple(g.shape)} != {tuple(e.shape)}"
                    torch.testing.assert_close(g, e, rtol=RTOL, atol=ATOL, msg=where)


class Fn(nn.Module):
    """A module around a function (parameters passed in as modules or tensors)."""

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


# ---------------------------------------------------------------------------
# Whole models
# ---------------------------------------------------------------------------


def setup_module() -> None:
    torch.manual_seed(0)


def test_mlp_and_dynamic_batch() -> None:
    check(MLP(), (torch.randn(4, 16),), [(torch.randn(4, 16),)])
    check(MLP(), (torch.randn(4, 16),), [(torch.randn(b, 16),) for b in (1, 7, 16, 3)],
          dynamic_shapes={"x": {0: Dim("B", min=1, max=16)}})


def test_cnn() -> None:
    check(CNN(), (torch.randn(2, 3, 16, 16),), [(torch.randn(2, 3, 16, 16),)])


def test_depthwise_separable() -> None:
    check(DepthwiseSeparable(), (torch.randn(1, 3, 17, 15),), [(torch.randn(1, 3, 17, 15),)])


def test_residual_net() -> None:
    check(ResNetTiny(), (torch.randn(2, 3, 16, 16),), [(torch.randn(2, 3, 16, 16),)],
          portable_ops=("aten::mean",))


def test_transposed_convolution() -> None:
    check(Deconv(), (torch.randn(1, 4, 5, 5),), [(torch.randn(1, 4, 5, 5),)])


def test_attention_block_static_and_dynamic() -> None:
    # layer norm, the split of q/k/v and the mask's slicing stay portable
    norm = ("aten::", "executorch_prim", "dim_order_ops")
    check(AttentionBlock(), (torch.randn(2, 8, 32),), [(torch.randn(2, 8, 32),)], portable_ops=norm)
    T = Dim("T", min=2, max=AttentionBlock.MAX_T)
    check(AttentionBlock(), (torch.randn(1, 8, 32),),
          [(torch.randn(1, t, 32),) for t in (2, 5, 16, 11)], dynamic_shapes={"x": {1: T}},
          portable_ops=norm)


def test_nanogpt() -> None:
    idx = torch.randint(0, 64, (1, 12))
    check(NanoGPT(), (idx,), [(idx,), (torch.randint(0, 64, (1, 12)),)],
          portable_ops=("aten::", "executorch_prim", "dim_order_ops"))


class MobileBlocks(nn.Module):
    """MobileNetV3 / EfficientNet pieces: a 3-channel stem, inverted residuals
    with 3x3 and 5x5 depthwise convolutions at strides 1 and 2, squeeze-excite
    (mean, 1x1 convolutions, hardsigmoid or sigmoid, a product broadcast over
    H and W), hardswish and SiLU, then a late 3x3 layer of few pixels and many
    channels (its work split by channels across threads)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1)
        self.expand = nn.Conv2d(16, 40, 1)
        self.dw5 = nn.Conv2d(40, 40, 5, 2, 2, groups=40)
        self.se_a, self.se_b = nn.Conv2d(40, 12, 1), nn.Conv2d(12, 40, 1)
        self.project = nn.Conv2d(40, 24, 1)
        self.dw3 = nn.Conv2d(24, 24, 3, 1, 1, groups=24)
        self.se_c, self.se_d = nn.Conv2d(24, 8, 1), nn.Conv2d(8, 24, 1)
        self.late = nn.Conv2d(24, 200, 3, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.hardswish(self.stem(x))
        y = F.hardswish(self.dw5(F.hardswish(self.expand(x))))
        s = F.hardsigmoid(self.se_b(F.relu(self.se_a(y.mean((2, 3), keepdim=True)))))
        x = self.project(y * s)
        y = F.silu(self.dw3(x))
        s = torch.sigmoid(self.se_d(F.silu(self.se_c(y.mean((2, 3), keepdim=True)))))
        return F.relu(self.late(x + y * s))


def test_mobile_blocks_on_one_and_two_threads() -> None:
    model, x = MobileBlocks().eval(), torch.randn(1, 3, 29, 27)
    check(model, (x,), [(x,)], portable_ops=("aten::mean", "aten::hardsigmoid"),
          reference_leaves=("aten::", "dim_order_ops::"))
    with torch.no_grad():
        want = model(x)
    program = ember_runtime.Runtime.get().load_program(lower(model, (x,), None, "ember"))
    got = program.load_method("forward", num_threads=2).execute([x])[0]
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)


class ChannelsLastShapes(nn.Module):
    """Shape ops between convolutions, as SqueezeNet, ShuffleNet and ConvNeXt
    write them: a fire module's concatenation along channels, a pad, a slice
    and a channel split, a permute to channels-last for a linear layer and
    back (ConvNeXt's block), and a permute that swaps H and W."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1)
        self.e1, self.e3 = nn.Conv2d(8, 6, 1), nn.Conv2d(8, 5, 3, 1, 1)
        self.after_cat = nn.Conv2d(11, 10, 3, 1, 1)
        self.after_pad = nn.Conv2d(10, 12, 1)
        self.left, self.right = nn.Conv2d(5, 5, 1), nn.Conv2d(7, 7, 3, 1, 1, groups=7)
        self.mlp = nn.Linear(12, 12)
        self.last = nn.Conv2d(12, 4, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem(x))
        x = self.after_cat(torch.cat([F.relu(self.e1(x)), F.relu(self.e3(x))], 1))
        x = self.after_pad(F.pad(x, (1, 2, 0, 3)))
        a, b = x[:, :5], x[:, 5:, 1:]
        x = torch.cat([self.left(a[:, :, 1:]), self.right(b)], 1)
        x = x + self.mlp(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return self.last(x.permute(0, 1, 3, 2))


def test_shape_ops_between_convolutions_stay_channels_last() -> None:
    """Concatenate, pad, slice and permute run on channels-last values where
    their operands are, so ember's lowering transposes only at its edges and
    for the one permute that moves data (ExecuTorch's writes more)."""
    from test_xnnpack_quantized_coverage import nodes

    model, x = ChannelsLastShapes().eval(), torch.randn(2, 3, 9, 11)
    check(model, (x,), [(x,)], portable_ops=("aten::",), reference_leaves=("aten::",))
    kinds = [k for k, _, _ in nodes(lower(model, (x,), None, "ember"))]
    # the input to channels-last, the H/W swap, the output back
    assert kinds.count("XNNStaticTranspose") == 3, kinds
    assert kinds.count("XNNConcatenate2") == 2, kinds


# ---------------------------------------------------------------------------
# Node types
# ---------------------------------------------------------------------------


_BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
           "div": lambda a, b: a / (b.abs() + 0.5), "minimum": torch.minimum,
           "maximum": torch.maximum}


@pytest.mark.parametrize("shapes", [
    ((3, 5), (3, 5)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((1,), (2, 3)), ((5, 1, 7), (1, 6, 7)),
])
def test_binary_broadcast(shapes: tuple) -> None:
    """Every binary node type on one pair of shapes: one output per op (the
    failing output's index names the op, in _BINARY's order)."""
    a, b = torch.randn(*shapes[0]), torch.randn(*shapes[1])
    fn = lambda m, x, y: tuple(op(x, y) for op in _BINARY.values())
    check(Fn(fn), (a, b), [(a, b), (torch.randn(*shapes[0]), torch.randn(*shapes[1]))],
          portable_ops=("aten::abs", "aten::add"))


_UNARY = {
    "relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp,
    "log": lambda x: torch.log(x.abs() + 0.1), "sqrt": lambda x: torch.sqrt(x.abs()),
    "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.1), "abs": torch.abs, "neg": torch.neg,
    "floor": torch.floor, "ceil": torch.ceil, "square": lambda x: x ** 2,
    "hardswish": F.hardswish, "gelu": F.gelu, "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.7), "clamp": lambda x: x.clamp(-0.3, 0.4),
    "sin": torch.sin, "cos": torch.cos, "softmax": lambda x: x.softmax(-1),
}


@pytest.mark.parametrize("names", [
    ["relu", "sigmoid", "tanh", "exp", "log"], ["sqrt", "rsqrt", "abs", "neg", "floor"],
    ["ceil", "square", "hardswish", "gelu", "leaky_relu"], ["hardtanh", "clamp", "sin", "cos", "softmax"],
])
def test_unary(names: list) -> None:
    """Unary node types, five to a program: output i is names[i] (times 2, so
    that a clamp has a producer to fold into or not)."""
    fns = [_UNARY[n] for n in names]
    x = torch.randn(3, 17, 9) * 2
    check(Fn(lambda m, v: tuple(fn(v) * 2.0 for fn in fns)), (x,), [(x,), (torch.randn(3, 17, 9),)],
          portable_ops=("aten::abs", "aten::add", "aten::mul"))


def test_silu_folds_only_where_its_sigmoid_has_no_other_reader() -> None:
    """x * sigmoid(x) runs as one SiLU pass at init's fusion, clamped where a
    relu follows; a sigmoid that is read again, or multiplied by another
    value, stays as it is."""
    def fn(m: nn.Module, v: torch.Tensor) -> tuple:
        w = v + 1.0
        s = torch.sigmoid(w)
        return F.silu(v), F.relu(v * torch.sigmoid(v)), w * s + s, v * s
    x = torch.randn(2, 9, 37) * 4
    check(Fn(fn), (x,), [(x,), (torch.randn(2, 9, 37) * 4,)])


@pytest.mark.parametrize("cfg", [
    dict(cin=3, cout=8, k=3, stride=1, padding=1, dilation=1, groups=1, hw=(9, 11)),
    dict(cin=4, cout=6, k=1, stride=1, padding=0, dilation=1, groups=1, hw=(7, 5)),
    dict(cin=5, cout=7, k=3, stride=2, padding=0, dilation=1, groups=1, hw=(13, 10)),
    dict(cin=4, cout=8, k=3, stride=1, padding=2, dilation=2, groups=1, hw=(9, 9)),
    dict(cin=6, cout=9, k=3, stride=1, padding=1, dilation=1, groups=3, hw=(8, 7)),
    dict(cin=8, cout=8, k=5, stride=2, padding=2, dilation=1, groups=8, hw=(15, 12)),
    dict(cin=4, cout=8, k=3, stride=1, padding=1, dilation=1, groups=4, hw=(6, 6)),
    dict(cin=3, cout=40, k=3, stride=1, padding=1, dilation=1, groups=1, hw=(17, 17)),
])
def test_conv2d(cfg: dict) -> None:
    conv = nn.Conv2d(cfg["cin"], cfg["cout"], cfg["k"], stride=cfg["stride"], padding=cfg["padding"],
                     dilation=cfg["dilation"], groups=cfg["groups"])
    x = torch.randn(2, cfg["cin"], *cfg["hw"])
    check(Fn(lambda m, v: F.relu(m.conv(v)), conv=conv), (x,), [(x,), (torch.randn(*x.shape),)])


def test_conv1d() -> None:
    conv = nn.Conv1d(5, 7, 3, padding=1)
    x = torch.randn(2, 5, 19)
    check(Fn(lambda m, v: m.conv(v), conv=conv), (x,), [(x,)],
          portable_ops=("aten::view_copy", "aten::squeeze", "aten::unsqueeze"))


@pytest.mark.parametrize("cfg", [
    dict(cin=4, cout=3, k=3, stride=2, padding=1, out_pad=1, groups=1),
    dict(cin=6, cout=4, k=4, stride=2, padding=1, out_pad=0, groups=2),
    dict(cin=3, cout=5, k=3, stride=1, padding=0, out_pad=0, groups=1),
    dict(cin=2, cout=2, k=3, stride=3, padding=1, out_pad=2, groups=1),
])
def test_conv_transpose2d(cfg: dict) -> None:
    deconv = nn.ConvTranspose2d(cfg["cin"], cfg["cout"], cfg["k"], stride=cfg["stride"],
                                padding=cfg["padding"], output_padding=cfg["out_pad"],
                                groups=cfg["groups"])
    x = torch.randn(1, cfg["cin"], 6, 5)
    check(Fn(lambda m, v: m.deconv(v), deconv=deconv), (x,), [(x,), (torch.randn(*x.shape),)])


@pytest.mark.parametrize("cfg", [
    dict(k=2, stride=2, padding=0, dilation=1, ceil=False),
    dict(k=3, stride=2, padding=1, dilation=1, ceil=False),
    dict(k=3, stride=1, padding=1, dilation=2, ceil=False),
    dict(k=3, stride=2, padding=0, dilation=1, ceil=True),
])
def test_max_pool(cfg: dict) -> None:
    x = torch.randn(2, 5, 11, 10)
    fn = lambda m, v: F.max_pool2d(v, cfg["k"], cfg["stride"], cfg["padding"], cfg["dilation"],
                                   ceil_mode=cfg["ceil"])
    check(Fn(fn), (x,), [(x,)])


@pytest.mark.parametrize("cfg", [
    dict(k=2, stride=2, padding=0), dict(k=3, stride=2, padding=1), dict(k=3, stride=1, padding=0),
])
def test_avg_pool(cfg: dict) -> None:
    x = torch.randn(1, 6, 9, 8)
    fn = lambda m, v: F.avg_pool2d(v, cfg["k"], cfg["stride"], cfg["padding"],
                                   count_include_pad=False)
    check(Fn(fn), (x,), [(x,)])


def test_global_average_pool() -> None:
    x = torch.randn(2, 7, 5, 6)
    check(Fn(lambda m, v: v.mean(dim=(2, 3), keepdim=True)), (x,), [(x,)])


@pytest.mark.parametrize("align", [False, True])
def test_upsample_bilinear(align: bool) -> None:
    x = torch.randn(1, 3, 5, 7)
    fn = lambda m, v: F.interpolate(v, size=(9, 12), mode="bilinear", align_corners=align)
    check(Fn(fn), (x,), [(x,)])


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_cat(n: int) -> None:
    xs = tuple(torch.randn(2, 3 + i, 4) for i in range(n))
    check(Fn(lambda m, *v: torch.cat(v, dim=1) * 1.5), xs, [xs], portable_ops=("aten::mul",))


def test_layout_ops() -> None:
    x = torch.randn(2, 5, 6, 3)
    fn = lambda m, v: (F.pad(v, (1, 2, 0, 3)) * 2, v[:, 1:4, :, 1:] + 1, v.permute(0, 3, 1, 2) * 3,
                       v.reshape(2, 90) - 1)
    check(Fn(fn), (x,), [(x,)], portable_ops=("aten::view_copy", "dim_order_ops"))


@pytest.mark.parametrize("shape,perm", [
    ((2, 37, 70), (0, 2, 1)),                 # planes of tiles, partial both ways
    ((1, 29, 13, 35), (0, 2, 3, 1)),          # NCHW -> NHWC
    ((1, 13, 35, 29), (0, 3, 1, 2)),          # NHWC -> NCHW
    ((1, 2, 58, 7, 7), (0, 2, 1, 3, 4)),      # ShuffleNet's channel shuffle
    ((3, 1, 5, 1, 33), (4, 1, 2, 3, 0)),      # dims of size 1
    ((2, 3, 4, 5), (1, 0, 2, 3)),             # whole rows move
    ((2, 3, 4, 5, 6, 7), (5, 3, 1, 4, 2, 0)),
])
def test_permute(shape: tuple, perm: tuple) -> None:
    x = torch.randn(*shape)
    check(Fn(lambda m, v: (v * 1.5).permute(*perm) + 1), (x,), [(x,)],
          reference_leaves=("dim_order_ops::",))


def test_bmm_and_mm() -> None:
    a, b = torch.randn(3, 5, 7), torch.randn(3, 7, 9)
    check(Fn(lambda m, x, y: torch.bmm(x, y)), (a, b), [(a, b)])
    x, w = torch.randn(6, 10), torch.randn(10, 33)
    check(Fn(lambda m, v: torch.mm(v, m.w), w=w), (x,), [(x,)])
    check(Fn(lambda m, v: torch.addmm(m.b, v, m.w), w=w, b=torch.randn(33)), (x,), [(x,)])


def test_linear_with_leading_dims_and_fused_relu() -> None:
    lin = nn.Linear(17, 65)
    x = torch.randn(2, 3, 17)
    check(Fn(lambda m, v: F.relu(m.lin(v)), lin=lin), (x,), [(x,), (torch.randn(2, 3, 17),)])


def test_prelu() -> None:
    prelu = nn.PReLU(4)
    with torch.no_grad():
        prelu.weight.uniform_(0.05, 0.5)
    x = torch.randn(2, 4, 5, 5)
    check(Fn(lambda m, v: m.prelu(v), prelu=prelu), (x,), [(x,)])


def test_unsqueeze_squeeze_and_memory_format_copies() -> None:
    x = torch.randn(2, 6, 5, 4)
    fn = lambda m, v: ((v * 2).unsqueeze(1) + 1,
                       (v[:, :1] * 3).squeeze(1) - 1,
                       (v + 1).to(memory_format=torch.channels_last) * 2,
                       (v.contiguous(memory_format=torch.channels_last) - 2).contiguous() * 4)
    check(Fn(fn), (x,), [(x,)], portable_ops=("aten::view_copy", "aten::slice_copy"),
          reference_leaves=("dim_order_ops", "aten::unsqueeze_copy", "aten::squeeze_copy"))


def test_audio_encoder_with_permuted_layouts() -> None:
    """conv1d -> transpose -> layout-keeping copies -> attention -> linear: values
    with a [0, 2, 1] dim order stay outside the delegates or inside them, never
    cross a delegate's boundary in a layout it cannot state."""
    from aot_models import AudioEncoder

    torch.manual_seed(4)
    feats = torch.randn(2, 8, 32)
    check(AudioEncoder(), (feats,), [(feats,)],
          portable_ops=("aten::", "dim_order_ops::"))
