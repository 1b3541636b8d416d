"""Quick checks of the portable kernels for scatter, views as copies, padding, pooling
(3-d, and 2-d through the shared helper), grid sampling, col2im, distances,
embedding_bag and training-mode batch norm.

Every case is exported with ember and run in libember, then compared with eager
PyTorch, for each dtype PyTorch supports for the op. To stay fast, one program per
dtype holds every case of that dtype (each case's inputs and outputs side by side),
and the test first checks that the program calls each kernel it means to test (ops
that the core decomposition would split up are preserved). Tolerances per dtype:
float32/float64 rtol 1e-5, float16/bfloat16 1e-2, integers and bool exact.
"""

from __future__ import annotations

from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple

import pytest
import torch

from aot_util import kernel_names, read_program
from ember import EdgeCompileConfig, to_edge

ember_runtime = pytest.importorskip("ember.runtime")
EmberError = ember_runtime.EmberError

aten = torch.ops.aten

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
ALL = FLOATS + INTS + [torch.bool]
TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-5, 1e-6),
       torch.float16: (1e-2, 1e-2), torch.bfloat16: (1e-2, 1e-2)}

PAD_OPS = {
    "reflection_pad1d": (aten.reflection_pad1d.default, 1),
    "reflection_pad2d": (aten.reflection_pad2d.default, 2),
    "reflection_pad3d": (aten.reflection_pad3d.default, 3),
    "replication_pad1d": (aten.replication_pad1d.default, 1),
    "replication_pad2d": (aten.replication_pad2d.default, 2),
    "replication_pad3d": (aten.replication_pad3d.default, 3),
}
PRESERVE = [aten.select_scatter.default, aten.col2im.default] + [op for op, _ in PAD_OPS.values()]


class Case(NamedTuple):
    label: str
    kernel: str  # the kernel key the program must call
    fn: Callable[..., Any]
    args: Tuple[torch.Tensor, ...]
    # compare with eager run in float64 on the same inputs, rounded to the dtype: for
    # ops whose eager float16/float32 results carry more rounding error than ours
    ref64: bool = False
    atol32: Optional[float] = None  # float32 atol override (bicubic sums 16 taps)


class Cases(torch.nn.Module):
    """Runs every case on its own slice of the inputs; returns all outputs flat."""

    def __init__(self, cases: Sequence[Case]) -> None:
        super().__init__()
        self.cases = list(cases)

    def forward(self, *xs: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        outs: List[torch.Tensor] = []
        k = 0
        for c in self.cases:
            r = c.fn(*xs[k:k + len(c.args)])
            k += len(c.args)
            outs.extend(r if isinstance(r, (tuple, list)) else [r])
        return tuple(outs)


def load(model: torch.nn.Module, args: tuple):
    ep = torch.export.export(model, args)
    prog = to_edge(ep, compile_config=EdgeCompileConfig(preserve_ops=PRESERVE)).to_executorch()
    method = ember_runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    return prog, method


def check_cases(cases: Sequence[Case]) -> None:
    flat = tuple(a for c in cases for a in c.args)
    prog, method = load(Cases(cases), flat)
    names = set(kernel_names(read_program(prog.buffer).execution_plan[0]))
    missing = sorted({c.kernel for c in cases} - names)
    assert not missing, f"the program does not call {missing}"
    got = method.execute(list(flat))
    k = 0
    for c in cases:
        with torch.no_grad():
            if c.ref64:
                want = c.fn(*(a.double() if a.is_floating_point() else a for a in c.args))
            else:
                want = c.fn(*c.args)
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        if c.ref64:
            want = [w.to(c.args[0].dtype) for w in want]
        for j, w in enumerate(want):
            g = got[k]
            k += 1
            what = f"{c.label} output {j}"
            assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != {w.dtype}"
            assert tuple(g.shape) == tuple(w.shape), f"{what}: shape {g.shape} != {w.shape}"
            if w.dtype.is_floating_point:
                rtol, atol = TOL[w.dtype]
                if w.dtype == torch.float32 and c.atol32 is not None:
                    atol = c.atol32
                torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                           msg=lambda m: f"{what}: {m}")
            else:
                assert torch.equal(g, w), f"{what}: {g} != {w}"
    assert k == len(got)


