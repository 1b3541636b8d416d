"""avg_pool1d and adaptive_avg_pool1d: kept whole at export, run in libember, vs eager."""

from __future__ import annotations

import pytest
import torch

import ember.runtime as rt
from aot_util import export
from ember import EdgeCompileConfig

aten = torch.ops.aten
TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-12),
       torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}


class Pools(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        return (aten.avg_pool1d.default(x, [3], [2], [1], False, True),
                aten.avg_pool1d.default(x, [4], [3], [2], True, False),
                aten.avg_pool1d.default(x, [2]))


class Adaptive(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        return (aten.adaptive_avg_pool1d.default(x, [4]), aten.adaptive_avg_pool1d.default(x, [7]))


def _run(model: torch.nn.Module, x: torch.Tensor, preserve, key: str):
    prog = export(model, (x,), compile_config=EdgeCompileConfig(preserve_ops=preserve))
    meta = rt.Runtime.get().load_program(prog.buffer).metadata("forward")
    assert key in meta.operators
    return rt.Runtime.get().load_program(prog.buffer).load_method("forward").execute([x])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16,
                                   torch.bfloat16, torch.int64])
@pytest.mark.parametrize("shape", [(2, 3, 11), (3, 10)])
def test_avg_pool1d(dtype: torch.dtype, shape) -> None:
    x = (torch.randn(shape) * 10).to(dtype)
    got = _run(Pools(), x, [aten.avg_pool1d.default], "aten::avg_pool1d.out")
    for g, w in zip(got, Pools()(x)):
        if dtype.is_floating_point:
            torch.testing.assert_close(g, w, rtol=TOL[dtype][0], atol=TOL[dtype][1])
        else:
            assert torch.equal(g, w)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_adaptive_avg_pool1d(dtype: torch.dtype) -> None:
    x = torch.randn(2, 3, 13).to(dtype)
    got = _run(Adaptive(), x, [aten.adaptive_avg_pool1d.default], "aten::adaptive_avg_pool1d.out")
    for g, w in zip(got, Adaptive()(x)):
        torch.testing.assert_close(g, w, rtol=TOL[dtype][0], atol=TOL[dtype][1])
