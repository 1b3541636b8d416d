"""Memory planning: lifetimes, sharing, switches, several buffers, the report."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch.export import Dim

from aot_models import MLP, AttentionBlock, Stateful, TinyKVDecoder
from aot_util import export, load_reference, read_program, run_and_compare
from ember import ExecutorchBackendConfig, MemoryPlanningPass
from ember.memory_planning import tensor_lifetimes


def _block_program(planner: MemoryPlanningPass):
    m = AttentionBlock().eval()
    T = Dim("T", min=1, max=AttentionBlock.MAX_T)
    prog = export(m, (torch.randn(1, 8, 32),), dynamic_shapes={"x": {1: T}},
                  config=ExecutorchBackendConfig(memory_planning_pass=planner))
    return m, prog


def _assert_no_live_overlap(prog, method: str = "forward") -> None:
    specs = [s for _, s in tensor_lifetimes(prog.execution_graph(method))]
    for a, b in itertools.combinations(specs, 2):
        if a.mem_id != b.mem_id or a.nbytes == 0 or b.nbytes == 0:
            continue
        live = a.lifetime[0] <= b.lifetime[1] and b.lifetime[0] <= a.lifetime[1]
        disjoint = (a.mem_offset + a.nbytes <= b.mem_offset
                    or b.mem_offset + b.nbytes <= a.mem_offset)
        assert not live or disjoint, f"{a} and {b} are live together and overlap"


@pytest.fixture(scope="module")
def block_program():
    return _block_program(MemoryPlanningPass())


def test_transformer_block_peak_is_below_naive_sum(block_program, record_property) -> None:
    m, prog = block_program
    plan = prog.memory_plans["forward"]
    planned, naive = plan.planned_bytes, plan.naive_bytes
    record_property("planned_bytes", planned)
    record_property("naive_bytes", naive)
    print(f"\ntransformer block: planned {planned} bytes, naive sum {naive} bytes "
          f"({1 - planned / naive:.0%} saved)\n" + prog.memory_planning_report())
    assert 0 < planned <= naive
    assert planned < naive / 2  # activations of a block are short-lived
    _assert_no_live_overlap(prog)
    sizes = read_program(prog.buffer).execution_plan[0].non_const_buffer_sizes
    assert list(sizes) == [0, planned]
    run_and_compare(m, [(torch.randn(1, t, 32),) for t in (4, 16)], prog.buffer)


def test_naive_algorithm_uses_the_naive_sum() -> None:
    m, prog = _block_program(MemoryPlanningPass(algorithm="naive"))
    plan = prog.memory_plans["forward"]
    assert plan.planned_bytes == plan.naive_bytes
    run_and_compare(m, [(torch.randn(1, 5, 32),)], prog.buffer)


def test_alignment_option() -> None:
    m, prog = _block_program(MemoryPlanningPass(alignment=64))
    for _, spec in tensor_lifetimes(prog.execution_graph()):
        assert spec.mem_offset % 64 == 0
    _assert_no_live_overlap(prog)
    run_and_compare(m, [(torch.randn(1, 7, 32),)], prog.buffer)


def test_mutable_buffer_in_its_own_memory_id() -> None:
    planner = MemoryPlanningPass(buffer_memory_ids={"acc": 2})
    prog = export(Stateful(), (torch.randn(2, 4),),
                  config=ExecutorchBackendConfig(memory_planning_pass=planner))
    plan = read_program(prog.buffer).execution_plan[0]
    assert len(plan.non_const_buffer_sizes) == 3 and plan.non_const_buffer_sizes[2] == 32
    acc = [v.val for v in plan.values if type(v.val).__name__ == "Tensor"
           and v.val.allocation_info is not None and v.val.allocation_info.memory_id == 2]
    assert len(acc) == 1 and list(acc[0].sizes) == [2, 4] and acc[0].data_buffer_idx > 0
    run_and_compare(Stateful(), [(torch.randn(2, 4),) for _ in range(3)], prog.buffer)


def test_memory_id_hook() -> None:
    def big_in_buffer_2(node, spec):
        return 2 if spec.nbytes >= 512 else None

    m = MLP().eval()
    prog = export(m, (torch.randn(4, 16),),
                  config=ExecutorchBackendConfig(
                      memory_planning_pass=MemoryPlanningPass(memory_id=big_in_buffer_2)))
    sizes = prog.memory_plans["forward"].buffer_sizes
    assert len(sizes) == 3 and sizes[1] > 0 and sizes[2] > 0
    run_and_compare(m, [(torch.randn(4, 16),)], prog.buffer)


def test_unplanned_graph_inputs() -> None:
    m = MLP().eval()
    prog = export(m, (torch.randn(4, 16),), config=ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False)))
    plan = read_program(prog.buffer).execution_plan[0]
    x = plan.values[plan.inputs[0]].val
    assert x.allocation_info is None and x.data_buffer_idx == 0
    run_and_compare(m, [(torch.randn(4, 16),), (torch.randn(4, 16),)], prog.buffer)


def test_unplanned_graph_outputs() -> None:
    prog = export(MLP().eval(), (torch.randn(4, 16),), config=ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(alloc_graph_output=False)))
    plan = read_program(prog.buffer).execution_plan[0]
    out = plan.values[plan.outputs[0]].val
    assert out.allocation_info is None
    inp = plan.values[plan.inputs[0]].val
    assert inp.allocation_info is not None


def test_report_lists_planned_and_naive_bytes(block_program) -> None:
    _, prog = block_program
    report = prog.memory_planning_report()
    plan = prog.memory_plans["forward"]
    assert "planned bytes" in report and "naive sum" in report
    assert str(plan.planned_bytes) in report and str(plan.naive_bytes) in report


def test_kv_cache_in_buffer_2_keeps_state() -> None:
    m = TinyKVDecoder().eval()
    T = Dim("T", min=1, max=8)
    planner = MemoryPlanningPass(buffer_memory_ids={"k_cache": 2, "v_cache": 2})
    prog = export(m, (torch.tensor([[1, 2, 3]]), torch.arange(3)),
                  dynamic_shapes={"tokens": {1: T}, "pos": {0: T}},
                  config=ExecutorchBackendConfig(memory_planning_pass=planner))
    sizes = prog.memory_plans["forward"].buffer_sizes
    assert sizes[2] == 2 * 32 * 16 * 4  # both caches, nothing else
    method = load_reference(prog.buffer)
    steps = [(torch.tensor([[1, 2, 3]]), torch.arange(3)),  # prefill
             (torch.tensor([[4]]), torch.tensor([3])),  # decode steps
             (torch.tensor([[5, 6]]), torch.tensor([4, 5]))]
    for tokens, pos in steps:
        with torch.no_grad():
            expected = m(tokens, pos)
        torch.testing.assert_close(method.execute([tokens, pos])[0], expected,
                                   rtol=1e-5, atol=1e-6)
