"""Delegation end to end through the C runtime, with the demo backend.

EmberTestBackend's runtime half (tests/c/backends/embt_backend.c) is built
here as a shared library against the package's libember.so and loaded with
`ember.runtime.load_library`; ember lowers to it with tests/python/embt.py.
Covered: the three lowering flows (partitioner, whole program, composition
into a bigger exported model), the delegation summary and formatted graph,
debug handles from the edge graph to the instructions, and a failing
delegate naming its node's debug handle, which leads back to the source line.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import List

import pytest
import torch

import ember.runtime as rt
from ember import to_edge, to_edge_transform_and_lower
from ember.backend import CompileSpec, format_delegated_graph, get_lowered_modules, to_backend
from ember.devtools import get_delegation_info
from embt import ember_backend, embt_specs

ROOT = Path(__file__).resolve().parents[2]
EmberTestBackend, EmberTestPartitioner = ember_backend()


def _build_library(tmp: Path, source: Path, name: str) -> Path:
    out = tmp / name
    subprocess.run(
        [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-std=c11", "-O1",
         f"-I{ROOT / 'include'}", f"-I{ROOT / 'tests' / 'c'}", str(source), "-o", str(out),
         f"-L{rt.library_dir()}", "-l:libember.so.0", "-lm"],
        check=True, capture_output=True, text=True)
    return out


@pytest.fixture(scope="module")
def demo_backend(tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("embt")
    lib = _build_library(tmp, ROOT / "tests/c/backends/embt_plugin.c", "libembt.so")
    rt.load_library(lib)
    assert rt.has_backend("EmberTestBackend")


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 8)
        self.fc2 = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        d = torch.relu(h * 3.0 + y) - y  # the demo backend takes these four ops
        return self.fc2(d)


def _inputs(seed: int) -> List[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, 8, generator=g), torch.randn(2, 8, generator=g)]


def _run(buffer: bytes, inputs: List[torch.Tensor]) -> List[torch.Tensor]:
    return rt.Runtime.get().load_program(buffer).load_method("forward").execute(inputs)


def test_partitioned_model_runs_in_libember(demo_backend: None) -> None:
    model = Model().eval()
    ep = torch.export.export(model, tuple(_inputs(0)))
    edge = to_edge_transform_and_lower(ep, partitioner=[EmberTestPartitioner()])
    prog = edge.to_executorch()
    method = rt.Runtime.get().load_program(prog.buffer).load_method("forward")
    for seed in range(3):
        xs = _inputs(seed)
        (out,) = method.execute(xs)
        torch.testing.assert_close(out, model(*xs).detach(), rtol=1e-5, atol=1e-6)


def test_delegation_summary_and_graph() -> None:
    ep = torch.export.export(Model().eval(), tuple(_inputs(0)))
    gm = to_edge(ep).to_backend(EmberTestPartitioner()).exported_program().graph_module
    info = get_delegation_info(gm)
    assert info.num_delegated_subgraphs == 1
    assert info.num_delegated_nodes == 4  # mul, add, relu, sub
    assert info.num_non_delegated_nodes == 4  # two linears: permute_copy + addmm each
    assert info.get_summary().splitlines() == [
        "Total delegated subgraphs: 1",
        "Number of delegated nodes: 4",
        "Number of non-delegated nodes: 4"]
    rows = {r[0]: tuple(r[1:]) for r in info.operator_rows()}
    assert rows["aten.mul.Tensor"] == (1, 0)
    assert rows["aten.sub.Tensor"] == (1, 0)
    assert rows["aten.addmm.default"] == (0, 2)
    assert rows["Total"] == (4, 4)
    assert "occurrences_in_delegated_graphs" in info.format_operator_table()
    df = info.get_operator_delegation_dataframe()
    assert list(df["op_type"])[-1] == "Total"

    text = format_delegated_graph(gm)
    assert "backend_id: EmberTestBackend" in text
    assert "compile_spec: ember.dtype = b'float32'" in text
    nested = text.split("lowered graph:")[1]
    assert "aten.relu.default" in nested and "debug_handle=" in nested


def test_debug_handles_follow_nodes_into_instructions() -> None:
    ep = torch.export.export(Model().eval(), tuple(_inputs(0)))
    edge = to_edge(ep).to_backend(EmberTestPartitioner())
    (_, lowered), = get_lowered_modules(edge.exported_program())
    prog = edge.to_executorch()
    handles = prog.debug_handle_map["forward"]
    delegate_handles = lowered.debug_handles()
    assert len(delegate_handles) == 4
    assert delegate_handles in list(handles.values())  # the DelegateCall's entry
    # every handle is unique across instructions, and leads to a node
    flat = [h for hs in handles.values() for h in hs]
    assert len(flat) == len(set(flat))
    ops = {prog.debug_handle_info(h).operator for h in delegate_handles}
    assert ops == {"aten::mul.Tensor", "aten::add.Tensor", "aten::relu", "aten::sub.Tensor"}
    (entry,) = prog.delegate_map["forward"].values()
    assert entry["name"] == "EmberTestBackend"
    assert sorted(entry["delegate_map"]) == delegate_handles


def test_failing_delegate_names_the_node_and_its_source_line(demo_backend: None) -> None:
    class Overflow(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            a = x + y
            b = a * a  # overflows to inf for large inputs
            return torch.relu(b - y)

    xs = [torch.ones(4), torch.ones(4)]
    ep = torch.export.export(Overflow(), tuple(xs))
    prog = to_edge(ep).to_backend(EmberTestPartitioner(check_finite=True)).to_executorch()
    method = rt.Runtime.get().load_program(prog.buffer).load_method("forward")
    (out,) = method.execute(xs)
    torch.testing.assert_close(out, torch.full((4,), 3.0))
    with pytest.raises(rt.EmberError) as err:
        method.execute([torch.full((4,), 1e30), torch.ones(4)])
    e = err.value
    assert e.status_name == "DELEGATE_FAILED"
    assert e.debug_handle is not None
    assert f"debug handle {e.debug_handle}" in e.message
    info = prog.debug_handle_info(e.debug_handle)
    assert info.operator == "aten::mul.Tensor"
    assert "test_aot_delegate_runtime.py" in info.source and "b = a * a" in info.source
    # errors that no delegate attributed carry no handle
    with pytest.raises(rt.EmberError) as err2:
        method.execute([torch.ones(5), torch.ones(5)])
    assert err2.value.debug_handle is None


def _whole_program_lowered():
    class Small(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.relu(x * y + x)

    ep = torch.export.export(Small(), (torch.randn(4), torch.randn(4)))
    lowered = to_backend("EmberTestBackend", to_edge(ep).exported_program(),
                         [CompileSpec(k, v) for k, v in embt_specs()])
    return Small(), lowered


def test_whole_program_lowering(demo_backend: None) -> None:
    small, lowered = _whole_program_lowered()
    assert lowered.backend_id == "EmberTestBackend"
    xs = [torch.randn(4), torch.randn(4)]
    torch.testing.assert_close(lowered(*xs), small(*xs))  # eager fallback
    prog = lowered.program()
    plan = prog.program.execution_plan[0]
    assert [type(i.instr_args).__name__ for i in plan.chains[0].instructions] == ["DelegateCall"]
    (out,) = _run(lowered.buffer(), xs)
    torch.testing.assert_close(out, small(*xs), rtol=1e-5, atol=1e-6)


def test_lowered_module_composes_into_a_bigger_model(demo_backend: None) -> None:
    small, lowered = _whole_program_lowered()

    class Composite(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lowered = lowered
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return self.fc(self.lowered(x, y) * 2.0)

    model = Composite().eval()
    xs = [torch.randn(4), torch.randn(4)]
    ep = torch.export.export(model, tuple(xs))
    edge = to_edge(ep)
    info = get_delegation_info(edge.exported_program().graph_module)
    assert info.num_delegated_subgraphs == 1 and info.num_delegated_nodes == 3
    (out,) = _run(edge.to_executorch().buffer, xs)
    torch.testing.assert_close(out, model(*xs).detach(), rtol=1e-5, atol=1e-6)


def test_load_library_errors(tmp_path: Path) -> None:
    with pytest.raises(rt.EmberError) as err:
        rt.load_library(tmp_path / "missing.so")
    assert err.value.status_name == "NOT_FOUND"

    src = tmp_path / "noentry.c"
    src.write_text("int ember_unrelated(void);\nint ember_unrelated(void) { return 1; }\n")
    lib = _build_library(tmp_path, src, "libnoentry.so")
    with pytest.raises(rt.EmberError, match="no ember_library_register"):
        rt.load_library(lib)

    src = tmp_path / "failing.c"
    src.write_text('#include "ember/ember.h"\n'
                   "ember_status ember_library_register(void);\n"
                   "ember_status ember_library_register(void) {\n"
                   '    return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "refused: %d", 7);\n'
                   "}\n")
    lib = _build_library(tmp_path, src, "libfailing.so")
    with pytest.raises(rt.EmberError, match="refused: 7") as err:
        rt.load_library(lib)
    assert err.value.status_name == "INVALID_ARGUMENT"
