"""Quick check of one batch of portable kernels in libember against eager PyTorch.

Ops: acos, acosh, asin, asinh, atanh, cosh, sinh, log10, atan2, fmod (Tensor and
Scalar), pow.Scalar, clamp.Tensor, fill (Scalar and Tensor), empty_strided, prod
(all and dim), var.out, sort (and stable), topk, nonzero, native_dropout, rand,
randn, randperm.

Each case exports a tiny module with ember, checks that the program calls the
kernel under test, runs it in libember through ember.runtime and compares with
eager, over the dtypes PyTorch supports for the op. Tolerances: float32/float64
rtol 1e-5 (atol 1e-6), float16/bfloat16 1e-2, integers and bool exact. The random
kernels are checked for shape, range and distribution, not for torch's values.
To keep the file fast, one module computes an op for every dtype at once.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence, Tuple

import pytest
import torch
from torch.export import Dim

from aot_util import export
from ember import EdgeCompileConfig

ember_runtime = pytest.importorskip("ember.runtime")
EmberError = ember_runtime.EmberError

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
ALL = FLOATS + INTS + [torch.bool]
RTOL = {torch.float32: 1e-5, torch.float64: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}
ATOL = {torch.float32: 1e-6, torch.float64: 1e-6, torch.float16: 1e-2, torch.bfloat16: 1e-2}


class Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)


def run(fn: Callable[..., Any], args: Sequence[torch.Tensor], kernels: Sequence[str],
        preserve: Sequence[Any] = (), allow: Sequence[Any] = (),
        dynamic_shapes: Any = None) -> List[torch.Tensor]:
    """Exports fn, checks its program calls `kernels`, runs it in libember."""
    cfg = EdgeCompileConfig(preserve_ops=list(preserve), _core_aten_ops_exception_list=list(allow))
    prog = export(Fn(fn), tuple(args), dynamic_shapes=dynamic_shapes, compile_config=cfg)
    program = ember_runtime.Runtime.get().load_program(prog.buffer)
    ops = program.metadata("forward").operators
    for k in kernels:
        assert k in ops, f"{k} not in the program's operators {ops}"
    return program.load_method("forward").execute(list(args))


def run_batch(op: Callable[..., Dict[str, torch.Tensor]],
              inputs: Dict[torch.dtype, Sequence[torch.Tensor]], kernels: Sequence[str],
              **kw: Any) -> List[Tuple[str, torch.Tensor, torch.Tensor]]:
    """One module computes op(dtype, *inputs[dtype]) for every dtype; runs it in
    libember and eager. Returns (label, libember result, eager result) triples."""
    dtypes = list(inputs)
    counts = [len(inputs[d]) for d in dtypes]
    labels: List[str] = []

    def fn(*args: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        outs, labels[:], i = [], [], 0
        for d, c in zip(dtypes, counts):
            for name, t in op(d, *args[i:i + c]).items():
                labels.append(f"{name} {d}")
                outs.append(t)
            i += c
        return tuple(outs)

    flat = [t for d in dtypes for t in inputs[d]]
    got = run(fn, flat, kernels, **kw)
    want = fn(*flat)
    assert len(got) == len(want)
    return list(zip(list(labels), got, want))


def check(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    if want.dtype.is_floating_point:
        torch.testing.assert_close(got, want, rtol=RTOL[want.dtype], atol=ATOL[want.dtype],
                                   equal_nan=True, msg=lambda m: f"{what}: {m}")
    else:
        assert torch.equal(got, want), f"{what}: {got} != {want}"


def sample(dtype: torch.dtype, shape=(3, 4), lo: float = -3.0, hi: float = 3.0,
           seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(int(lo), info.min), min(int(hi), info.max) + 1, shape,
                         generator=g).to(dtype)


# ---------------------------------------------------------------------------
# Unary float math
# ---------------------------------------------------------------------------

UNARY = {"acos": torch.acos, "asin": torch.asin, "atanh": torch.atanh, "acosh": torch.acosh,
         "asinh": torch.asinh, "cosh": torch.cosh, "sinh": torch.sinh, "log10": torch.log10}


def unary_input(dtype: torch.dtype) -> torch.Tensor:
    # row 0 inside [-1, 1] (acos, asin, atanh), row 1 in [1, 8] (acosh, log10);
    # the rest of each op's results are NaN outside its domain, as in eager
    if dtype == torch.bool:
        return torch.tensor([[False, True, False], [True, True, False]])
    if not dtype.is_floating_point:
        return torch.tensor([[-1, 0, 1], [2, 5, 8]]).to(dtype) if dtype != torch.uint8 else \
            torch.tensor([[0, 1, 2], [3, 5, 8]], dtype=dtype)
    x = torch.cat([sample(dtype, (1, 6), -0.95, 0.95, seed=1), sample(dtype, (1, 6), 1, 8, seed=2)])
    x[0, :4] = torch.tensor([float("nan"), -1.0, 1.0, -0.0]).to(dtype)  # poles and edges
    x[1, :2] = torch.tensor([float("inf"), float("-inf")]).to(dtype)
    return x


def test_unary() -> None:
    cases = run_batch(lambda d, x: {n: f(x) for n, f in UNARY.items()},
                      {d: [unary_input(d)] for d in ALL}, [f"aten::{n}.out" for n in UNARY])
    for label, got, want in cases:
        check(got, want, label)


# ---------------------------------------------------------------------------
# atan2, fmod, pow.Scalar
# ---------------------------------------------------------------------------

def binary_inputs(dtype: torch.dtype) -> List[torch.Tensor]:
    a = sample(dtype, (3, 4), -9, 9, seed=1)
    b = sample(dtype, (4,), -9, 9, seed=2)  # broadcast over rows
    if not dtype.is_floating_point and dtype != torch.bool:
        b = torch.where(b == 0, torch.ones_like(b), b)  # integer fmod by 0 raises in eager
    if dtype.is_floating_point:
        a[0, 0], b[1] = float("nan"), 0.0
    return [a, b, sample(dtype, (3, 4), 0, 4, seed=3)]


def binary_op(dtype: torch.dtype, x: torch.Tensor, y: torch.Tensor,
              e: torch.Tensor) -> Dict[str, torch.Tensor]:
    out = {"atan2": torch.atan2(x, y), "fmod.Scalar int": torch.fmod(x, 3),
           "fmod.Scalar float": torch.fmod(x, -2.5), "pow.Scalar int": torch.pow(2, e),
           "pow.Scalar float": torch.pow(1.5, e)}
    if dtype != torch.bool:  # PyTorch has no fmod with a bool result
        out["fmod.Tensor"] = torch.fmod(x, y)
    return out


def test_binary() -> None:
    kernels = ["aten::atan2.out", "aten::fmod.Tensor_out", "aten::fmod.Scalar_out",
               "aten::pow.Scalar_out"]
    for label, got, want in run_batch(binary_op, {d: binary_inputs(d) for d in ALL}, kernels):
        check(got, want, label)


def test_pow_scalar_negative_integer_exponents() -> None:
    e = torch.tensor([-3, -2, -1, 0, 1, 2])
    op = lambda d, x: {f"pow({b}, e)": torch.pow(b, x) for b in (2, 1, -1, 0)}
    for label, got, want in run_batch(op, {torch.int64: [e]}, ["aten::pow.Scalar_out"]):
        check(got, want, label)


def test_fmod_integer_division_by_zero_fails() -> None:
    a, b = torch.tensor([3, 4]), torch.tensor([1, 2])
    prog = export(Fn(torch.fmod), (a, b))
    method = ember_runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    with pytest.raises(EmberError, match="division by zero"):
        method.execute([a, torch.tensor([1, 0])])


# ---------------------------------------------------------------------------
# clamp.Tensor, fill, empty_strided
# ---------------------------------------------------------------------------

def clamp_inputs(dtype: torch.dtype) -> List[torch.Tensor]:
    if dtype == torch.bool:
        return [torch.tensor([True, False, True, False]), torch.tensor([False, True, False, True]),
                torch.tensor([True])]
    x = sample(dtype, (3, 4), -9, 9, seed=4)
    lo = sample(dtype, (4,), -5, 0, seed=5)
    hi = sample(dtype, (3, 1), 0, 5, seed=6)
    if dtype.is_floating_point:
        x[0, 0], lo[1], hi[2, 0] = float("nan"), float("nan"), -7.0  # NaN, and min > max
    return [x, lo, hi]


def clamp_op(dtype: torch.dtype, x: torch.Tensor, lo: torch.Tensor,
             hi: torch.Tensor) -> Dict[str, torch.Tensor]:
    out = {"clamp min": torch.clamp(x, min=lo), "clamp max": torch.clamp(x, max=hi)}
    if dtype != torch.bool:  # PyTorch has no bool clamp with both bounds
        out["clamp both"] = torch.clamp(x, lo, hi)
    return out


def test_clamp_tensor() -> None:
    cases = run_batch(clamp_op, {d: clamp_inputs(d) for d in ALL}, ["aten::clamp.Tensor_out"])
    for label, got, want in cases:
        check(got, want, label)
    # an int32 tensor with a 0-dim float bound promotes to float
    i, f = torch.tensor([1, 5, 9], dtype=torch.int32), torch.tensor(4.5)
    op = lambda d, x, y: {"int32 max 0-dim float": torch.clamp(x, max=y)}
    for label, got, want in run_batch(op, {torch.int32: [i, f]}, ["aten::clamp.Tensor_out"]):
        check(got, want, label)


def test_fill() -> None:
    def op(d: torch.dtype, x: torch.Tensor, v: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {"fill.Scalar": torch.ops.aten.fill.Scalar(x, 2.5),
                "fill.Scalar int": torch.ops.aten.fill.Scalar(x, -1 if d != torch.bool else 3),
                "fill.Tensor": torch.ops.aten.fill.Tensor(x, v)}

    inputs = {d: [sample(d, (2, 3), seed=7), torch.tensor(-2.75, dtype=torch.float64)]
              for d in ALL}
    cases = run_batch(op, inputs, ["aten::fill.Scalar_out", "aten::fill.Tensor_out"],
                      preserve=[torch.ops.aten.fill.Scalar, torch.ops.aten.fill.Tensor])
    for label, got, want in cases:
        check(got, want, label)


def test_empty_strided() -> None:
    # the contents of an empty tensor are undefined: fill it before use
    x = torch.randn(2, 3)
    got = run(lambda x: torch.ops.aten.empty_strided.default((2, 3), (3, 1)).fill_(1.0) + x,
              [x], ["aten::empty_strided.out"])
    check(got[0], x + 1, "empty_strided")


# ---------------------------------------------------------------------------
# prod, var.out
# ---------------------------------------------------------------------------

def prod_input(dtype: torch.dtype) -> torch.Tensor:
    x = sample(dtype, (3, 4), -2 if dtype != torch.uint8 else 0, 3, seed=8)
    return x + 0.25 if dtype.is_floating_point else x


def test_prod() -> None:
    op = lambda d, x: {"prod": torch.prod(x), "prod dim 1": torch.prod(x, 1),
                       "prod dim 0 keepdim": torch.prod(x, 0, keepdim=True)}
    cases = run_batch(op, {d: [prod_input(d)] for d in ALL},
                      ["aten::prod.out", "aten::prod.int_out"])
    for label, got, want in cases:
        check(got, want, label)


def test_prod_dtype_and_empty() -> None:
    x = torch.tensor([[100, 100, 100], [3, -2, 7]], dtype=torch.int8)
    op = lambda d, x, e: {"prod dtype int8": torch.prod(x, 1, dtype=torch.int8),
                          "prod dtype float32": torch.prod(x, dtype=torch.float32),
                          "prod of an empty dim": torch.prod(e, 0)}
    cases = run_batch(op, {torch.int8: [x, torch.zeros(0, 3)]},
                      ["aten::prod.int_out", "aten::prod.out"])
    for label, got, want in cases:
        check(got, want, label)


def test_var_out() -> None:
    op = lambda d, x: {"var dim 1": torch.ops.aten.var.dim(x, [1]),
                       "var dim 0 biased keepdim": torch.ops.aten.var.dim(x, [0], False, True),
                       "var all": torch.ops.aten.var.dim(x, None)}
    cases = run_batch(op, {d: [sample(d, (3, 5), seed=9)] for d in FLOATS}, ["aten::var.out"],
                      preserve=[torch.ops.aten.var.dim])
    for label, got, want in cases:
        check(got, want, label)


# ---------------------------------------------------------------------------
# sort, topk
# ---------------------------------------------------------------------------

def with_ties(dtype: torch.dtype, shape=(4, 9), seed: int = 10) -> torch.Tensor:
    x = sample(dtype, shape, -4, 4, seed=seed)
    if dtype.is_floating_point:
        x = x.round()  # ties
        x[0, :4] = torch.tensor([float("nan"), -0.0, 0.0, float("nan")]).to(dtype)
        x[1, :2] = torch.tensor([float("inf"), float("-inf")]).to(dtype)
    return x


def test_sort() -> None:
    def op(d: torch.dtype, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        a = torch.sort(x, stable=True)
        b = torch.sort(x, dim=0, descending=True, stable=True)
        return {"sort values": a[0], "sort indices": a[1], "sort desc dim 0 values": b[0],
                "sort desc dim 0 indices": b[1]}

    cases = run_batch(op, {d: [with_ties(d)] for d in ALL}, ["aten::sort.values_stable"],
                      allow=[torch.ops.aten.sort.stable])
    for label, got, want in cases:
        check(got, want, label)


def test_sort_default_is_stable() -> None:
    x = with_ties(torch.float32, (3, 16))
    got = run(lambda x: tuple(torch.sort(x, descending=True)), [x], ["aten::sort.values"])
    want = torch.sort(x, descending=True, stable=True)
    check(got[0], want[0], "values")
    check(got[1], want[1], "indices")


def test_topk() -> None:
    def op(d: torch.dtype, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        a = torch.topk(x, 3)
        b = torch.topk(x, 2, dim=0, largest=False)
        return {"topk largest values": a[0], "topk largest indices": a[1],
                "topk smallest dim 0 values": b[0], "topk smallest dim 0 indices": b[1]}

    inputs = {d: [with_ties(d)] for d in ALL if d != torch.bool}
    cases = run_batch(op, inputs, ["aten::topk.values"])
    # PyTorch leaves the order of tied indices open: the indices must select the values
    for (label, got, want), (_, got_idx, _) in zip(cases[0::2], cases[1::2]):
        check(got, want, label)
        dtype = got.dtype
        x, dim = inputs[dtype][0], 0 if "dim 0" in label else 1
        assert got_idx.dtype == torch.int64
        check(torch.gather(x, dim, got_idx), got, f"{label}: gathered by the indices")


# ---------------------------------------------------------------------------
# nonzero (data-dependent size)
# ---------------------------------------------------------------------------

def test_nonzero() -> None:
    xs = {}
    for d in ALL:
        x = sample(d, (3, 4), -1, 1, seed=11)
        if d.is_floating_point:
            x[0, 0], x[0, 1] = float("nan"), -0.0
        xs[d] = x
    names = list(xs)
    prog = export(Fn(lambda *a: tuple(torch.nonzero(t) for t in a)), tuple(xs.values()))
    program = ember_runtime.Runtime.get().load_program(prog.buffer)
    assert "aten::nonzero.out" in program.metadata("forward").operators
    method = program.load_method("forward")
    for make in (lambda t: t, torch.zeros_like, torch.ones_like):
        inputs = [make(t) for t in xs.values()]
        for d, got, x in zip(names, method.execute(inputs), inputs):
            check(got, torch.nonzero(x), f"nonzero {d}")


# ---------------------------------------------------------------------------
# Random kernels: distributions, not values
# ---------------------------------------------------------------------------

def test_rand_randn() -> None:
    def fn(*zs: torch.Tensor):
        return tuple(f(100, 200, dtype=z.dtype) + z for z in zs for f in (torch.rand, torch.randn))

    got = run(fn, [torch.zeros(1, dtype=d) for d in FLOATS], ["aten::rand.out", "aten::randn.out"])
    for d, u, n in zip(FLOATS, got[0::2], got[1::2]):
        assert u.shape == (100, 200) and u.dtype == d and n.shape == (100, 200) and n.dtype == d
        u, n = u.double(), n.double()
        assert bool((u >= 0).all()) and bool((u < 1).all()), d
        # 20000 samples: standard errors 0.002 (uniform mean), 0.007 (normal mean)
        assert abs(u.mean().item() - 0.5) < 0.01, d
        assert abs(u.std().item() - (1 / 12) ** 0.5) < 0.01, d
        assert abs(n.mean().item()) < 0.04, d
        assert abs(n.std().item() - 1.0) < 0.03, d
        assert bool(torch.isfinite(n).all()), d


def test_randperm() -> None:
    n, dtypes = 100, FLOATS + INTS

    def fn(*zs: torch.Tensor):
        return tuple(torch.randperm(n, dtype=z.dtype) + z for z in zs)

    got = run(fn, [torch.zeros(1, dtype=d) for d in dtypes], ["aten::randperm.out"])
    for d, p in zip(dtypes, got):
        assert p.dtype == d and p.shape == (n,)
        assert torch.equal(torch.sort(p.long())[0], torch.arange(n)), d
        assert not torch.equal(p.long(), torch.arange(n)), d  # shuffled (1 in 100! otherwise)


def test_native_dropout() -> None:
    p = 0.25

    def fn(*xs: torch.Tensor):
        out = []
        for x in xs:
            out += [*torch.ops.aten.native_dropout(x, p, True),
                    *torch.ops.aten.native_dropout(x, p, False)]
        return tuple(out)

    xs = [sample(d, (100, 100), 1, 3, seed=12) for d in FLOATS]
    got = run(fn, xs, ["aten::native_dropout.out"])
    for i, (d, x) in enumerate(zip(FLOATS, xs)):
        out, mask, e_out, e_mask = got[4 * i:4 * i + 4]
        assert mask.dtype == torch.bool and mask.shape == x.shape
        kept = mask.double().mean().item()
        assert abs(kept - (1 - p)) < 0.025, d  # 10000 draws: 5 standard errors
        check(out, torch.where(mask, x / (1 - p), torch.zeros_like(x)), f"dropout {d}")
        check(e_out, x, f"dropout eval {d}")
        assert bool(e_mask.all()), d


def test_dynamic_shape_unary_and_sort() -> None:
    """The same method at two sizes within its bound (outputs resized at execute)."""
    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return (torch.asin(x), *torch.sort(x, dim=0))

    x = torch.rand(8, 6) * 2 - 1
    prog = export(M(), (x,), dynamic_shapes=({0: Dim("n", min=1, max=8)},))
    method = ember_runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    for rows in (8, 3):
        inp = x[:rows].contiguous()
        got = method.execute([inp])
        want = (torch.asin(inp), *torch.sort(inp, dim=0, stable=True))
        for g, w in zip(got, want):
            check(g, w, f"rows {rows}")
