"""ember's own developer tools over its traces: ETRecord, Inspector, plots,
numeric debugging and ember-inspect, none of which import executorch
(ExecuTorch's readers serve only as the oracle here).

- ETRecord: generate_etrecord / parse_etrecord round trip; ExecuTorch's
  parse_etrecord reads ember's file.
- Inspector: per-event statistics over runs, the same timings ExecuTorch's
  Inspector reads from the trace, operator names, module and source line,
  delegate nodes by name; the slowest delegated node leads to its source line.
- Numeric debugging: intermediates against eager, the XNNPACK delegate's
  per-node outputs included; a perturbed reference is caught at the first
  operator it changes, inside the delegate too.
- Corrupted ETDump / ETRecord: clean ETDumpError / ETRecordError.
- ember-inspect prints the table and writes PNGs.
"""

from __future__ import annotations

import copy
import io
import json
import os
import zipfile

import pytest
import torch

from aot_models import CNN, MLP

ember_runtime = pytest.importorskip("ember.runtime")

from ember import to_edge, to_edge_transform_and_lower  # noqa: E402
from ember.devtools import (ETDumpError, ETRecordError, Inspector,  # noqa: E402
                            generate_etrecord, parse_etdump, parse_etrecord)
from ember.runtime import EventTracerConfig, Runtime  # noqa: E402

if not getattr(ember_runtime._runtime, "EVENT_TRACER", 0):  # pragma: no cover
    pytest.skip("libember was built without the event tracer", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))


def _export(model, inputs, tmp_path, xnnpack: bool):
    ep = torch.export.export(model, inputs)
    if xnnpack:
        from ember.backends.xnnpack import XnnpackPartitioner
        edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    else:
        edge = to_edge(ep)
    edge_copy = copy.deepcopy(edge)
    et = edge.to_executorch()
    path = os.path.join(tmp_path, "model.etrecord")
    rec = generate_etrecord(path, edge_copy, et)
    return et.buffer, path, rec, edge_copy


def _trace(pte, inputs, tmp_path, runs=3, **config):
    method = Runtime.get().load_program(pte).load_method(
        "forward", 1, event_tracer=EventTracerConfig(**config))
    outs = None
    for _ in range(runs):
        outs = method.execute(list(inputs))
    etdp = os.path.join(tmp_path, "model.etdp")
    debug = os.path.join(tmp_path, "model.debug") if config.get("debug_outputs") else None
    method.write_etdump(etdp, debug)
    return etdp, debug, outs


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("mlp"))
    torch.manual_seed(0)
    model = MLP().eval()
    x = (torch.randn(4, 16),)
    pte, etrecord, rec, edge = _export(model, x, tmp, xnnpack=False)
    etdp, debug, outs = _trace(pte, x, tmp, runs=3, debug_outputs="full", program_outputs=True)
    return dict(model=model, x=x, etrecord=etrecord, rec=rec, edge=edge, etdp=etdp,
                debug=debug, outs=outs, tmp=tmp)


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("cnn"))
    torch.manual_seed(0)
    model = CNN().eval()
    x = (torch.randn(1, 3, 16, 16),)
    pte, etrecord, rec, edge = _export(model, x, tmp, xnnpack=True)
    etdp, debug, outs = _trace(pte, x, tmp, runs=2, debug_outputs="full")
    return dict(model=model, x=x, etrecord=etrecord, rec=rec, edge=edge, etdp=etdp,
                debug=debug, outs=outs, tmp=tmp, pte=pte)


def _model_line(source: str) -> str:
    """The text of the aot_models.py line that a 'file:line' source names."""
    assert "aot_models.py:" in source, source
    line = int(source.split("aot_models.py:")[1].split()[0].rstrip(":"))
    with open(os.path.join(HERE, "aot_models.py")) as f:
        return f.read().splitlines()[line - 1]


# --------------------------------------------------------------------- ETRecord


