"""Programs whose operators run on the optimized kernels, in libember vs eager.

The optimized library (src/kernels/optimized) overrides add, sub, mul, div,
gelu, where, _softmax, _log_softmax, native_layer_norm, embedding, mm, bmm,
addmm and linear above the portable kernels; the C tests compare each with
its portable twin. Here whole programs go through them: nn.Linear kept
whole (EdgeCompileConfig(preserve_ops=[aten.linear])) passes the
export-time kernel check and runs as aten::linear.out, and a small
transformer block calls the rest, at float32 (the fast paths) and float64
(the portable fallbacks), on one thread and on two.
"""

from __future__ import annotations

from typing import Any, List

import pytest
import torch

import ember.runtime as ember_runtime
from aot_util import export
from ember import EdgeCompileConfig

RTOL = {torch.float32: 1e-5, torch.float64: 1e-7}
ATOL = {torch.float32: 1e-5, torch.float64: 1e-7}


def run(model: torch.nn.Module, args: tuple, threads: int, **edge_kwargs: Any) -> List[Any]:
    prog = export(model, args, **edge_kwargs)
    program = ember_runtime.Runtime.get().load_program(prog.buffer)
    return program, program.load_method("forward", num_threads=threads).execute(list(args))


def assert_close(got: List[Any], want: Any, dtype: torch.dtype) -> None:
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        torch.testing.assert_close(g, w, rtol=RTOL[dtype], atol=ATOL[dtype], msg=f"output {i}")


class Linears(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(33, 70)
        self.b = torch.nn.Linear(70, 17, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(33,), (1, 33), (7, 33), (2, 5, 33), (70, 33)])
@pytest.mark.parametrize("threads", [1, 2])
def test_linear_kept_whole(dtype: torch.dtype, shape: tuple, threads: int) -> None:
    torch.manual_seed(0)
    model = Linears().to(dtype).eval()
    x = torch.randn(*shape, dtype=dtype)
    cfg = EdgeCompileConfig(preserve_ops=[torch.ops.aten.linear.default])
    program, got = run(model, (x,), threads, compile_config=cfg)
    ops = program.metadata("forward").operators
    assert "aten::linear.out" in ops and "aten::addmm.out" not in ops, ops
    with torch.no_grad():
        assert_close(got, model(x), dtype)


class Block(torch.nn.Module):
    """Embedding, layer norm, attention with a causal mask (bmm, where,
    softmax), an MLP with both GELU forms, and a log-softmax head."""

    def __init__(self, vocab: int = 50, dim: int = 48, heads: int = 4) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.ln1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.ln2 = torch.nn.LayerNorm(dim, elementwise_affine=False)
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.heads = heads

    def forward(self, ids: torch.Tensor, bias: torch.Tensor) -> tuple:
        t = ids.shape[1]
        x = self.emb(ids) + bias
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=-1)
        hd = x.shape[-1] // self.heads

        def split(z: torch.Tensor) -> torch.Tensor:
            return z.reshape(-1, t, self.heads, hd).transpose(1, 2).reshape(-1, t, hd)

        s = torch.bmm(split(q), split(k).transpose(1, 2)) / (hd ** 0.5)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        s = torch.where(mask, s, torch.full_like(s, float("-inf")))
        a = torch.bmm(torch.softmax(s, dim=-1), split(v))
        a = a.reshape(-1, self.heads, t, hd).transpose(1, 2).reshape(x.shape)
        x = x + self.proj(a)
        h = self.up(self.ln2(x))
        x = x - self.down(torch.nn.functional.gelu(h) * torch.nn.functional.gelu(h, approximate="tanh"))
        return torch.log_softmax(self.head(x), dim=-1), x / 3.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("t", [1, 9])
@pytest.mark.parametrize("threads", [1, 2])
def test_block(dtype: torch.dtype, t: int, threads: int) -> None:
    torch.manual_seed(1)
    model = Block().to(dtype).eval()
    ids = torch.randint(0, 50, (2, t))
    bias = torch.randn(48, dtype=dtype)
    program, got = run(model, (ids, bias), threads)
    ops = set(program.metadata("forward").operators)
    want = {"aten::embedding.out", "aten::native_layer_norm.out", "aten::bmm.out",
            "aten::where.self_out", "aten::_softmax.out", "aten::gelu.out", "aten::add.out",
            "aten::sub.out", "aten::mul.out", "aten::div.out", "aten::_log_softmax.out"}
    assert want <= ops, want - ops
    assert {"aten::addmm.out", "aten::mm.out"} & ops, ops
    with torch.no_grad():
        assert_close(got, model(ids, bias), dtype)
