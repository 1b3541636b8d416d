"""ember's XNNPACK partitioner and preprocess, beyond "the numbers match".

test_xnnpack_compat.py shows programs lowered here run right in both
runtimes; this file checks what the lowering decides: which nodes stay
outside and why, how weights travel (named data, one blob per distinct
tensor, keyed by content), and the errors a whole-program lowering gives.
"""

from __future__ import annotations

import hashlib

import pytest
import torch
import torch.nn as nn

ember_runtime = pytest.importorskip("ember.runtime")
deserialize = pytest.importorskip("executorch.exir._serialize._program").deserialize_pte_binary

from ember import ExportError, to_edge, to_edge_transform_and_lower  # noqa: E402
from ember.backend.lowering import to_backend  # noqa: E402
from ember.backends.xnnpack import XnnpackPartitioner  # noqa: E402


class Tied(nn.Module):
    """Two linears sharing one weight, then ops the payload cannot state."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)
        self.b.weight = self.a.weight

    def forward(self, x: torch.Tensor):
        y = self.b(torch.relu(self.a(x)))
        return y, y.argmax(-1), x.double().sum()


def lower(model: nn.Module, args: tuple, partitioner: XnnpackPartitioner) -> bytes:
    ep = torch.export.export(model.eval(), args)
    return to_edge_transform_and_lower(ep, partitioner=[partitioner]).to_executorch().buffer


def test_boundaries_and_reasons() -> None:
    torch.manual_seed(0)
    model = Tied()
    x = torch.randn(3, 8)
    part = XnnpackPartitioner()
    buffer = lower(model, (x,), part)
    # argmax (int64 out), the cast to float64 and the float64 sum stay outside
    assert set(part.reasons) == {"argmax", "_to_copy", "sum_1"}
    assert all(part.reasons.values())
    program = ember_runtime.Runtime.get().load_program(buffer)
    meta = program.metadata("forward")
    assert meta.num_delegates == 1
    assert sorted(meta.operators) == ["aten::argmax.out", "aten::sum.IntList_out",
                                      "dim_order_ops::_to_dim_order_copy.out"]
    got = program.load_method("forward").execute([x])
    with torch.no_grad():
        want = model(x)
    torch.testing.assert_close(got[0], want[0], rtol=1e-4, atol=1e-4)
    assert torch.equal(got[1], want[1])
    torch.testing.assert_close(got[2], want[2])


def test_weights_are_named_data_keyed_by_content() -> None:
    torch.manual_seed(0)
    model = Tied()
    pte = deserialize(lower(model, (torch.randn(3, 8),), XnnpackPartitioner()))
    store = pte.named_data
    assert store is not None
    blobs = {key: bytes(store.buffers[entry.buffer_index])
             for key, entry in store.pte_data.items()}
    # the shared weight once, two biases
    assert len(blobs) == 3
    for key, data in blobs.items():
        assert key == hashlib.sha256(data).hexdigest()
    expected = {model.a.weight.detach().numpy().tobytes(),
                model.a.bias.detach().numpy().tobytes(),
                model.b.bias.detach().numpy().tobytes()}
    assert set(blobs.values()) == expected
    # the parent program keeps no copy of them
    assert not pte.program.constant_buffer or all(
        len(b.storage) == 0 for b in pte.program.constant_buffer)


def test_split_partitions_each_become_a_delegate() -> None:
    class Split(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(6, 6)
            self.b = nn.Linear(6, 6)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.a(x)
            # an integer round trip in the middle: the delegates cannot merge
            y = y.round().to(torch.int32).to(torch.float32)
            return self.b(y)

    torch.manual_seed(1)
    model = Split()
    x = torch.randn(4, 6) * 3
    buffer = lower(model, (x,), XnnpackPartitioner())
    program = ember_runtime.Runtime.get().load_program(buffer)
    assert program.metadata("forward").num_delegates == 2
    got = program.load_method("forward").execute([x])[0]
    with torch.no_grad():
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)


def test_other_dtypes_stay_outside() -> None:
    model = nn.Linear(4, 4).to(torch.float64)
    x = torch.randn(2, 4, dtype=torch.float64)
    part = XnnpackPartitioner()
    buffer = lower(model, (x,), part)
    assert ember_runtime.Runtime.get().load_program(buffer).metadata("forward").num_delegates == 0
    assert part.reasons


def test_whole_program_lowering_names_the_refused_node() -> None:
    class ArgMax(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x * 2).argmax(-1)

    import ember.backends.xnnpack  # noqa: F401  (registers the backend)

    edge = to_edge(torch.export.export(ArgMax(), (torch.randn(2, 3),)))
    with pytest.raises(ExportError) as err:
        to_backend("XnnpackBackend", edge.exported_program(), [])
    message = str(err.value)
    assert "argmax" in message
    assert "test_xnnpack_partitioner.py" in message  # the source line of the node


def test_whole_program_lowering_runs_alone() -> None:
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).eval()
    x = torch.randn(2, 5)
    edge = to_edge(torch.export.export(model, (x,)))
    lowered = to_backend("XnnpackBackend", edge.exported_program(), [])
    assert lowered.backend_id == "XnnpackBackend"
    assert lowered.processed_bytes[4:8] == b"XH00"
    program = ember_runtime.Runtime.get().load_program(lowered.buffer())
    assert program.metadata("forward").num_delegates == 1
    got = program.load_method("forward").execute([x])[0]
    with torch.no_grad():
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)


def test_weight_shared_with_an_op_outside_is_owned_by_the_delegate() -> None:
    """A tied embedding and output projection (GPT-2's wte / lm_head): the
    embedding stays outside, the projection is delegated and must own its
    weight (packed at init) while the embedding keeps the program's copy."""

    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(11, 6)
            self.head = nn.Linear(6, 11, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            return self.head(torch.tanh(self.wte(idx)))

    torch.manual_seed(3)
    model = Tied().eval()
    idx = torch.tensor([[1, 4, 9, 0]])
    buffer = lower(model, (idx,), XnnpackPartitioner())
    program = ember_runtime.Runtime.get().load_program(buffer)
    meta = program.metadata("forward")
    assert meta.num_delegates == 1
    assert list(meta.operators) == ["aten::embedding.out"]
    pte = deserialize(buffer)
    weight = model.wte.weight.detach().numpy().tobytes()
    assert weight in {bytes(pte.named_data.buffers[e.buffer_index])
                      for e in pte.named_data.pte_data.values()}
    with torch.no_grad():
        want = model(idx)
    torch.testing.assert_close(program.load_method("forward").execute([idx])[0], want,
                               rtol=1e-4, atol=1e-4)
    from executorch.runtime import Runtime

    ref = Runtime.get().load_program(buffer).load_method("forward").execute([idx])[0]
    torch.testing.assert_close(ref, want, rtol=1e-4, atol=1e-4)