def test_etrecord_round_trip(cnn):
    rec = parse_etrecord(cnn["etrecord"])
    assert rec.debug_handle_map == cnn["rec"].debug_handle_map
    assert rec.delegate_map["forward"][0]["name"] == "XnnpackBackend"
    nodes = rec.nodes["forward"]
    assert set(nodes) == set(h for hs in rec.debug_handle_map["forward"].values() for h in hs)
    convs = [n for n in nodes.values() if n.op == "aten::convolution"]
    assert len(convs) == 2
    for n in nodes.values():
        assert n.backend == "XnnpackBackend"
        assert n.stack_trace and "aot_models.py" in n.source
    assert [n.module_stack[-1][0] for n in convs] == ["conv1", "conv2"]
    # the memory plan of the execution graph
    assert all(t.nbytes > 0 and t.last >= t.first for t in rec.memory_plan["forward"])


def test_executorch_reads_embers_etrecord(mlp, cnn):
    """ExecuTorch's parse_etrecord reads ember's maps and its edge program
    (the delegated CNN's with the delegate's subgraph inlined), each node
    with ember's debug handle."""
    et_etrecord = pytest.importorskip("executorch.devtools.etrecord")
    for case in (mlp, cnn):
        r = et_etrecord.parse_etrecord(case["etrecord"])
        want = {m: {str(i): h for i, h in d.items()}
                for m, d in case["rec"].debug_handle_map.items()}
        assert r._debug_handle_map == want
        ep = r.edge_dialect_program
        assert ep is not None
        theirs: dict = {}
        for n in ep.graph.nodes:
            if n.op == "call_function" and "debug_handle" in n.meta:
                theirs.setdefault(n.meta["debug_handle"], []).append(str(n.target))
        ours = case["rec"].nodes["forward"]
        assert set(theirs) == set(ours)
        for h, n in ours.items():
            op = n.op.split("::")[1].split(".")[0]
            assert any(op in t for t in theirs[h]), (h, n.op, theirs[h])


def test_executorchs_inspector_with_embers_etrecord(mlp, cnn):
    """ExecuTorch's Inspector over ember's trace and ETRecord: operator types
    and module hierarchy per instruction; delegated nodes by operator and
    backend; the delegate call names its backend."""
    et_devtools = pytest.importorskip("executorch.devtools")
    i = et_devtools.Inspector(etdump_path=mlp["etdp"], etrecord=mlp["etrecord"])
    fwd = next(b for b in i.event_blocks if b.name == "forward")
    addmm = [e for e in fwd.events if e.name == "aten::addmm.out"]
    assert addmm and all(e.op_types == ["addmm.default"] for e in addmm)
    assert {"fc1", "fc2"} <= {fqn for e in addmm for stack in e.module_hierarchy.values()
                              for fqn, _ in stack.values()}
    i = et_devtools.Inspector(etdump_path=cnn["etdp"], etrecord=cnn["etrecord"])
    fwd = next(b for b in i.event_blocks if b.name == "forward")
    nodes = [e for e in fwd.events if e.is_delegated_op]
    assert nodes and all(e.delegate_backend_name == "XnnpackBackend" for e in nodes)
    ops = [set(e.op_types) for e in nodes]
    assert {"convolution.default", "_native_batch_norm_legit_no_training.default",
            "relu.default"} in ops
    assert {"linear.default"} in ops
    call = next(e for e in fwd.events if e.name == "DELEGATE_CALL")
    assert call.delegate_backend_name == "XnnpackBackend" and len(call.op_types) == 10


# --------------------------------------------------------------------- Inspector