def make(gen: torch.Generator, shape: Sequence[int], dtype: torch.dtype,
         lo: float = -4, hi: float = 4) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    if dtype == torch.uint8:
        lo = max(lo, 0)
    return torch.randint(int(lo), int(hi) + 1, tuple(shape), generator=gen).to(dtype)


def name(dt: torch.dtype) -> str:
    return str(dt).replace("torch.", "")


# --------------------------------------------------------------------------- #
# Cases by family
# --------------------------------------------------------------------------- #

def scatter_cases(gen: torch.Generator, dt: torch.dtype) -> List[Case]:
    # plain scatter needs distinct targets per line (duplicates have no defined winner)
    idx = torch.stack([torch.randperm(5, generator=gen)[:3] for _ in range(3)])
    value = True if dt == torch.bool else 2
    cases = [
        Case("scatter.src dim 1", "aten::scatter.src_out",
             lambda a, i, s: aten.scatter.src(a, 1, i, s),
             (make(gen, (3, 5), dt), idx, make(gen, (3, 4), dt))),
        Case("scatter.value", "aten::scatter.value_out",
             lambda a, i: aten.scatter.value(a, 1, i, value), (make(gen, (3, 5), dt), idx.clone())),
        Case("scatter.src dim 0", "aten::scatter.src_out",
             lambda a, i, s: aten.scatter.src(a, 0, i, s),
             (make(gen, (3, 5), dt), torch.tensor([[2, 0, 1, 0, 2]]), make(gen, (2, 5), dt))),
        Case("scatter_add", "aten::scatter_add.out",
             lambda a, i, s: aten.scatter_add(a, 0, i, s),
             (make(gen, (4, 3), dt), torch.randint(0, 4, (6, 3), generator=gen),
              make(gen, (6, 3), dt))),
    ]
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        if reduce == "mean" and dt == torch.bool:
            continue  # PyTorch has no mean over bool
        lo, hi = (-2, 2) if reduce == "prod" else (-4, 4)
        for include_self in (True, False):
            cases.append(Case(
                f"scatter_reduce {reduce} include_self={include_self}",
                "aten::scatter_reduce.two_out",
                lambda a, i, s, r=reduce, inc=include_self:
                    aten.scatter_reduce.two(a, 1, i, s, r, include_self=inc),
                (make(gen, (3, 4), dt, lo, hi), torch.randint(0, 4, (3, 6), generator=gen),
                 make(gen, (3, 6), dt, lo, hi))))
    return cases


def movement_cases(gen: torch.Generator, dt: torch.dtype) -> List[Case]:
    cases = [
        Case("slice_scatter step 2", "aten::slice_scatter.out",
             lambda a, s: torch.slice_scatter(a, s, 1, 1, 6, 2),
             (make(gen, (4, 6), dt), make(gen, (4, 3), dt))),
        Case("slice_scatter negative start", "aten::slice_scatter.out",
             lambda a, s: torch.slice_scatter(a, s, 0, -3, None),
             (make(gen, (4, 6), dt), make(gen, (3, 6), dt))),
        Case("select_scatter", "aten::select_scatter.out",
             lambda a, s: torch.select_scatter(a, s, 1, -2),
             (make(gen, (4, 6), dt), make(gen, (4,), dt))),
        Case("masked_scatter", "aten::masked_scatter.out", lambda a, m, s: a.masked_scatter(m, s),
             (make(gen, (3, 4), dt), torch.rand(3, 4, generator=gen) > 0.5, make(gen, (2, 7), dt))),
        Case("masked_scatter broadcast mask", "aten::masked_scatter.out",
             lambda a, m, s: a.masked_scatter(m, s),
             (make(gen, (3, 4), dt), torch.tensor([True, False, True, True]),
              make(gen, (2, 7), dt))),
        Case("as_strided offset", "aten::as_strided_copy.out",
             lambda a: torch.as_strided(a, (2, 3), (1, 3), 2), (make(gen, (3, 4), dt),)),
        Case("as_strided stride 0", "aten::as_strided_copy.out",
             lambda a: torch.as_strided(a, (4, 2), (0, 5)), (make(gen, (3, 4), dt),)),
        Case("diagonal 3-d", "aten::diagonal_copy.out", lambda a: torch.diagonal(a, 1, 2, 0),
             (make(gen, (2, 3, 4), dt),)),
    ]
    for off in (1, -2, 7):
        cases.append(Case(f"diagonal offset {off}", "aten::diagonal_copy.out",
                          lambda a, o=off: torch.diagonal(a, o), (make(gen, (3, 4), dt),)))
    if dt == torch.bool:
        return cases  # PyTorch pads no bool tensors
    shapes = {1: ((2, 3, 5), (2, 3)), 2: ((2, 3, 4, 5), (1, 3, 2, -1)),
              3: ((1, 2, 3, 4, 3), (2, 1, 0, 3, -1, 2))}
    for op_name, (op, k) in PAD_OPS.items():
        shape, pad = shapes[k]
        batched = op_name.startswith("reflection")  # each layout, each op once
        cases.append(Case(f"{op_name} batched={batched}", f"aten::{op_name}.out",
                          lambda a, op=op, pad=pad: op(a, list(pad)),
                          (make(gen, shape if batched else shape[1:], dt),)))
    return cases


