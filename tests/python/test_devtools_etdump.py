"""Runtime traces (ETDump) from libember, read by ExecuTorch's own Inspector.

- A portable-only program and an XNNPACK-delegated one, exported by the
  reference exporter with an ETRecord from its generate_etrecord: the
  Inspector reads ember's trace, maps every instruction's event to its
  operators through the ETRecord, and the delegate's per-node events to the
  delegate (by debug handle).
- ember's own export (no ETRecord): the Inspector reads the trace alone.
- Debug outputs: every instruction's output and the method's outputs come
  back through the Inspector equal to what ember computed; "stats" mode
  records [hash, numel, min, max, mean] instead.
- A tracer buffer that is too small: execute still works, the trace says
  how many events were dropped, and what was kept is still readable.
- Bad tracer settings raise clean errors.
"""

from __future__ import annotations

import copy
import os

import pytest
import torch
import torch.nn as nn

from aot_models import CNN, MLP

ember_runtime = pytest.importorskip("ember.runtime")
pytest.importorskip("executorch.devtools")

from ember.devtools import inspector_for, read_etdump  # noqa: E402
from ember.runtime import EmberError, EventTracerConfig, Runtime  # noqa: E402

if not getattr(ember_runtime._runtime, "EVENT_TRACER", 0):  # pragma: no cover
    pytest.skip("libember was built without the event tracer", allow_module_level=True)

pytestmark = [
    pytest.mark.filterwarnings("ignore:Output Buffer not found"),
    pytest.mark.filterwarnings("ignore:The given buffer is not writable"),
]


def _et_export(model: nn.Module, inputs, tmp_path, xnnpack: bool):
    """The reference exporter's .pte and ETRecord for model."""
    from executorch.devtools import generate_etrecord
    from executorch.exir import to_edge, to_edge_transform_and_lower

    ep = torch.export.export(model, inputs)
    if xnnpack:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    else:
        edge = to_edge(ep)
    edge_copy = copy.deepcopy(edge)
    et = edge.to_executorch()
    etrecord = os.path.join(tmp_path, "model.etrecord")
    generate_etrecord(etrecord, edge_copy, et)
    return et.buffer, etrecord


def _run_traced(pte: bytes, inputs, runs: int = 2, **config):
    program = Runtime.get().load_program(pte)
    method = program.load_method("forward", 1, event_tracer=EventTracerConfig(**config))
    outs = None
    for _ in range(runs):
        outs = method.execute(list(inputs))
    return method, outs


def _forward_block(inspector):
    blocks = {b.name: b for b in inspector.event_blocks}
    assert set(blocks) == {"load:forward", "forward"}
    return blocks


def test_portable_trace_with_etrecord(tmp_path):
    torch.manual_seed(0)
    model = MLP().eval()
    x = (torch.randn(4, 16),)
    pte, etrecord = _et_export(model, x, tmp_path, xnnpack=False)
    method, outs = _run_traced(pte, x, runs=3, debug_outputs="full", program_outputs=True)
    stats = method.trace_stats()
    assert stats["dropped"] == 0 and stats["status"] == "" and stats["runs"] == 4

    inspector = inspector_for(method, etrecord=etrecord)
    blocks = _forward_block(inspector)
    load_names = {e.name for e in blocks["load:forward"].events}
    assert {"Program::load_method", "Method::init"} <= load_names

    fwd = blocks["forward"]
    ops = [e for e in fwd.events if e.name.startswith("aten::")]
    assert len(ops) >= 5
    for e in ops:
        # three runs of the same signature: three timings per event
        assert len(e.perf_data.raw) == 3 and min(e.perf_data.raw) >= 0
        # the ETRecord maps the instruction to its operator nodes
        assert e.debug_handles is not None and e.op_types, e.name
        assert e.is_delegated_op is False
    # intermediate outputs: the last instruction's output is the method's output
    assert len(fwd.run_output) == 1
    torch.testing.assert_close(fwd.run_output[0], outs[0], rtol=0, atol=0)
    torch.testing.assert_close(ops[-1].debug_data[0], outs[0], rtol=0, atol=0)
    torch.testing.assert_close(outs[0], model(*x), rtol=1e-5, atol=1e-5)

    # the same trace read with ExecuTorch's deserializer, field by field
    dump = read_etdump(method.etdump())
    assert dump.version == 0 and len(dump.run_data) == 4
    run = dump.run_data[1]
    assert run.name == "forward" and run.bundled_input_index == -1
    kinds = [("p" if ev.profile_event else "d") for ev in run.events]
    assert kinds.count("d") == len(ops) + 1