def test_inspector_statistics_and_sources(mlp, capsys):
    insp = Inspector(etdump_path=mlp["etdp"], etrecord=mlp["etrecord"],
                     debug_buffer_path=mlp["debug"])
    fwd = insp.block("forward")
    assert fwd.runs == 3
    ops = [e for e in fwd.events if e.instruction_id >= 0]
    assert len(ops) >= 5
    for e in ops:
        s = e.perf_data
        assert s.count == 3
        assert s.min <= s.p50 <= s.p90 <= s.max and s.min <= s.avg <= s.max
        assert e.debug_handles and e.nodes and e.name == e.nodes[0].op.split("::")[1]
        assert e.source.startswith("aot_models.py:")
        assert len(e.debug_data) == 3
    linears = [e for e in ops if e.name == "addmm"]  # linear, decomposed
    assert [e.module for e in linears] == ["fc1", "fc2", "fc3"]
    assert "self.fc2(x)" in _model_line(linears[1].source)
    torch.testing.assert_close(fwd.run_output[0], mlp["outs"][0], rtol=0, atol=0)
    torch.testing.assert_close(ops[-1].debug_data[-1], mlp["outs"][0], rtol=0, atol=0)

    insp.print_data_tabular()
    out = capsys.readouterr().out
    for word in ("forward (3 runs)", "p90 ms", "addmm", "fc2", "aot_models.py:"):
        assert word in out
    df = insp.to_dataframe()
    assert len(df) == sum(len(b.events) for b in insp.event_blocks)
    assert {"event_name", "count", "min_ms", "avg_ms", "p50_ms", "p90_ms", "max_ms", "module",
            "source"} <= set(df.columns)


def test_timings_match_executorch_inspector(mlp):
    et_devtools = pytest.importorskip("executorch.devtools")
    ours = Inspector(etdump_path=mlp["etdp"])
    theirs = et_devtools.Inspector(etdump_path=mlp["etdp"])
    assert {b.name for b in theirs.event_blocks} == {b.name for b in ours.event_blocks}
    for b in theirs.event_blocks:
        want = sorted((e.name, tuple(round(t, 9) for t in e.perf_data.raw))
                      for e in b.events if e.perf_data is not None)
        got = sorted((e.raw_name, tuple(round(t, 9) for t in e.perf_data.raw))
                     for e in ours.block(b.name).events)
        assert got == want


def test_parse_etdump_matches_executorch(cnn):
    pytest.importorskip("executorch.devtools")
    from ember.devtools import read_etdump
    with open(cnn["etdp"], "rb") as f:
        data = f.read()
    ours, theirs = parse_etdump(data), read_etdump(data)
    assert len(ours.run_data) == len(theirs.run_data)
    for a, b in zip(ours.run_data, theirs.run_data):
        assert a.name == b.name
        prof = [(e.profile_event.name, e.profile_event.start_time, e.profile_event.end_time,
                 e.profile_event.delegate_debug_id_int) for e in b.events if e.profile_event]
        assert [(p.name, p.start_time, p.end_time, p.delegate_debug_id_int)
                for p in a.profile_events] == prof
        assert len(a.debug_events) == sum(1 for e in b.events if e.debug_event)


def test_delegated_nodes_by_name_and_slowest_to_source(cnn):
    insp = Inspector(etdump_path=cnn["etdp"], etrecord=cnn["etrecord"])
    fwd = insp.block("forward")
    nodes = [e for e in fwd.events if e.is_delegated_op]
    assert nodes and all(e.delegate_backend_name == "XnnpackBackend" for e in nodes)
    assert not any(e.name == "DELEGATE_CALL" for e in fwd.events)
    names = {e.name for e in nodes}
    # a convolution with its batch norm and relu folded in is named by all three
    assert "Conv2d (convolution+batch_norm+relu)" in names and "FullyConnected (linear)" in names
    call = next(e for e in fwd.events if e.raw_name == "DELEGATE_CALL")
    assert call.name.startswith("XnnpackBackend (")
    # the slowest node inside the delegate -> its debug handle -> the model's line
    slow = insp.slowest(1, delegated=True)[0]
    # the node's own handle first among those it computes (a folded batch norm, relu)
    handle = slow.delegate_debug_id
    assert handle in slow.debug_handles and handle == min(slow.debug_handles)
    src = insp.source_of(handle)
    line = _model_line(src.split("aot_models.py")[0].rsplit("/", 1)[-1] + "aot_models.py" +
                       src.split("aot_models.py")[1])
    op = insp.etrecord.node(handle).op
    want = {"aten::convolution": "self.conv", "aten::linear": "self.fc",
            "aten::max_pool2d_with_indices": "self.pool", "aten::mean.dim": "self.gap"}
    if op in want:
        assert want[op] in line, (op, line)
    # a pure-trace view still names delegate nodes by their node type
    bare = Inspector(etdump_path=cnn["etdp"])
    assert {"Conv2d #1", "FullyConnected #10"} <= {e.name for e in bare.block("forward").events}