def pool_cases(gen: torch.Generator, dt: torch.dtype) -> List[Case]:
    cases: List[Case] = []
    if dt.is_floating_point or dt in INTS:
        x = make(gen, (2, 2, 5, 6, 5), dt)
        cases += [
            Case("max_pool3d", "aten::max_pool3d_with_indices.out",
                 lambda a: aten.max_pool3d_with_indices(a, [2, 3, 2], [2, 2, 1], [1, 1, 0]), (x,)),
            Case("max_pool3d dilated ceil 4-d", "aten::max_pool3d_with_indices.out",
                 lambda a: aten.max_pool3d_with_indices(a, [2, 2, 2], [2, 1, 2], [0, 1, 1],
                                                        [2, 1, 1], True),
                 (make(gen, (3, 5, 6, 5), dt),)),
        ]
        cases.append(Case("max_pool2d (shared helper)", "aten::max_pool2d_with_indices.out",
                          lambda a: aten.max_pool2d_with_indices(a, [3, 2], [2, 1], [1, 0]),
                          (make(gen, (2, 3, 5, 4), dt),)))
    if dt.is_floating_point or dt == torch.int64:
        cases.append(Case("avg_pool2d (shared helper)", "aten::avg_pool2d.out",
                          lambda a: aten.avg_pool2d(a, [3, 2], [2, 1], [1, 1], True, False),
                          (make(gen, (2, 5, 4), dt),)))
    if dt in (torch.float32, torch.float64, torch.int64):
        for include_pad, div in ((True, None), (False, None), (True, 3)):
            cases.append(Case(
                f"avg_pool3d include_pad={include_pad} divisor={div}", "aten::avg_pool3d.out",
                lambda a, inc=include_pad, d=div:
                    aten.avg_pool3d(a, [3, 2, 3], [2, 1, 2], [1, 1, 1], True, inc, d),
                (make(gen, (2, 2, 5, 4, 6), dt),)))
    if dt.is_floating_point:
        cases += [
            Case("adaptive_avg_pool3d", "aten::_adaptive_avg_pool3d.out",
                 lambda a: aten._adaptive_avg_pool3d(a, [2, 3, 4]), (make(gen, (2, 3, 5, 7, 6), dt),)),
            Case("adaptive_avg_pool3d 4-d upsampling", "aten::_adaptive_avg_pool3d.out",
                 lambda a: aten._adaptive_avg_pool3d(a, [3, 1, 5]), (make(gen, (2, 2, 4, 3), dt),)),
            Case("adaptive_avg_pool2d (shared helper)", "aten::_adaptive_avg_pool2d.out",
                 lambda a: aten._adaptive_avg_pool2d(a, [3, 2]), (make(gen, (2, 3, 7, 5), dt),)),
        ]
    return cases


