"""Models exported with ember run in the reference ExecuTorch runtime and match eager."""

from __future__ import annotations

import torch
from torch.export import Dim

from aot_models import (
    CNN,
    MLP,
    AttentionBlock,
    Branchy,
    DictOut,
    EncoderDecoder,
    InputMutation,
    IntBoolOps,
    ListOut,
    SplitOut,
    Stateful,
    SymArith,
    TupleOut,
)
from aot_util import export, load_reference, read_program, run_and_compare
from ember import ExecutorchBackendConfig, to_edge


def setup_module() -> None:
    torch.manual_seed(0)


def test_mlp() -> None:
    m = MLP().eval()
    prog = export(m, (torch.randn(4, 16),))
    run_and_compare(m, [(torch.randn(4, 16),), (torch.randn(4, 16),)], prog.buffer)


def test_cnn_conv_batchnorm_pool() -> None:
    m = CNN().eval()
    prog = export(m, (torch.randn(1, 3, 16, 16),))
    run_and_compare(m, [(torch.randn(1, 3, 16, 16),)], prog.buffer)
    ops = set(n for p in read_program(prog.buffer).execution_plan for n in
              (f"{o.name}.{o.overload}" for o in p.operators))
    assert {"aten::convolution.out", "aten::_native_batch_norm_legit_no_training.out",
            "aten::max_pool2d_with_indices.out"} <= ops


def test_attention_block_dynamic_seq() -> None:
    m = AttentionBlock().eval()
    T = Dim("T", min=1, max=AttentionBlock.MAX_T)
    prog = export(m, (torch.randn(1, 8, 32),), dynamic_shapes={"x": {1: T}})
    runs = [(torch.randn(1, t, 32),) for t in (3, 8, 16, 1, 11)]
    run_and_compare(m, runs, prog.buffer)
    plan = read_program(prog.buffer).execution_plan[0]
    x = plan.values[plan.inputs[0]].val
    assert list(x.sizes) == [1, 16, 32] and int(x.shape_dynamism) == 1  # DYNAMIC_BOUND
    ops = {f"{o.name}.{o.overload}" for o in plan.operators}
    assert "aten::sym_size.int" in ops and "executorch_prim::et_view.default" in ops


def test_attention_block_without_views_uses_view_copy() -> None:
    m = AttentionBlock().eval()
    T = Dim("T", min=1, max=AttentionBlock.MAX_T)
    prog = export(m, (torch.randn(1, 8, 32),), dynamic_shapes={"x": {1: T}},
                  config=ExecutorchBackendConfig(remove_view_copy=False))
    run_and_compare(m, [(torch.randn(1, t, 32),) for t in (5, 16)], prog.buffer)
    ops = {f"{o.name}.{o.overload}" for o in read_program(prog.buffer).execution_plan[0].operators}
    assert "aten::view_copy.out" in ops and "executorch_prim::et_view.default" not in ops


def test_mutable_buffer_state_persists() -> None:
    m = Stateful()
    prog = export(Stateful(), (torch.randn(2, 4),))
    runs = [(torch.randn(2, 4),) for _ in range(4)]
    run_and_compare(m, runs, prog.buffer)  # one loaded method: state carries over
    p = read_program(prog.buffer)
    assert p.mutable_data_segments and len(p.mutable_data_segments[0].offsets) == 3
    plan = p.execution_plan[0]
    assert [n for n in (f"{o.name}.{o.overload}" if o.overload else o.name
                        for o in plan.operators) if n == "aten::copy_"]


def test_mutable_buffer_without_initial_data() -> None:
    prog = export(Stateful(), (torch.randn(2, 4),),
                  config=ExecutorchBackendConfig(init_mutable_buffers=False))
    assert not read_program(prog.buffer).mutable_data_segments


def test_two_methods_in_one_program() -> None:
    m = EncoderDecoder().eval()

    class Decode(torch.nn.Module):
        def __init__(self, inner: EncoderDecoder) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, z: torch.Tensor) -> torch.Tensor:
            return self.inner.decode(z)

    eps = {
        "forward": torch.export.export(m, (torch.randn(2, 8),)),
        "decode": torch.export.export(Decode(m), (torch.randn(2, 4),)),
    }
    prog = to_edge(eps).to_executorch()
    assert prog.methods == {"forward", "decode"}
    run_and_compare(m, [(torch.randn(2, 8),)], prog.buffer, "forward")
    run_and_compare(m, [(torch.randn(2, 4),)], prog.buffer, "decode")
    names = [p.name for p in read_program(prog.buffer).execution_plan]
    assert names == ["decode", "forward"]  # sorted, as the reference writes them


def test_int_and_bool_ops() -> None:
    m = IntBoolOps()
    a = torch.tensor([1, 2, 3, -4], dtype=torch.int32)
    b = torch.tensor([4, 5, 6, 7], dtype=torch.int32)
    mask = torch.tensor([True, False, True, True])
    prog = export(m, (a, b, mask))
    run_and_compare(m, [(a, b, mask), (b, a, ~mask)], prog.buffer)