# --------------------------------------------------------------------- numerics


def test_numeric_gap_against_eager(mlp, cnn):
    insp = Inspector(etdump_path=mlp["etdp"], etrecord=mlp["rec"], debug_buffer_path=mlp["debug"])
    rows = insp.calculate_numeric_gap(mlp["x"])  # the in-memory ETRecord holds the program
    assert len(rows) >= 5 and all(r["rel_err"] < 1e-5 for r in rows)
    assert insp.first_divergences(mlp["x"]) == []

    # a reference whose fc2 weight differs: the first divergence is in fc2
    # (the transpose of its weight, the first operator that reads it)
    ref = copy.deepcopy(mlp["edge"]).exported_program()
    key = next(k for k in ref.state_dict if k.startswith("fc2.weight"))
    with torch.no_grad():
        ref.state_dict[key].add_(0.05)
    first = insp.first_divergences(mlp["x"], reference=ref, rtol=1e-4, k=3)
    assert first and first[0]["module"] == "fc2"
    assert [r["event_name"] for r in first[:2]] == ["permute_copy", "addmm"]
    assert "self.fc2(x)" in _model_line(first[0]["source"].split(" in ")[0].rsplit("/", 1)[-1])

    # delegated: the delegate's output against the eager value of its last node;
    # every node inside the delegate has an eager value too
    from ember.devtools.numeric import eager_intermediates
    d = Inspector(etdump_path=cnn["etdp"], etrecord=cnn["etrecord"],
                  debug_buffer_path=cnn["debug"])
    rows = d.calculate_numeric_gap(cnn["x"], reference=cnn["edge"])
    assert rows and rows[-1]["backend"] == "XnnpackBackend" and rows[-1]["rel_err"] < 1e-4
    eager = eager_intermediates(cnn["edge"].exported_program(), cnn["x"])
    assert set(d.etrecord.nodes["forward"]) <= set(eager)


def test_numeric_gap_inside_the_delegate(cnn):
    """Each XNNPACK node's own output (in the delegate's channels-last layout)
    against eager, through the delegate map: a folded batch norm and relu
    count as the convolution's; a perturbed conv2 weight is caught at the
    second Conv2d node, inside the delegate, and leads to its source line."""
    insp = Inspector(etdump_path=cnn["etdp"], etrecord=cnn["etrecord"],
                     debug_buffer_path=cnn["debug"])
    rows = insp.calculate_numeric_gap(cnn["x"], reference=cnn["edge"])
    inside = [r for r in rows if not r["event_name"].startswith("XnnpackBackend (")]
    kinds = [r["event_name"].split(" ")[0] for r in inside]
    for kind in ("Conv2d", "MaxPooling2d", "GlobalAvgPooling2d", "FullyConnected"):
        assert kind in kinds, kinds
    assert kinds.count("Conv2d") == 2
    assert all(r["backend"] == "XnnpackBackend" and r["rel_err"] < 1e-4 for r in inside), inside
    conv = next(r for r in inside if r["event_name"].startswith("Conv2d"))
    node = insp.etrecord.node(conv["debug_handle"])
    assert node.op == "aten::relu"  # the fused conv + batch norm + relu's last node

    # the weights live in the lowered module's own program
    from ember.backend.lowered import LoweredBackendModule
    ref = copy.deepcopy(cnn["edge"]).exported_program()
    (lowered,) = [m for m in ref.graph_module.modules() if isinstance(m, LoweredBackendModule)]
    sub = lowered.original_module
    key = next(k for k in sub.state_dict if k.startswith("conv2.weight"))
    with torch.no_grad():
        sub.state_dict[key].add_(0.05)
    first = insp.first_divergences(cnn["x"], reference=ref, rtol=1e-4, k=3)
    assert first and first[0]["event_name"].startswith("Conv2d"), first
    assert first[0]["backend"] == "XnnpackBackend"
    assert "self.conv2(x)" in _model_line(first[0]["source"].split(" in ")[0].rsplit("/", 1)[-1])
    # everything before conv2 still agrees
    before = rows[:rows.index(next(r for r in rows if r["event_name"] == first[0]["event_name"]
                                   and r["debug_handle"] == first[0]["debug_handle"]))]
    assert all(r["rel_err"] < 1e-4 for r in before if r["event_name"].split(" ")[0] in
               ("Conv2d", "MaxPooling2d"))