def test_delegated_trace_with_etrecord(tmp_path):
    torch.manual_seed(0)
    model = CNN().eval()
    x = (torch.randn(1, 3, 16, 16),)
    pte, etrecord = _et_export(model, x, tmp_path, xnnpack=True)
    method, outs = _run_traced(pte, x, runs=2)
    torch.testing.assert_close(outs[0], model(*x), rtol=1e-4, atol=1e-4)

    inspector = inspector_for(method, etrecord=etrecord, debug_data=False)
    fwd = _forward_block(inspector)["forward"]
    calls = [e for e in fwd.events if e.name == "DELEGATE_CALL"]
    nodes = [e for e in fwd.events if e.is_delegated_op]
    assert calls and nodes
    for e in calls:
        assert e.delegate_backend_name == "XnnpackBackend"
    for e in nodes:
        # one event per XNNPACK node, identified by its debug handle
        assert isinstance(e.delegate_debug_identifier, int)
        assert e.name == str(e.delegate_debug_identifier)
        assert e.delegate_backend_name == "XnnpackBackend"
        assert len(e.perf_data.raw) == 2
    # node events carry the node type in the raw trace
    dump = read_etdump(method.etdump())
    names = {ev.profile_event.name for ev in dump.run_data[1].events
             if ev.profile_event and ev.profile_event.delegate_debug_id_int not in (None, -1)}
    assert names & {"Conv2d", "FullyConnected", "MaxPooling2d", "Clamp"}, names


def test_ember_export_without_etrecord():
    from ember import to_edge_transform_and_lower
    from ember.backends.xnnpack import XnnpackPartitioner

    torch.manual_seed(0)
    model = CNN().eval()
    x = (torch.randn(1, 3, 16, 16),)
    ep = torch.export.export(model, x)
    pte = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch().buffer
    method, outs = _run_traced(pte, x, runs=1, debug_outputs="full", program_outputs=True)
    inspector = inspector_for(method)
    fwd = _forward_block(inspector)["forward"]
    assert any(e.is_delegated_op for e in fwd.events)
    torch.testing.assert_close(fwd.run_output[0], outs[0], rtol=0, atol=0)
    df = inspector.to_dataframe()
    assert len(df) == sum(len(b.events) for b in inspector.event_blocks)


def test_debug_stats(tmp_path):
    torch.manual_seed(0)
    model = MLP().eval()
    x = (torch.randn(4, 16),)
    pte, _ = _et_export(model, x, tmp_path, xnnpack=False)
    method, outs = _run_traced(pte, x, runs=1, debug_outputs="stats", program_outputs=True)
    inspector = inspector_for(method)
    out = _forward_block(inspector)["forward"].run_output[0].to(torch.float64)
    want = outs[0].to(torch.float64)
    assert out.shape == (5,)
    assert out[1] == want.numel()
    assert out[2] == want.min() and out[3] == want.max()
    assert abs(float(out[4]) - float(want.mean())) < 1e-6
    # the hash: 32-bit FNV-1a of the tensor's bytes
    h = 2166136261
    for b in outs[0].numpy().tobytes():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    assert int(out[0]) == h


def test_tracer_buffer_full(tmp_path):
    torch.manual_seed(0)
    model = MLP().eval()
    x = (torch.randn(4, 16),)
    pte, _ = _et_export(model, x, tmp_path, xnnpack=False)
    method, outs = _run_traced(pte, x, runs=50, buffer_bytes=4096, debug_outputs="full",
                               debug_buffer_bytes=2048, program_outputs=True)
    torch.testing.assert_close(outs[0], model(*x), rtol=1e-5, atol=1e-5)
    stats = method.trace_stats()
    assert stats["dropped"] > 0 and "dropped" in stats["status"]
    assert stats["bytes_used"] <= stats["bytes_total"]
    dump = read_etdump(method.etdump())  # what was kept is intact
    assert len(dump.run_data) >= 1
    inspector_for(method)
    method.reset_trace()
    assert method.trace_stats()["events"] == 0


def test_bad_tracer_settings(tmp_path):
    torch.manual_seed(0)
    model = MLP().eval()
    x = (torch.randn(4, 16),)
    pte, _ = _et_export(model, x, tmp_path, xnnpack=False)
    program = Runtime.get().load_program(pte)
    with pytest.raises(EmberError) as e:
        program.load_method("forward", 1, event_tracer=EventTracerConfig(buffer_bytes=100))
    assert e.value.status_name == "OUT_OF_MEMORY"
    with pytest.raises(ValueError):
        EventTracerConfig(debug_outputs="everything").flags()
    with pytest.raises(ValueError):
        EventTracerConfig(profile=False).flags()
    plain = program.load_method("forward", 1)
    with pytest.raises(RuntimeError, match="without an event tracer"):
        plain.etdump()
    # the ETDump reader refuses bytes that are not an ETDump
    method, _ = _run_traced(pte, x, runs=1)
    data = bytearray(method.etdump())
    data[8:12] = b"XXXX"
    with pytest.raises(Exception):
        read_etdump(bytes(data))
