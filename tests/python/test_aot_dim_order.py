"""Dim orders: every permutation of every rank, through eager, export and both runtimes.

- The dim-order ops (`ember_dim_order::*`, run as `dim_order_ops::*`) build
  their results in any dim order in eager and under fake tensors, and keep it
  through torch.export.
- Programs whose outputs take every dim order of ranks 1-4 (and a spread of
  rank 5), from inputs laid out contiguously and reversed, run in libember and
  match eager; the program records each output's order.
- The Whisper-style encoder (conv1d -> transpose -> linear) that used to stop
  edge lowering exports, and runs in both runtimes, matching eager.
- Invalid dim orders are refused at export, naming the node, and by the
  runtime's verifier.
"""

from __future__ import annotations

import itertools
from typing import List, Sequence, Tuple

import pytest
import torch
import torch.nn as nn
from torch.export import Dim
from torch._subclasses.fake_tensor import FakeTensorMode

from aot_models import AudioEncoder
from aot_util import assert_matches, load_reference, read_program
from ember import ExecutorchBackendConfig, ExportError, dialect, to_edge

ember_runtime = pytest.importorskip("ember.runtime")

dialect.dim_order_ops()  # registers the ops
OPS = getattr(torch.ops, dialect.DIM_ORDER_NAMESPACE)

# Sizes that all differ, so that a swapped stride shows in the values.
SHAPES = {0: (), 1: (5,), 2: (3, 4), 3: (2, 3, 4), 4: (2, 3, 4, 5), 5: (2, 3, 4, 5, 3)}
# With dims of size 1: several orders give the same strides there.
SHAPES_WITH_ONES = {1: (1,), 2: (1, 4), 3: (3, 1, 2), 4: (2, 1, 3, 1), 5: (2, 1, 3, 1, 2)}
# The dtype _to_dim_order_copy converts to, per rank.
TO_DTYPE = {1: torch.float64, 2: torch.int32, 3: torch.float16, 4: torch.float64,
            5: torch.bfloat16}


def orders(rank: int) -> List[Tuple[int, ...]]:
    """Every dim order of a rank up to 4; for rank 5 every 7th of the 120, the
    reversed order and channels-last-3d."""
    perms = list(itertools.permutations(range(rank)))
    if rank <= 4:
        return perms
    return perms[::7] + [(4, 3, 2, 1, 0), (0, 2, 3, 4, 1)]


def laid_out(x: torch.Tensor, order: Sequence[int]) -> torch.Tensor:
    """x's values in a tensor stored in `order` (outermost first)."""
    return torch.empty_permuted(x.shape, list(order), dtype=x.dtype).copy_(x)


def strides_of(shape: Sequence[int], order: Sequence[int]) -> List[int]:
    return dialect.dense_strides(list(shape), list(order))