def test_delegate_outputs_in_executorchs_inspector(cnn):
    """ExecuTorch's Inspector reads the delegate's per-node outputs from
    ember's trace and debug buffer, on its delegated events."""
    et_devtools = pytest.importorskip("executorch.devtools")
    theirs = et_devtools.Inspector(etdump_path=cnn["etdp"], debug_buffer_path=cnn["debug"])
    fwd = next(b for b in theirs.event_blocks if b.name == "forward")
    delegated = [e for e in fwd.events if e.is_delegated_op]
    assert delegated and all(e.debug_data for e in delegated)
    ours = Inspector(etdump_path=cnn["etdp"], debug_buffer_path=cnn["debug"])
    fc = next(e for e in ours.block("forward").events if e.name.startswith("FullyConnected"))
    theirs_fc = next(e for e in delegated if e.delegate_debug_identifier == fc.delegate_debug_id)
    torch.testing.assert_close(theirs_fc.debug_data[-1], fc.debug_data[-1], rtol=0, atol=0)
    torch.testing.assert_close(fc.debug_data[-1], cnn["model"](*cnn["x"]).detach(),
                               rtol=1e-4, atol=1e-5)


def test_delegate_output_stats(cnn):
    """debug_outputs='stats' fingerprints each delegated node's output too."""
    method = Runtime.get().load_program(cnn["pte"]).load_method(
        "forward", 1, event_tracer=EventTracerConfig(debug_outputs="stats"))
    method.execute(list(cnn["x"]))
    tmp = cnn["tmp"]
    etdp, debug = os.path.join(tmp, "stats.etdp"), os.path.join(tmp, "stats.debug")
    method.write_etdump(etdp, debug)
    insp = Inspector(etdump_path=etdp, debug_buffer_path=debug)
    nodes = [e for e in insp.block("forward").events if e.is_delegated_op and e.debug_data]
    assert len(nodes) >= 5
    for e in nodes:
        s = e.debug_data[-1]
        assert tuple(s.shape) == (5,) and s.dtype == torch.float64
        assert float(s[2]) <= float(s[4]) <= float(s[3])  # min <= mean <= max


def test_numeric_gap_from_the_etrecord_file(mlp, cnn):
    """An ETRecord read from its file carries the edge program (the delegated
    one inlined), so numeric debugging needs nothing else; one read without
    its programs asks for reference=."""
    for case in (mlp, cnn):
        insp = Inspector(etdump_path=case["etdp"], etrecord=case["etrecord"],
                         debug_buffer_path=case["debug"])
        rows = insp.calculate_numeric_gap(case["x"])
        assert len(rows) >= 5 and all(r["rel_err"] < 1e-4 for r in rows), rows
    bare = parse_etrecord(mlp["etrecord"], load_programs=False)
    insp = Inspector(etdump_path=mlp["etdp"], etrecord=bare, debug_buffer_path=mlp["debug"])
    with pytest.raises(ValueError, match="reference="):
        insp.calculate_numeric_gap(mlp["x"])


# --------------------------------------------------------------------- bad files