def test_tuple_list_dict_outputs() -> None:
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    for m, args in ((TupleOut(), (x,)), (ListOut(), (x,)), (DictOut(), (x, y)),
                    (SplitOut(), (torch.randn(2, 6),))):
        prog = export(m, args)
        run_and_compare(m, [args], prog.buffer)
    plan = read_program(export(DictOut(), (x, y)).buffer).execution_plan[0]
    assert '"sum", "nested"' in plan.container_meta_type.encoded_out_str.replace('\\"', '"')


def test_constant_methods() -> None:
    m = MLP().eval()
    ep = torch.export.export(m, (torch.randn(1, 16),))
    prog = to_edge(ep, constant_methods={"max_batch": 4, "scale": 0.5}).to_executorch()
    assert load_reference(prog.buffer, "max_batch").execute([]) == [4]
    assert load_reference(prog.buffer, "scale").execute([]) == [0.5]


def test_write_to_file_matches_buffer(tmp_path) -> None:
    prog = export(MLP().eval(), (torch.randn(2, 16),))
    path = tmp_path / "mlp.pte"
    with open(path, "wb") as f:
        prog.write_to_file(f)
    assert path.read_bytes() == prog.buffer


def test_cond_becomes_jumps_and_moves() -> None:
    m = Branchy().eval()
    prog = export(m, (torch.randn(2, 4),))
    run_and_compare(m, [(torch.ones(2, 4),), (-torch.ones(2, 4),), (torch.randn(2, 4),)],
                    prog.buffer)
    kinds = [type(i.instr_args).__name__
             for i in read_program(prog.buffer).execution_plan[0].chains[0].instructions]
    assert kinds.count("JumpFalseCall") == 2 and kinds.count("MoveCall") == 2


def test_input_mutation_is_written_back() -> None:
    x = torch.randn(3)
    prog = export(InputMutation(), (x.clone(),))
    out = load_reference(prog.buffer).execute([x.clone()])
    # like the reference: the mutated input comes first, then the user output
    torch.testing.assert_close(out[0], x * 2)
    torch.testing.assert_close(out[1], x * 2 + 1)


def test_fold_constants_runs_weight_transposes_at_export() -> None:
    m = MLP().eval()
    plain = export(m, (torch.randn(4, 16),))
    folded = export(m, (torch.randn(4, 16),),
                    config=ExecutorchBackendConfig(fold_constants=True))
    run_and_compare(m, [(torch.randn(4, 16),)], folded.buffer)
    names = {f"{o.name}.{o.overload}" for o in read_program(folded.buffer).execution_plan[0].operators}
    assert "aten::permute_copy.out" not in names
    assert (folded.memory_plans["forward"].planned_bytes
            < plain.memory_plans["forward"].planned_bytes)
    assert len(folded.buffer) <= len(plain.buffer)  # transposed weights replace the originals


def test_execution_graph_is_inspectable() -> None:
    prog = export(MLP().eval(), (torch.randn(2, 16),))
    code = prog.exported_program().graph_module.code
    assert "aten.addmm.out" in code and "alloc" in code


def test_symbolic_size_arithmetic() -> None:
    m = SymArith()
    T = Dim("T", min=3, max=11)
    prog = export(m, (torch.randn(2, 5, 4), torch.randn(2, 30)),
                  dynamic_shapes={"x": {1: T}, "y": None})
    run_and_compare(m, [(torch.randn(2, t, 4), torch.randn(2, 30)) for t in (3, 6, 11)],
                    prog.buffer)
    ops = {f"{o.name}.{o.overload}" for o in read_program(prog.buffer).execution_plan[0].operators}
    assert {"aten::sym_size.int", "executorch_prim::mul.Scalar", "executorch_prim::add.Scalar",
            "executorch_prim::floordiv.Scalar", "executorch_prim::truediv.Scalar"} <= ops


def test_edge_transform_runs_user_passes() -> None:
    def relu_to_hardtanh(gm: torch.fx.GraphModule) -> None:
        for n in gm.graph.nodes:
            if n.target is torch.ops.aten.relu.default:
                n.target = torch.ops.aten.hardtanh.default
                n.args = (n.args[0], 0.0, 1.0)
        gm.recompile()

    m = MLP().eval()
    edge = to_edge(torch.export.export(m, (torch.randn(4, 16),)))
    changed = edge.transform([relu_to_hardtanh])
    targets = {n.target for n in changed.exported_program().graph.nodes}
    assert torch.ops.aten.hardtanh.default in targets
    assert torch.ops.aten.relu.default not in targets
    # the original stays as it was
    assert torch.ops.aten.relu.default in {n.target for n in edge.exported_program().graph.nodes}
    x = torch.randn(4, 16)
    out = load_reference(changed.to_executorch().buffer).execute([x])[0]
    h = torch.clamp(m.fc1(x), 0, 1)
    h = torch.clamp(m.fc2(h), 0, 1)
    torch.testing.assert_close(out, m.fc3(h).detach(), rtol=1e-5, atol=1e-6)