def same_layout(shape: Sequence[int], a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether strides a and b place every element alike (dims of size 1 move none)."""
    return all(x == y for x, y, n in zip(a, b, shape) if n > 1)


# ---------------------------------------------------------------------------
# Eager and fake kernels of the dim-order ops
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("rank", range(6))
def test_eager_ops_build_every_dim_order(rank: int) -> None:
    shapes = [SHAPES[rank]] + ([SHAPES_WITH_ONES[rank]] if rank else [])
    for shape in shapes:
        x = torch.randn(shape)
        for p in orders(rank):
            want = strides_of(shape, p)
            y = OPS._to_dim_order_copy(x, dtype=torch.float64, dim_order=list(p))
            assert y.dtype == torch.float64 and torch.equal(y, x.double())
            assert list(y.stride()) == want, (shape, p, y.stride())
            c = OPS._clone_dim_order(laid_out(x, p[::-1]), dim_order=list(p))
            assert torch.equal(c, x) and list(c.stride()) == want
            e = OPS._empty_dim_order(list(shape), dtype=torch.int16, dim_order=list(p))
            assert e.dtype == torch.int16 and list(e.stride()) == want
            # out variants re-stride out in place, whatever it held before
            out = torch.zeros(7, dtype=torch.int32)
            OPS._to_dim_order_copy.out(x * 10, dim_order=list(p), out=out)
            assert torch.equal(out, (x * 10).to(torch.int32)) and list(out.stride()) == want
            out = torch.empty(0)
            OPS._clone_dim_order.out(x, dim_order=list(p), out=out)
            assert torch.equal(out, x) and list(out.stride()) == want
            out = torch.empty(0)
            OPS._empty_dim_order.out(list(shape), dim_order=list(p), out=out)
            assert tuple(out.shape) == shape and list(out.stride()) == want
            # no dim_order keeps the input's layout (preserve_format); strides of
            # dims of size 1 move no element, so they may differ
            src = laid_out(x, p)
            assert same_layout(shape, OPS._clone_dim_order(src).stride(), src.stride())


def test_fake_kernels_build_every_dim_order() -> None:
    with FakeTensorMode():
        for rank in range(1, 6):
            x = torch.empty(SHAPES[rank])
            for p in orders(rank):
                y = OPS._to_dim_order_copy(x, dtype=torch.float16, dim_order=list(p))
                assert y.dtype == torch.float16
                assert list(y.stride()) == strides_of(SHAPES[rank], p)
                assert list(OPS._clone_dim_order(x, dim_order=list(p)).stride()) == \
                    strides_of(SHAPES[rank], p)


@pytest.mark.parametrize("bad", [[0, 0, 1], [0, 1], [0, 1, 2, 3], [0, 3, 1], [-1, 0, 1]])
def test_eager_ops_refuse_invalid_dim_orders(bad: List[int]) -> None:
    x = torch.randn(2, 3, 4)
    for call in (lambda: OPS._clone_dim_order(x, dim_order=bad),
                 lambda: OPS._to_dim_order_copy(x, dtype=torch.float64, dim_order=bad),
                 lambda: OPS._empty_dim_order([2, 3, 4], dim_order=bad),
                 lambda: OPS._clone_dim_order.out(x, dim_order=bad, out=torch.empty(0))):
        with pytest.raises(ValueError, match=r"is not a dim order of a rank-3 tensor"):
            call()


# ---------------------------------------------------------------------------
# Every dim order through export and libember's kernels
# ---------------------------------------------------------------------------

class AllOrders(nn.Module):
    """Copies its input into every dim order in `orders`, with and without a cast."""

    def __init__(self, orders: List[Tuple[int, ...]], dtype: torch.dtype) -> None:
        super().__init__()
        self.orders = [list(p) for p in orders]
        self.dtype = dtype

    def forward(self, x: torch.Tensor):
        outs = []
        for p in self.orders:
            outs.append(OPS._clone_dim_order(x, dim_order=p))
            outs.append(OPS._to_dim_order_copy(x * 4, dtype=self.dtype, dim_order=p))
        return tuple(outs)


def _cases():
    for rank in range(1, 6):
        for shape in (SHAPES[rank], SHAPES_WITH_ONES[rank]):
            for q in ([tuple(range(rank)), tuple(reversed(range(rank)))] if rank > 1
                      else [(0,)]):
                yield pytest.param(rank, shape, q, id=f"rank{rank}-{'x'.join(map(str, shape))}"
                                   f"-in{''.join(map(str, q))}")


@pytest.mark.parametrize("rank,shape,in_order", list(_cases()))
def test_kernels_copy_into_every_dim_order(rank: int, shape: Tuple[int, ...],
                                           in_order: Tuple[int, ...]) -> None:
    torch.manual_seed(rank)
    ps = orders(rank)
    m = AllOrders(ps, TO_DTYPE[rank])
    x = laid_out(torch.randn(shape), in_order)
    ep = torch.export.export(m, (x,))
    prog = to_edge(ep).to_executorch()
    program = ember_runtime.Runtime.get().load_program(prog.buffer)
    meta = program.metadata("forward")
    # the input's order as its strides give it: dims of size 1 may sit anywhere
    assert same_layout(shape, strides_of(shape, meta.inputs[0].dim_order),
                       strides_of(shape, in_order))
    want_orders = [p for p in ps for _ in range(2)]
    assert [o.dim_order for o in meta.outputs] == want_orders
    ops = set(meta.operators)
    assert {"dim_order_ops::_clone_dim_order.out", "dim_order_ops::_to_dim_order_copy.out"} <= ops
    method = program.load_method("forward")
    for run in range(2):
        xr = laid_out(torch.randn(shape), in_order) if run else x
        with torch.no_grad():
            expected = m(xr)
        for e, p in zip(expected, want_orders):
            assert list(e.stride()) == strides_of(shape, p)  # eager's own layout
        assert_matches(method.execute([xr]), expected)


# ---------------------------------------------------------------------------
# The Whisper-style encoder (regression) and permuted inputs and weights
# ---------------------------------------------------------------------------

def _dim_order_args(prog) -> List[List[int]]:
    return [list(n.kwargs["dim_order"]) for n in prog.exported_program().graph.nodes
            if n.op == "call_function" and dialect.is_dim_order_op(n.target)
            and n.kwargs.get("dim_order") is not None]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_frames"])
def test_audio_encoder_exports_and_runs_in_both_runtimes(dynamic: bool) -> None:
    torch.manual_seed(0)
    m = AudioEncoder().eval()
    feats = torch.randn(2, 8, 24)
    ds = {"feats": {2: Dim("frames", min=4, max=AudioEncoder.MAX_T)}} if dynamic else None
    edge = to_edge(torch.export.export(m, (feats,), dynamic_shapes=ds))
    # the copies keep the layout the edge program gives them: contiguous once the
    # transpose is a permute_copy (as the reference exporter decides too)
    orders_used = _dim_order_args(edge)
    assert orders_used and all(o == list(range(len(o))) for o in orders_used), orders_used
    prog = edge.to_executorch()
    frames = (24, 5, 32, 13) if dynamic else (24, 24)
    runs = [(torch.randn(2, 8, t),) for t in frames]
    ember_method = ember_runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    reference_method = load_reference(prog.buffer)
    for args in runs:
        with torch.no_grad():
            expected = m(*args)
        assert_matches(ember_method.execute(list(args)), expected)
        assert_matches(reference_method.execute(list(args)), expected)


class PermutedEverywhere(nn.Module):
    """Inputs and weights stored in orders no memory format names, and
    channels-last-3d copies and fills."""

    def __init__(self) -> None:
        super().__init__()
        self.w_t = nn.Parameter(torch.randn(4, 6).t())  # [6, 4], stored transposed
        self.k = nn.Parameter(torch.randn(1, 3, 2, 4, 5).to(memory_format=torch.channels_last_3d))

    def forward(self, x: torch.Tensor, v: torch.Tensor):
        y = (x.clone() + 1) @ self.w_t              # x: [B, C, T] stored as [B, T, C]
        z = (v * self.k).clone()                    # v: channels-last-3d
        f = torch.full_like(v, 2.0, memory_format=torch.channels_last_3d) + v
        return y, z, f, x.contiguous() * 2


def test_permuted_inputs_weights_and_channels_last_3d() -> None:
    torch.manual_seed(1)
    m = PermutedEverywhere().eval()
    x = laid_out(torch.randn(2, 5, 6), (0, 2, 1))
    v = torch.randn(2, 3, 2, 4, 5).to(memory_format=torch.channels_last_3d)
    prog = to_edge(torch.export.export(m, (x, v))).to_executorch()
    program = ember_runtime.Runtime.get().load_program(prog.buffer)
    meta = program.metadata("forward")
    assert [i.dim_order for i in meta.inputs] == [(0, 2, 1), (0, 2, 3, 4, 1)]
    method = program.load_method("forward")
    for args in ((x, v), (laid_out(torch.randn(2, 5, 6), (0, 2, 1)), torch.randn(2, 3, 2, 4, 5))):
        with torch.no_grad():
            expected = m(*args)
        assert_matches(method.execute(list(args)), expected)


def test_layouts_that_need_no_copy_lose_it() -> None:
    """A preserve-format copy of a transposed value is contiguous in the edge
    program, so a cast to its own dtype is a no-op and goes away."""

    class M(nn.Module):
        def forward(self, x):
            return (x.transpose(1, 2) + 1).to(torch.float32) * 2

    edge = to_edge(torch.export.export(M(), (torch.randn(2, 3, 4),)))
    targets = [n.target for n in edge.exported_program().graph.nodes if n.op == "call_function"]
    assert not any(dialect.is_dim_order_op(t) for t in targets), targets


# ---------------------------------------------------------------------------
# Invalid dim orders: refused at export (naming the node) and at load
# ---------------------------------------------------------------------------

class CloneTo(nn.Module):
    def __init__(self, order: List[int]) -> None:
        super().__init__()
        self.order = order

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return OPS._clone_dim_order(x + 1, dim_order=self.order) * 2


def _clone_node(gm: torch.fx.GraphModule) -> torch.fx.Node:
    return next(n for n in gm.graph.nodes
                if n.op == "call_function" and dialect.is_dim_order_op(n.target))


def test_export_refuses_an_invalid_dim_order_in_the_model() -> None:
    with pytest.raises(Exception, match=r"_clone_dim_order: dim_order \[0, 0, 1\] is not a dim "
                                        r"order of a rank-3 tensor"):
        torch.export.export(CloneTo([0, 0, 1]), (torch.randn(2, 3, 4),))


@pytest.mark.parametrize("bad", [[0, 1], [2, 2, 0], [0, 1, 3]])
def test_to_edge_and_to_executorch_name_the_node_of_an_invalid_dim_order(bad: List[int]) -> None:
    ep = torch.export.export(CloneTo([0, 2, 1]), (torch.randn(2, 3, 4),))
    _clone_node(ep.graph_module).kwargs = {"dim_order": bad}
    with pytest.raises(ExportError, match=r"node _?clone_dim_order\w*, from .*test_aot_dim_order"
                                          r"\.py:\d+ in forward.*is not a dim order of a "
                                          r"rank-3 tensor"):
        to_edge(ep)

    edge = to_edge(torch.export.export(CloneTo([0, 2, 1]), (torch.randn(2, 3, 4),)))
    _clone_node(edge.exported_program().graph_module).kwargs = {"dim_order": bad}
    with pytest.raises(ExportError, match=r"dim_order_ops::_clone_dim_order \(node "
                                          r"_?clone_dim_order\w*, from .*test_aot_dim_order\.py"):
        edge.to_executorch()

    def break_it(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
        _clone_node(gm).kwargs = {"dim_order": bad}
        return gm

    fresh = to_edge(torch.export.export(CloneTo([0, 2, 1]), (torch.randn(2, 3, 4),)))
    with pytest.raises(ExportError, match=r"is not a dim order"):
        fresh.transform([break_it])


def _tensor_values(prog, rank: int):
    plan = prog.program.execution_plan[0]
    return [v.val for v in plan.values
            if type(v.val).__name__ == "Tensor" and len(v.val.sizes) == rank]


@pytest.mark.parametrize("bad", [[0, 0, 1], [0, 1], [0, 1, 2, 3], [0, 2, 3]])
def test_runtime_verifier_refuses_a_tensor_with_an_invalid_dim_order(bad: List[int]) -> None:
    x = torch.randn(2, 3, 4)
    good = to_edge(torch.export.export(CloneTo([0, 2, 1]), (x,))).to_executorch()
    ember_runtime.Runtime.get().load_program(good.buffer).load_method("forward")
    prog = to_edge(torch.export.export(CloneTo([0, 2, 1]), (x,))).to_executorch()
    tensors = _tensor_values(prog, 3)
    assert any(list(t.dim_order) == [0, 2, 1] for t in tensors)
    tensors[0].dim_order = bad
    with pytest.raises(ember_runtime.EmberError, match=r"dim_order") as info:
        ember_runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    assert info.value.status == ember_runtime.Status.INVALID_PROGRAM


def test_runtime_kernel_refuses_a_dim_order_argument_other_than_outs() -> None:
    """A program whose dim-order op asks for one order and plans out in another
    loads (each tensor is valid) and fails at execute with a message."""
    prog = to_edge(torch.export.export(CloneTo([0, 2, 1]), (torch.randn(2, 3, 4),))
                   ).to_executorch()
    plan = prog.program.execution_plan[0]
    op = next(i for i, o in enumerate(plan.operators) if o.name.endswith("_clone_dim_order"))
    call = next(ins.instr_args for ch in plan.chains for ins in ch.instructions
                if type(ins.instr_args).__name__ == "KernelCall" and ins.instr_args.op_index == op)
    out = plan.values[call.args[-1]].val
    assert list(out.dim_order) == [0, 2, 1]
    out.dim_order = [0, 1, 2]
    method = ember_runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    with pytest.raises(ember_runtime.EmberError, match=r"differs from out's dim order"):
        method.execute([torch.randn(2, 3, 4)])


def test_reference_program_with_a_permuted_layout_runs_in_ember() -> None:
    """Compatibility the other way: the reference exporter's program for a model
    with transposed copies runs in libember (its dim orders are its own)."""
    from aot_util import reference_export

    m = AudioEncoder().eval()
    buffer = reference_export(m, (torch.randn(2, 8, 24),))
    ops = {f"{o.name}.{o.overload}" for p in read_program(buffer).execution_plan
           for o in p.operators}
    assert any(o.startswith("dim_order_ops::") for o in ops), ops
    method = ember_runtime.Runtime.get().load_program(buffer).load_method("forward")
    x = torch.randn(2, 8, 24)
    with torch.no_grad():
        expected = m(x)
    assert_matches(method.execute([x]), expected)


def test_memory_format_arguments_reach_the_program() -> None:
    """full_like(memory_format=channels_last) keeps its argument (c10's number, 2)
    and runs in ember, whose kernels take the layout from out."""

    class M(nn.Module):
        def forward(self, x):
            return torch.full_like(x, 3.0, memory_format=torch.channels_last) - x

    m = M()
    x = torch.randn(2, 3, 4, 5)
    prog = to_edge(torch.export.export(m, (x,))).to_executorch(
        ExecutorchBackendConfig(check_kernels=True))
    method = ember_runtime.Runtime.get().load_program(prog.buffer).load_method("forward")
    assert_matches(method.execute([x]), m(x))


def test_a_cast_into_the_layout_a_tensor_already_has_goes_away() -> None:
    """`.to(memory_format=channels_last)` of a channels-last input is a no-op in
    any program, not only for contiguous inputs."""

    class M(nn.Module):
        def forward(self, x):
            return x.to(memory_format=torch.channels_last) * 2

    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    edge = to_edge(torch.export.export(M(), (x,)))
    targets = [n.target for n in edge.exported_program().graph.nodes if n.op == "call_function"]
    assert not any(dialect.is_dim_order_op(t) for t in targets), targets
    method = ember_runtime.Runtime.get().load_program(edge.to_executorch().buffer) \
        .load_method("forward")
    assert_matches(method.execute([x]), M()(x))
