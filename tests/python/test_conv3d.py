"""3-d convolution in the portable kernels, against eager.

- One-op programs over shapes that catch indexing mistakes (odd sizes, kernel
  larger than the stride, dilation, groups up to depthwise, padding larger
  than half the kernel, depth 1, batches, channels-last-3d inputs), plain and
  transposed (output_padding, groups), exported by ember and by the
  reference exporter, run in libember; float64, float16, bfloat16 and int64
  on three of them (tests/c/kernels/test_conv_nd.c covers the other integer
  types, which eager has no convolution for).
- Whole 3-d models (aot_models.CNN3d, Residual3d) exported by the reference
  exporter and run in libember (test_zoo runs ember's export of them).
- The XNNPACK partitioners (ember's and the reference's) leave a 3-d
  convolution on the portable kernels and delegate what is around it.
- The operator coverage report counts convolution, whose samples include 3-d.

Tolerances: float32 rtol 1e-5 (atol 1e-5: sums of up to a few hundred terms
in another order), float64 1e-10, float16 / bfloat16 ~1e-2 relative to the
sum's size, integers exact.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from aot_models import CNN3d, Residual3d
from aot_util import assert_matches, read_program, reference_export
from ember import ExecutorchBackendConfig, to_edge

ember_runtime = pytest.importorskip("ember.runtime")

TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-10),
       torch.float16: (1e-2, 2e-2), torch.bfloat16: (2e-2, 8e-2)}


class Conv(nn.Module):
    """One F.conv3d / F.conv_transpose3d call with fixed parameters."""

    def __init__(self, transposed: bool, **kw: Any) -> None:
        super().__init__()
        self.transposed, self.kw = transposed, kw

    def forward(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        fn = F.conv_transpose3d if self.transposed else F.conv3d
        return fn(x, w, b, **self.kw)


# (name, transposed, input shape, C_out, kernel, parameters)
CASES: List[tuple] = [
    ("odd_3x3x3_pad", False, (1, 3, 5, 7, 6), 4, (3, 3, 3), dict(padding=1)),
    ("stride_lt_kernel_batch2", False, (2, 2, 7, 9, 8), 3, (3, 2, 3),
     dict(stride=(2, 1, 2), padding=(1, 0, 1))),
    ("dilation_big_padding", False, (1, 2, 6, 5, 7), 2, (2, 3, 2),
     dict(stride=(1, 2, 1), padding=(2, 3, 2), dilation=(2, 2, 3))),
    ("depthwise", False, (2, 4, 5, 6, 5), 4, (3, 3, 3),
     dict(stride=(1, 2, 1), padding=1, groups=4)),
    ("grouped", False, (1, 6, 3, 5, 4), 9, (1, 3, 3), dict(padding=(0, 1, 1), groups=3)),
    ("depth_1", False, (2, 3, 1, 6, 7), 4, (1, 3, 3), dict(padding=(0, 1, 1))),
    ("temporal_3x1x1", False, (2, 4, 5, 3, 4), 5, (3, 1, 1), dict(padding=(1, 0, 0))),
    ("pointwise_grouped", False, (2, 6, 3, 4, 5), 4, (1, 1, 1), dict(groups=2)),
    ("transposed_opad", True, (1, 2, 3, 4, 3), 3, (3, 3, 3),
     dict(stride=2, padding=1, output_padding=(1, 0, 1))),
    ("transposed_groups_dilation", True, (2, 4, 2, 3, 4), 6, (2, 3, 2),
     dict(stride=(2, 1, 3), padding=(0, 1, 1), output_padding=(1, 0, 2), groups=2,
          dilation=(1, 2, 1))),
    ("transposed_depthwise", True, (1, 3, 3, 3, 3), 3, (3, 3, 3),
     dict(stride=(1, 2, 1), padding=(2, 0, 1), output_padding=(0, 1, 0), groups=3,
          dilation=(2, 1, 1))),
]


def _inputs(case: tuple, dtype: torch.dtype, channels_last: bool = False) -> tuple:
    _, transposed, shape, cout, k, kw = case
    g = kw.get("groups", 1)
    cin = shape[1]
    wshape = (cin, cout // g, *k) if transposed else (cout, cin // g, *k)
    if dtype.is_floating_point:
        x, w, b = torch.randn(shape), torch.randn(wshape), torch.randn(cout)
    else:
        x, w, b = (torch.randint(-4, 5, s) for s in (shape, wshape, (cout,)))
    x, w, b = x.to(dtype), w.to(dtype), b.to(dtype)
    if channels_last:
        x = x.to(memory_format=torch.channels_last_3d)
    return x, w, b


def _export(model: nn.Module, args: tuple, by: str) -> bytes:
    if by == "reference":
        return reference_export(model, args)
    ep = torch.export.export(model, args)
    return to_edge(ep).to_executorch(ExecutorchBackendConfig()).buffer


def _expected(model: nn.Module, args: tuple) -> torch.Tensor:
    """Eager's result; half types are computed in float32 and rounded (eager on
    CPU may refuse them, and its own rounding differs from one sum order to
    another anyway)."""
    dt = args[0].dtype
    if dt in (torch.float16, torch.bfloat16):
        return model(*[a.float() for a in args]).to(dt)
    if not dt.is_floating_point:  # eager has no integer convolution on CPU: exact in float64
        return model(*[a.double() for a in args]).round().to(torch.int64).to(dt)
    return model(*args)


def _check(got: torch.Tensor, want: torch.Tensor, where: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (where, got.shape, want.shape)
    if want.dtype.is_floating_point:
        rtol, atol = TOL[want.dtype]
        scale = float(want.abs().max()) if want.numel() else 1.0
        torch.testing.assert_close(got.float(), want.float(), rtol=rtol, atol=atol * max(scale, 1.0),
                                   msg=where)
    else:
        assert torch.equal(got, want), where


class Convs(nn.Module):
    """Several cases in one program (one export instead of one per case):
    inputs (x, w, b) per case, one output per case."""

    def __init__(self, cases: List[tuple]) -> None:
        super().__init__()
        self.convs = nn.ModuleList(Conv(c[1], **c[5]) for c in cases)

    def forward(self, *flat: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        return tuple(c(*flat[3 * i:3 * i + 3]) for i, c in enumerate(self.convs))


def _check_cases(cases: List[tuple], dtype: torch.dtype, by: str, channels_last: bool = False,
                 runs: int = 2) -> None:
    """Exports the cases as one program (by ember or the reference exporter),
    runs it in libember on `runs` sets of inputs and compares every output."""
    model = Convs(cases)
    args = tuple(t for c in cases for t in _inputs(c, dtype, channels_last))
    program = ember_runtime.Runtime.get().load_program(_export(model, args, by))
    if channels_last:
        orders = [i.dim_order for i in program.metadata("forward").inputs[::3]]
        assert orders == [(0, 2, 3, 4, 1)] * len(cases), orders
    method = program.load_method("forward")
    for run in range(runs):
        if run > 0:
            args = tuple(t for c in cases for t in _inputs(c, dtype, channels_last))
        got = method.execute(list(args))
        for i, c in enumerate(cases):
            with torch.no_grad():
                want = _expected(model.convs[i], args[3 * i:3 * i + 3])
            _check(got[i], want, f"{c[0]}, {dtype}, exported by {by}, run {run}")


@pytest.mark.parametrize("by", ["ember", "reference"])
def test_conv3d_float32(by: str) -> None:
    torch.manual_seed(0)
    _check_cases(CASES, torch.float32, by)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16, torch.int64],
                         ids=str)
def test_conv3d_dtypes(dtype: torch.dtype) -> None:
    """The other dtypes torch's convolution takes, on the im2col, depthwise and
    transposed paths (int8 ... int32, which eager refuses, are in the C tests)."""
    torch.manual_seed(1)
    _check_cases([CASES[1], CASES[3], CASES[9]], dtype, "ember", runs=1)


@pytest.mark.parametrize("by", ["ember", "reference"])
def test_conv3d_channels_last_3d_input(by: str) -> None:
    """Channels-last-3d inputs (stored as [N, D, H, W, C]): eager writes
    channels-last-3d results, and so does the program."""
    torch.manual_seed(2)
    _check_cases([CASES[0], CASES[3], CASES[4], CASES[9]], torch.float32, by, channels_last=True)


def test_permuted_input_into_conv3d() -> None:
    """x.permute(0, 4, 1, 2, 3) of a [N, D, H, W, C] input: the convolution reads
    the permuted strides (or the copy the exporter puts in front)."""

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv3d(4, 5, 3, padding=(1, 2, 0), stride=(2, 1, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(x.permute(0, 4, 1, 2, 3))

    torch.manual_seed(3)
    m = M().eval()
    x = torch.randn(2, 5, 6, 7, 4)
    for by in ("ember", "reference"):
        method = ember_runtime.Runtime.get().load_program(_export(m, (x,), by)).load_method(
            "forward")
        with torch.no_grad():
            want = m(x)
        _check(method.execute([x])[0], want, f"permuted input, by {by}")


# ---------------------------------------------------------------------------
# Whole models exported by the reference exporter, run in libember
# ---------------------------------------------------------------------------

MODELS: Dict[str, tuple] = {
    "cnn3d": (CNN3d, (2, 3, 5, 12, 12)),
    "residual3d_2plus1d": (Residual3d, (2, 3, 8, 16, 16)),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_reference_export_of_3d_models_runs_in_ember(name: str) -> None:
    torch.manual_seed(4)
    cls, shape = MODELS[name]
    m = cls().eval()
    buffer = reference_export(m, (torch.randn(shape),))
    ops = {f"{o.name}.{o.overload}" for p in read_program(buffer).execution_plan
           for o in p.operators}
    assert "aten::convolution.out" in ops, ops
    method = ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
    eager = copy.deepcopy(m)
    for _ in range(2):
        x = torch.randn(shape)
        with torch.no_grad():
            expected = eager(x)
        assert_matches(method.execute([x]), expected)


# ---------------------------------------------------------------------------
# XNNPACK: a 3-d convolution stays on the portable kernels
# ---------------------------------------------------------------------------


class Conv3dHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(3, 6, 3, padding=1)
        self.fc = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        return self.fc(y.mean(dim=(2, 3, 4)))


@pytest.mark.parametrize("by", ["ember", "reference"])
def test_xnnpack_leaves_conv3d_portable(by: str) -> None:
    pytest.importorskip("executorch.backends.xnnpack")
    from test_xnnpack_compat import lower

    torch.manual_seed(5)
    m = Conv3dHead().eval()
    x = torch.randn(2, 3, 4, 5, 6)
    buffer = lower(copy.deepcopy(m), (x,), None, by)
    program = ember_runtime.Runtime.get().load_program(buffer)
    meta = program.metadata("forward")
    assert "aten::convolution.out" in meta.operators, meta.operators
    assert meta.num_delegates >= 1, f"{by}: the linear head was not delegated"
    with torch.no_grad():
        want = m(x)
    got = program.load_method("forward").execute([x])
    torch.testing.assert_close(got[0], want, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------
# Coverage report
# ---------------------------------------------------------------------------


def test_coverage_lists_convolution_as_implemented() -> None:
    from ember import ops_coverage

    entry = next(e for e in ops_coverage.core_ops() if e.name == "aten.convolution.default")
    assert entry.kernel_keys == ("aten::convolution.out",) and entry.implemented