def test_corrupted_etdump(mlp, tmp_path):
    with open(mlp["etdp"], "rb") as f:
        good = f.read()
    for bad in (b"", b"garbage", good[: len(good) // 2], b"\0" * 64):
        with pytest.raises(ETDumpError):
            Inspector(etdump_data=bad)
    # every single flipped byte: a clean error or a readable trace, nothing else
    for i in range(0, len(good), 3):
        data = bytearray(good)
        data[i] ^= 0xFF
        try:
            Inspector(etdump_data=bytes(data), debug_buffer=b"")
        except ETDumpError:
            pass
    with pytest.raises(ETDumpError, match="cannot read"):
        Inspector(etdump_path=str(tmp_path / "missing.etdp"))
    # a debug buffer too short for the tensors the trace refers to
    with open(mlp["debug"], "rb") as f:
        debug = f.read()
    with pytest.raises(ETDumpError, match="outside the debug buffer"):
        Inspector(etdump_data=good, debug_buffer=debug[:16])


def _rezip(src, dst, edit):
    with zipfile.ZipFile(src) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    edit(entries)
    with zipfile.ZipFile(dst, "w") as z:
        for n, b in entries.items():
            z.writestr(n, b)
    return dst


def test_corrupted_etrecord(mlp, tmp_path):
    src = mlp["etrecord"]
    bad = tmp_path / "bad.etrecord"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ETRecordError, match="not a zip"):
        parse_etrecord(str(bad))
    with open(src, "rb") as f:
        good = f.read()
    bad.write_bytes(good[: len(good) // 2])
    with pytest.raises(ETRecordError):
        parse_etrecord(str(bad))
    with pytest.raises(ETRecordError, match="no such file"):
        parse_etrecord(str(tmp_path / "missing"))
    cases = {
        "no ETRECORD_V0": lambda e: e.pop("ETRECORD_V0"),
        "debug_handle_map": lambda e: e.__setitem__("debug_handle_map", b"{not json"),
        "instruction id": lambda e: e.__setitem__("debug_handle_map", b'{"forward": {"x": [1]}}'),
        "malformed": lambda e: e.__setitem__(
            "ember_debug_info_example_inputs",
            json.dumps({"version": 1, "nodes": {"forward": {"1": {}}}}).encode()),
        "version": lambda e: e.__setitem__("ember_debug_info_example_inputs", b"[]"),
    }
    for i, (msg, edit) in enumerate(cases.items()):
        path = _rezip(src, str(tmp_path / f"case{i}.etrecord"), edit)
        with pytest.raises(ETRecordError, match=msg):
            Inspector(etdump_path=mlp["etdp"], etrecord=path)
    # every flipped byte: a clean error or a readable record, nothing else
    for i in range(0, len(good), 7):
        data = bytearray(good)
        data[i] ^= 0xFF
        try:
            parse_etrecord(io.BytesIO(bytes(data)))
        except ETRecordError:
            pass
    with pytest.raises(ETRecordError, match="EdgeProgramManager"):
        generate_etrecord(io.BytesIO(), object(), object())


# --------------------------------------------------------------------- plots, CLI


def test_ember_inspect_writes_table_and_plots(cnn, mlp, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from ember.devtools.cli import main
    out = tmp_path / "plots"
    csv = tmp_path / "events.csv"
    assert main(["--etdump", cnn["etdp"], "--etrecord", cnn["etrecord"], "--plots", str(out),
                 "--csv", str(csv)]) == 0
    text = capsys.readouterr().out
    assert "Conv2d (convolution+batch_norm+relu)" in text and "slowest" in text and "aot_models.py:" in text
    for name in ("op_times.png", "timeline.png", "memory_plan.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    assert csv.read_text().startswith("event_block_name,")
    bad = tmp_path / "bad.etdp"
    bad.write_bytes(b"nope, not a trace")
    assert main(["--etdump", str(bad)]) == 1
    assert "ember-inspect: not an ETDump" in capsys.readouterr().err


def test_ember_inspect_is_installed(cnn, tmp_path):
    import shutil
    import subprocess
    import sys
    exe = shutil.which("ember-inspect", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("ember-inspect is not installed next to this Python (pip install -e .)")
    r = subprocess.run([exe, "--etdump", cnn["etdp"], "--etrecord", cnn["etrecord"],
                        "--block", "forward", "--slowest", "2"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "forward (2 runs)" in r.stdout and "XnnpackBackend (" in r.stdout
    r = subprocess.run([exe, "--etdump", cnn["etrecord"]], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr


def test_seeds_profiling_flow_with_ember_imports(tmp_path, capsys):
    """The profiling steps of ExecuTorch's LLM manual, imports changed to
    ember's: ETRecord at export, ember-run --etdump, the Inspector's table."""
    import shutil
    import subprocess
    import sys

    import numpy as np

    from ember import EdgeCompileConfig
    from ember import to_edge as ember_to_edge
    from ember.devtools import Inspector as EmberInspector
    from ember.devtools import generate_etrecord as ember_generate_etrecord

    exe = shutil.which("ember-run", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("ember-run is not installed next to this Python (pip install -e .)")
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(4, 16)
    traced_model = torch.export.export(model, (x,))
    edge_config = EdgeCompileConfig(_check_ir_validity=False)
    edge_manager = ember_to_edge(traced_model, compile_config=edge_config)
    edge_manager_copy = copy.deepcopy(edge_manager)
    et_program_manager = edge_manager.to_executorch()
    etrecord_path = str(tmp_path / "etrecord.bin")
    ember_generate_etrecord(etrecord_path, edge_manager_copy, et_program_manager)
    pte = tmp_path / "mlp.pte"
    pte.write_bytes(et_program_manager.buffer)
    np.save(tmp_path / "x.npy", x.numpy())
    etdump = str(tmp_path / "etdump.etdp")
    r = subprocess.run([exe, str(pte), "--input", str(tmp_path / "x.npy"), "--iterations", "4",
                        "--etdump", etdump, "--debug-outputs"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr

    inspector = EmberInspector(etdump_path=etdump, etrecord=etrecord_path,
                               debug_buffer_path=etdump + ".debug")
    inspector.print_data_tabular()
    out = capsys.readouterr().out
    assert "addmm" in out and "fc2" in out and "aot_models.py:19" in out
    fwd = inspector.block("forward")
    assert {e.perf_data.count for e in fwd.events if e.instruction_id >= 0} == {4}
    rows = inspector.calculate_numeric_gap([x], reference=edge_manager_copy)
    assert rows and max(r["rel_err"] for r in rows) < 1e-5

    # the same from the Python runtime, in process
    method = Runtime.get().load_program(et_program_manager.buffer).load_method(
        "forward", 1, event_tracer=EventTracerConfig(debug_outputs="full"))
    method.execute([x])
    live = EmberInspector.from_method(method, etrecord=etrecord_path)
    assert [e.name for e in live.block().events] == [e.name for e in fwd.events]
    assert live.calculate_numeric_gap([x], reference=edge_manager_copy)


def test_reads_executorchs_etrecord(tmp_path):
    """An ETRecord from ExecuTorch's generate_etrecord: ember's Inspector takes
    its maps (its edge program is in ExecuTorch's own serialization: noted,
    not loaded) and names the delegate by the backend the map gives."""
    pytest.importorskip("executorch.devtools")
    from test_devtools_etdump import _et_export
    torch.manual_seed(0)
    x = (torch.randn(1, 3, 16, 16),)
    pte, etrecord = _et_export(CNN().eval(), x, str(tmp_path), xnnpack=True)
    etdp, _, _ = _trace(pte, x, str(tmp_path), runs=2)
    rec = parse_etrecord(etrecord)
    assert rec.debug_handle_map["forward"] and rec.notes
    fwd = Inspector(etdump_path=etdp, etrecord=etrecord).block("forward")
    call = next(e for e in fwd.events if e.raw_name == "DELEGATE_CALL")
    assert call.delegate_backend_name == "XnnpackBackend" and call.debug_handles
    assert "Conv2d #1" in {e.name for e in fwd.events if e.is_delegated_op}
