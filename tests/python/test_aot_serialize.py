"""The .pte writer: flatbuffer layout, extended header, segments, constants, stack traces."""

from __future__ import annotations

import struct

import flatbuffers
import torch

from aot_models import MLP
from aot_util import export, load_reference, read_program, run_and_compare
from ember import ExecutorchBackendConfig, to_edge
from ember.flatbuffer import RefVector, Scalar, Table, Vector, build


def _field(tab: flatbuffers.table.Table, slot: int) -> int:
    return tab.Offset(4 + 2 * slot)


def test_flatbuffer_writer_layout() -> None:
    leaf = Table({0: Scalar("q", -5), 1: "hi"})
    root = Table({
        0: Scalar("B", 7),
        1: Vector("B", b"\x01\x02\x03", align=16),
        2: RefVector([leaf, Table({0: Scalar("q", -5), 1: "hi"})]),
        3: Vector("q", [1, -2, 3]),
        5: Scalar("d", 2.5),
    })
    res = build(root, b"TEST")
    buf = res.data
    assert buf[4:8] == b"TEST" and res.max_alignment == 16 and len(buf) % 16 == 0
    tab = flatbuffers.table.Table(bytearray(buf), struct.unpack_from("<I", buf, 0)[0])
    assert tab.Get(flatbuffers.number_types.Uint8Flags, tab.Pos + _field(tab, 0)) == 7
    assert _field(tab, 4) == 0  # absent field
    assert tab.Get(flatbuffers.number_types.Float64Flags, tab.Pos + _field(tab, 5)) == 2.5
    vec = tab.Vector(_field(tab, 1))
    assert vec % 16 == 0 and buf[vec:vec + 3] == b"\x01\x02\x03"
    assert tab.VectorLen(_field(tab, 1)) == 3
    qv = tab.Vector(_field(tab, 3))
    assert qv % 8 == 0 and struct.unpack_from("<3q", buf, qv) == (1, -2, 3)
    # both leaf tables are readable and share one vtable
    tables = tab.Vector(_field(tab, 2))
    vtables = set()
    for i in range(tab.VectorLen(_field(tab, 2))):
        pos = tab.Indirect(tables + 4 * i)
        t = flatbuffers.table.Table(bytearray(buf), pos)
        assert t.Get(flatbuffers.number_types.Int64Flags, t.Pos + _field(t, 0)) == -5
        assert t.String(t.Pos + _field(t, 1)) == b"hi"
        vtables.add(pos - struct.unpack_from("<i", buf, pos)[0])
    assert len(vtables) == 1


def test_extended_header_and_segment_layout() -> None:
    prog = export(MLP().eval(), (torch.randn(2, 16),))
    buf = prog.buffer
    assert buf[4:8] == b"ET12" and buf[8:12] == b"eh00"
    length, program_size, base, data_size = struct.unpack_from("<IQQQ", buf, 12)
    assert length == 32 and program_size <= base and base % 128 == 0
    assert base + data_size == len(buf)
    p = read_program(buf)
    cs = p.constant_segment
    assert cs.segment_index == 0 and cs.offsets[0] == 0 and len(cs.offsets) == 7
    assert all(o % 16 == 0 for o in cs.offsets)
    assert p.segments[0].offset == 0


def test_custom_segment_alignment_runs() -> None:
    m = MLP().eval()
    prog = export(m, (torch.randn(2, 16),),
                  config=ExecutorchBackendConfig(segment_alignment=4096))
    _, _, base, _ = struct.unpack_from("<IQQQ", prog.buffer, 12)
    assert base % 4096 == 0
    run_and_compare(m, [(torch.randn(2, 16),)], prog.buffer)


def test_program_without_constants_has_no_extended_header() -> None:
    class Add(torch.nn.Module):
        def forward(self, x, y):
            return x - y

    m = Add()
    prog = export(m, (torch.randn(3), torch.randn(3)))
    assert prog.buffer[8:12] != b"eh00"
    run_and_compare(m, [(torch.randn(3), torch.randn(3))], prog.buffer)


def test_identical_constants_are_stored_once() -> None:
    class Twins(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(8, 8)
            self.b = torch.nn.Linear(8, 8)
            with torch.no_grad():
                self.b.weight.copy_(self.a.weight)
                self.b.bias.copy_(self.a.bias)

        def forward(self, x):
            return self.b(torch.relu(self.a(x)))

    m = Twins().eval()
    prog = export(m, (torch.randn(2, 8),))
    offsets = read_program(prog.buffer).constant_segment.offsets
    assert len(offsets) == 3  # placeholder + one weight + one bias
    run_and_compare(m, [(torch.randn(2, 8),)], prog.buffer)


def test_constants_are_shared_between_methods() -> None:
    lin = torch.nn.Linear(4, 4)

    class A(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = lin

        def forward(self, x):
            return self.lin(x)

    class B(A):
        def forward(self, x):
            return torch.relu(self.lin(x))

    eps = {"a": torch.export.export(A(), (torch.randn(1, 4),)),
           "b": torch.export.export(B(), (torch.randn(1, 4),))}
    prog = to_edge(eps).to_executorch()
    assert len(read_program(prog.buffer).constant_segment.offsets) == 3
    x = torch.randn(1, 4)
    torch.testing.assert_close(load_reference(prog.buffer, "b").execute([x])[0],
                               torch.relu(lin(x)).detach())


def test_stacktrace_per_instruction() -> None:
    prog = export(MLP().eval(), (torch.randn(2, 16),),
                  config=ExecutorchBackendConfig(emit_stacktrace=True))
    chain = read_program(prog.buffer).execution_plan[0].chains[0]
    assert chain.stacktrace is not None
    assert len(chain.stacktrace) == len(chain.instructions)
    frames = [f for fl in chain.stacktrace for f in fl.items]
    assert any(f.filename.endswith("aot_models.py") and f.name == "forward"
               and "self.fc1(x)" in f.context for f in frames)
    assert read_program(export(MLP().eval(), (torch.randn(2, 16),)).buffer
                        ).execution_plan[0].chains[0].stacktrace is None