def float_cases(gen: torch.Generator, dt: torch.dtype) -> List[Case]:
    if not dt.is_floating_point:
        return []
    cases: List[Case] = []
    # (interpolation, padding, align_corners): every mode and padding, both alignments
    for mode, pad, align in ((0, 0, False), (0, 1, True), (0, 2, False), (0, 2, True),
                             (1, 0, True), (1, 2, False), (2, 0, False), (2, 1, True),
                             (2, 2, False)):
        # grid points mostly inside [-1, 1], some outside
        grid = make(gen, (2, 3, 4, 2), dt, -1.3, 1.3)
        cases.append(Case(f"grid_sampler_2d mode={mode} padding={pad} align={align}",
                          "aten::grid_sampler_2d.out",
                          lambda a, g, m=mode, p=pad, al=align: aten.grid_sampler_2d(a, g, m, p, al),
                          (make(gen, (2, 3, 4, 5), dt), grid), ref64=True,
                          atol32=1e-5 if mode == 2 else None))
    cases += [
        Case("col2im", "aten::col2im.out",
             lambda a: aten.col2im(a, [5, 6], [2, 3], [1, 1], [1, 0], [2, 1]),
             (make(gen, (2, 3 * 6, 3 * 4), dt),)),
        Case("col2im unbatched dilated", "aten::col2im.out",
             lambda a: aten.col2im(a, [6, 5], [2, 2], [2, 1], [0, 1], [1, 2]),
             (make(gen, (2 * 4, 4 * 3), dt),)),
        Case("batch_norm training", "aten::_native_batch_norm_legit.no_stats_out",
             lambda a, w, b: aten._native_batch_norm_legit.no_stats(a, w, b, True, 0.1, 1e-5),
             (make(gen, (3, 4, 5), dt), make(gen, (4,), dt), make(gen, (4,), dt))),
        Case("batch_norm training no affine", "aten::_native_batch_norm_legit.no_stats_out",
             lambda a: aten._native_batch_norm_legit.no_stats(a, None, None, True, 0.1, 1e-3),
             (make(gen, (2, 3, 2, 3), dt),)),
    ]
    w = make(gen, (7, 3), dt)
    idx = torch.tensor([0, 2, 6, 1, 1, 3, 5, 2])
    # torch plans offset2bag (output 1) for a bfloat16 sum, though its CPU kernel leaves it empty
    keep = (0, 2, 3) if dt == torch.bfloat16 else (0, 1, 2, 3)
    for mode, last, pad in ((0, False, -1), (0, True, 1), (1, False, -1), (1, True, 1),
                            (2, False, 1), (2, True, -1)):
        # an empty bag; with include_last_offset, offsets end with len(indices)
        offsets = torch.tensor([0, 2, 2, 6, 8] if last else [0, 2, 2, 6])
        cases.append(Case(f"embedding_bag mode={mode} last={last} padding_idx={pad}",
                          "aten::_embedding_bag.out",
                          lambda w, i, o, m=mode, la=last, p=pad: [
                              aten._embedding_bag(w, i, o, False, m, False, None, la, p)[k]
                              for k in keep],
                          (w.clone(), idx.clone(), offsets)))
    cases.append(Case("embedding_bag per_sample_weights", "aten::_embedding_bag.out",
                      lambda w, i, o, s: [aten._embedding_bag(w, i, o, False, 0, False, s)[k]
                                          for k in keep],
                      (w.clone(), idx.clone(), torch.tensor([0, 3]), make(gen, (8,), dt))))
    if dt in (torch.float32, torch.float64):  # PyTorch computes distances in these only
        for p in (0.0, 1.0, 2.0, 1.5, float("inf")):
            cases.append(Case(f"cdist p={p}", "aten::_cdist_forward.out",
                              lambda a, b, p=p: aten._cdist_forward(a, b, p, None),
                              (make(gen, (2, 3, 4), dt), make(gen, (5, 4), dt))))
        for p in (1.0, 2.0, 0.5):
            cases.append(Case(f"pdist p={p}", "aten::_pdist_forward.out",
                              lambda a, p=p: aten._pdist_forward(a, p), (make(gen, (5, 3), dt),)))
        # more than 25 rows: p = 2 goes through the |a|^2 + |b|^2 - 2ab expansion
        cases.append(Case("cdist p=2 expansion", "aten::_cdist_forward.out",
                          lambda a, b: aten._cdist_forward(a, b, 2.0, None),
                          (make(gen, (30, 4), dt), make(gen, (3, 4), dt))))
    return cases


