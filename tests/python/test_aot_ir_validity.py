"""Edge IR validity: ops outside core ATen are rejected with the op and its source line."""

from __future__ import annotations

import copy
import re

import pytest
import torch

from aot_models import MLP, CumProd
from ember import EdgeCompileConfig, ExecutorchBackendConfig, ExportError, IRValidityError, to_edge


def _export_cumprod():
    return torch.export.export(CumProd(), (torch.randn(3, 4),))


def test_non_core_op_is_rejected_with_op_name_and_source_line() -> None:
    with pytest.raises(IRValidityError) as info:
        to_edge(_export_cumprod())
    msg = str(info.value)
    assert "aten::cumprod" in msg
    # points at the user's line, not at torch internals
    assert re.search(r"aot_models\.py:\d+ in forward: `return torch\.cumprod\(y, dim=1\)`", msg), msg
    assert "_core_aten_ops_exception_list" in msg and "_check_ir_validity=False" in msg


def test_check_can_be_switched_off() -> None:
    edge = to_edge(_export_cumprod(), compile_config=EdgeCompileConfig(_check_ir_validity=False))
    targets = {str(n.target) for n in edge.exported_program().graph.nodes}
    assert "aten.cumprod.default" in targets


def test_exception_list_allows_the_op() -> None:
    cfg = EdgeCompileConfig(_core_aten_ops_exception_list=[torch.ops.aten.cumprod.default])
    edge = to_edge(_export_cumprod(), compile_config=cfg)
    assert any(n.target is torch.ops.aten.cumprod.default
               for n in edge.exported_program().graph.nodes)


def test_preserve_ops_keeps_an_op_whole() -> None:
    ep = torch.export.export(MLP().eval(), (torch.randn(2, 16),))
    cfg = EdgeCompileConfig(preserve_ops=[torch.ops.aten.linear.default])
    edge = to_edge(ep, compile_config=cfg)
    targets = [n.target for n in edge.exported_program().graph.nodes if n.op == "call_function"]
    assert targets.count(torch.ops.aten.linear.default) == 3


def test_missing_runtime_kernel_is_reported_at_export() -> None:
    ep = torch.export.export(MLP().eval(), (torch.randn(2, 16),))
    kernels = {"aten::permute_copy.out", "aten::addmm.out"}  # no relu
    with pytest.raises(ExportError) as info:
        to_edge(ep).to_executorch(ExecutorchBackendConfig(available_kernels=kernels))
    msg = str(info.value)
    assert "aten::relu.out" in msg and re.search(r"aot_models\.py:\d+ in forward", msg), msg


def test_edge_program_uses_copy_and_dim_order_ops() -> None:
    class M(torch.nn.Module):
        def forward(self, x):
            y = x.transpose(0, 1).contiguous().view(-1)
            return y.to(torch.float64), x.clone()

    edge = to_edge(torch.export.export(M(), (torch.randn(3, 4),)))
    names = {n.target.name() for n in edge.exported_program().graph.nodes
             if n.op == "call_function" and hasattr(n.target, "name")}
    assert "aten::permute_copy" in names and "aten::view_copy" in names
    assert {"ember_dim_order::_to_dim_order_copy", "ember_dim_order::_clone_dim_order"} <= names
    assert not {"aten::view", "aten::permute", "aten::_to_copy", "aten::clone"} & names
    # the edge program still runs eagerly
    x = torch.randn(3, 4)
    out = edge.exported_program().module()(x)
    torch.testing.assert_close(out[0], x.t().reshape(-1).double())


def test_skip_dim_order_keeps_memory_format_ops() -> None:
    from aot_util import read_program, run_and_compare

    class M(torch.nn.Module):
        def forward(self, x):
            return x.to(torch.float64).clone() * 2

    m = M()
    edge = to_edge(torch.export.export(m, (torch.randn(3),)),
                   compile_config=EdgeCompileConfig(_skip_dim_order=True))
    prog = edge.to_executorch()
    ops = {f"{o.name}.{o.overload}" for o in read_program(prog.buffer).execution_plan[0].operators}
    assert {"aten::_to_copy.out", "aten::clone.out"} <= ops
    run_and_compare(m, [(torch.randn(3),)], prog.buffer)


def _cumprod_edge():
    return to_edge(_export_cumprod(), compile_config=EdgeCompileConfig(_check_ir_validity=False))


def test_kernel_check_is_on_by_default_and_backed_by_the_runtime() -> None:
    runtime = pytest.importorskip("ember.runtime")
    assert not runtime.has_kernel("aten::cumprod.out")
    with pytest.raises(ExportError) as info:
        _cumprod_edge().to_executorch()
    msg = str(info.value)
    assert "aten::cumprod.out" in msg, msg
    assert re.search(r"aot_models\.py:\d+ in forward: `return torch\.cumprod\(y, dim=1\)`", msg), msg
    assert "register a custom kernel" in msg and "delegate it" in msg, msg
    assert "check_kernels=False" in msg
    # ops that do have kernels are not listed
    assert "aten::add" not in msg


def test_kernel_check_can_be_switched_off() -> None:
    from aot_util import read_program

    prog = _cumprod_edge().to_executorch(ExecutorchBackendConfig(check_kernels=False))
    ops = {f"{o.name}.{o.overload}" for o in read_program(prog.buffer).execution_plan[0].operators}
    assert "aten::cumprod.out" in ops


def test_every_operator_of_a_checked_program_has_a_runtime_kernel() -> None:
    from aot_util import read_program
    from aot_models import CNN

    runtime = pytest.importorskip("ember.runtime")
    prog = to_edge(torch.export.export(CNN().eval(), (torch.randn(1, 3, 8, 8),))).to_executorch()
    for o in read_program(prog.buffer).execution_plan[0].operators:
        key = f"{o.name}.{o.overload}" if o.overload else o.name
        assert runtime.has_kernel(key), key


def test_kernel_check_is_skipped_with_a_warning_without_bindings(monkeypatch) -> None:
    import sys

    import ember.program as program

    monkeypatch.setitem(sys.modules, "ember.runtime", None)  # import fails
    monkeypatch.setattr(program, "_warned_no_runtime", False)
    with pytest.warns(RuntimeWarning, match="ember.runtime is not importable"):
        prog = _cumprod_edge().to_executorch()
    assert prog.buffer


class _TrainingBatchNorm(torch.nn.Module):
    """Batch norm in training mode, returning its running stats after the update."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(3, momentum=0.25)

    def forward(self, x: torch.Tensor):
        y = self.bn(x)
        return y, self.bn.running_mean + 0, self.bn.running_var + 0


def test_training_batch_norm_updates_its_running_stats_in_place() -> None:
    from ember.runtime import Runtime

    torch.manual_seed(0)
    model = _TrainingBatchNorm().train()
    x1, x2 = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5) * 3 + 1
    ep = torch.export.export(copy.deepcopy(model), (x1,))
    prog = to_edge(ep).to_executorch()
    # the functional variant torch traces runs as the core op, in place
    targets = [str(n.target) for n in prog.execution_graph("forward").graph.nodes]
    assert "aten._native_batch_norm_legit.out" in targets
    method = Runtime.get().load_program(prog.buffer).load_method("forward")
    for x in (x1, x2):  # the second call starts from the stats the first one left
        with torch.no_grad():
            want = model(x)
        got = method.execute([x])
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)
