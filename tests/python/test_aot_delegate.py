"""Delegation: partitioner tags, backend preprocess, DelegateCall, payload placement."""

from __future__ import annotations

from typing import List

import pytest
import torch

from aot_util import read_program
from ember import ExecutorchBackendConfig, to_edge, to_edge_transform_and_lower
from ember.backend import BackendDetails, CompileSpec, PreprocessResult
from ember.backend.partitioner import OpSetPartitioner

aten = torch.ops.aten
SEEN: List[torch.export.ExportedProgram] = []


class ElementwiseTestBackend(BackendDetails):
    """A backend that only records what it was given; its payload names the ops."""

    @staticmethod
    def preprocess(edge_program, compile_specs):
        SEEN.append(edge_program)
        ops = [n.target.name() for n in edge_program.graph.nodes if n.op == "call_function"]
        return PreprocessResult(("ETB1;" + ";".join(ops)).encode())


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 8)
        self.fc2 = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        d = torch.relu(self.fc1(x) * 2.0 + y)  # delegate 0
        return self.fc2(d)


def _partitioner(own_constants: bool = True) -> OpSetPartitioner:
    return OpSetPartitioner("ElementwiseTestBackend",
                            {aten.mul.Tensor, aten.add.Tensor, aten.relu.default},
                            [CompileSpec("mode", b"fast")], own_constants=own_constants)


def _lowered(**kw):
    SEEN.clear()
    ep = torch.export.export(Model().eval(), (torch.randn(2, 8), torch.randn(2, 8)))
    return to_edge(ep).to_backend(_partitioner(**kw))


def test_partition_is_lowered_and_emitted_as_delegate_call() -> None:
    edge = _lowered()
    assert len(SEEN) == 1
    sub = SEEN[0]
    assert [n.target.name() for n in sub.graph.nodes if n.op == "call_function"] == [
        "aten::mul.Tensor", "aten::add.Tensor", "aten::relu"]
    # the 2.0 constant moved into the delegate's program
    assert [s.kind.name for s in sub.graph_signature.input_specs] == [
        "CONSTANT_TENSOR", "USER_INPUT", "USER_INPUT"]

    prog = edge.to_executorch()
    p = read_program(prog.buffer)
    plan = p.execution_plan[0]
    (d,) = plan.delegates
    assert d.id == "ElementwiseTestBackend"
    assert [(c.key, bytes(c.value)) for c in d.compile_specs] == [("mode", b"fast")]
    assert int(d.processed.location) == 1  # SEGMENT
    seg = p.segments[d.processed.index]
    payload = prog.buffer[seg.offset + _segment_base(prog.buffer):][:seg.size]
    assert payload == b"ETB1;aten::mul.Tensor;aten::add.Tensor;aten::relu"
    calls = [i.instr_args for i in plan.chains[0].instructions
             if type(i.instr_args).__name__ == "DelegateCall"]
    assert len(calls) == 1 and len(calls[0].args) == 3  # h, y -> out
    kinds = [type(plan.values[a].val).__name__ for a in calls[0].args]
    assert kinds == ["Tensor", "Tensor", "Tensor"]


def _segment_base(buf: bytes) -> int:
    import struct

    return struct.unpack_from("<Q", buf, 24)[0]


def test_inline_payload() -> None:
    prog = _lowered().to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    p = read_program(prog.buffer)
    (d,) = p.execution_plan[0].delegates
    assert int(d.processed.location) == 0  # INLINE
    assert bytes(p.backend_delegate_data[d.processed.index].data).startswith(b"ETB1;")


def test_reference_runtime_reaches_backend_lookup() -> None:
    from executorch.runtime import Runtime

    prog = _lowered().to_executorch()
    program = Runtime.get().load_program(prog.buffer)
    with pytest.raises(RuntimeError):  # the reference runtime has no such backend
        program.load_method("forward")


def test_to_edge_transform_and_lower_keeps_requested_ops() -> None:
    class LinearPartitioner(OpSetPartitioner):
        def ops_to_not_decompose(self, ep):
            return [aten.linear.default], None

    SEEN.clear()
    ep = torch.export.export(Model().eval(), (torch.randn(2, 8), torch.randn(2, 8)))
    edge = to_edge_transform_and_lower(
        ep, partitioner=[LinearPartitioner("ElementwiseTestBackend", {aten.linear.default})])
    assert len(SEEN) == 2  # each linear is its own partition (relu sits between)
    for sub in SEEN:
        assert [n.target for n in sub.graph.nodes if n.op == "call_function"] == [
            aten.linear.default]
    remaining = {n.target for n in edge.exported_program().graph.nodes if n.op == "call_function"}
    assert aten.linear.default not in remaining
    plan = read_program(edge.to_executorch().buffer).execution_plan[0]
    assert len(plan.delegates) == 2


def test_unknown_backend_is_a_clear_error() -> None:
    ep = torch.export.export(Model().eval(), (torch.randn(2, 8), torch.randn(2, 8)))
    with pytest.raises(KeyError, match="NoSuchBackend"):
        to_edge(ep).to_backend(OpSetPartitioner("NoSuchBackend", {aten.relu.default}))