@pytest.mark.parametrize("dtype", ALL, ids=name)
def test_batch_b_kernels(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(7 + ALL.index(dtype))
    check_cases(scatter_cases(gen, dtype) + movement_cases(gen, dtype) + pool_cases(gen, dtype)
                + float_cases(gen, dtype))


# --------------------------------------------------------------------------- #
# Data-dependent errors: a clean exception, never a crash
# --------------------------------------------------------------------------- #

def test_bad_inputs_fail_cleanly() -> None:
    cases = [
        Case("scatter", "aten::scatter.src_out", lambda a, i, s: aten.scatter.src(a, 1, i, s),
             (torch.zeros(2, 3), torch.tensor([[0, 1], [1, 0]]), torch.ones(2, 2))),
        Case("masked_scatter", "aten::masked_scatter.out", lambda a, m, s: a.masked_scatter(m, s),
             (torch.zeros(4), torch.tensor([True, False, True, False]), torch.arange(2.0))),
        Case("embedding_bag", "aten::_embedding_bag.out",
             lambda w, i, o: aten._embedding_bag(w, i, o)[0],
             (torch.rand(5, 3), torch.tensor([0, 1, 2]), torch.tensor([0, 2]))),
    ]
    flat = tuple(a for c in cases for a in c.args)
    _, method = load(Cases(cases), flat)
    good = list(flat)
    method.execute(good)
    bad_inputs = [
        (1, torch.tensor([[0, 3], [1, 0]]), "out of range"),   # scatter index past the dim
        (1, torch.tensor([[0, -1], [1, 0]]), "out of range"),  # scatter does not wrap
        (4, torch.ones(4, dtype=torch.bool), "fewer than"),     # more true than source
        (7, torch.tensor([0, 5, 2]), "out of range"),          # embedding_bag row 5 of 5
        (8, torch.tensor([1, 2]), "offsets"),                  # offsets must start at 0
        (8, torch.tensor([0, 4]), "offsets"),                  # offsets past the indices
    ]
    for pos, value, match in bad_inputs:
        args = list(good)
        args[pos] = value
        with pytest.raises(EmberError, match=match):
            method.execute(args)
    method.execute(good)  # still usable


# --------------------------------------------------------------------------- #
# Dynamic shapes: outputs resized within their bounds at every call
# --------------------------------------------------------------------------- #

def test_dynamic_batch() -> None:
    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, i: torch.Tensor, s: torch.Tensor, v: torch.Tensor):
            return (aten.replication_pad2d(x, [1, 2, 0, 1]),
                    aten.max_pool3d_with_indices(v, [2, 2, 2], [1, 2, 2]),
                    aten.scatter_add(s, 0, i, s),
                    aten._native_batch_norm_legit.no_stats(x, None, None, True, 0.1, 1e-5)[0])

    gen = torch.Generator().manual_seed(11)

    def inputs(n: int) -> tuple:
        return (torch.rand(n, 3, 4, 5, generator=gen), torch.randint(0, n, (n, 3), generator=gen),
                torch.rand(n, 3, generator=gen), torch.rand(n, 2, 3, 4, 4, generator=gen))

    batch = torch.export.Dim("batch", min=2, max=8)
    shapes = ({0: batch}, {0: batch}, {0: batch}, {0: batch})
    ep = torch.export.export(Model(), inputs(4), dynamic_shapes=shapes)
    prog = to_edge(ep, compile_config=EdgeCompileConfig(preserve_ops=PRESERVE)).to_executorch()
    method = ember_runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    for n in (2, 7, 8):
        args = inputs(n)
        got = method.execute(list(args))
        want = [t for r in Model()(*args) for t in (r if isinstance(r, tuple) else (r,))]
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            assert tuple(g.shape) == tuple(w.shape), f"batch {n} output {k}: {g.shape} != {w.shape}"
            if w.dtype.is_floating_point:
                torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)
            else:
                assert torch.equal(g, w), f"batch {n} output {k}"
