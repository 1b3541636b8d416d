"""ember's programs against the reference exporter's for the same models.

Same kernels in the same order (so any runtime that runs the reference's
program has what ember's needs), same inputs/outputs, and planned memory no
larger than the reference planner's.
"""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

from aot_models import CNN, MLP, AttentionBlock, Stateful, TupleOut
from aot_util import export, read_program, reference_export


def _cases():
    T = Dim("T", min=1, max=AttentionBlock.MAX_T)
    return {
        "mlp": (MLP().eval(), (torch.randn(4, 16),), None),
        "cnn": (CNN().eval(), (torch.randn(1, 3, 16, 16),), None),
        "block": (AttentionBlock().eval(), (torch.randn(1, 8, 32),), {"x": {1: T}}),
        "stateful": (Stateful(), (torch.randn(2, 4),), None),
        "tuple": (TupleOut(), (torch.randn(3, 4),), None),
    }


def _without_constant_casts(plan) -> list:
    """The reference's kernels minus the dtype casts of constants it makes at run time.

    The reference lifts `x * 2` to a 0-dim int64/float32 constant and casts it to
    the op's dtype with a `_to_dim_order_copy` on every run; ember stores the
    constant in the right dtype, so those casts are not needed.
    """
    names = []
    for chain in plan.chains:
        for ins in chain.instructions:
            a = ins.instr_args
            if type(a).__name__ != "KernelCall":
                continue
            op = plan.operators[a.op_index]
            name = f"{op.name}.{op.overload}" if op.overload else op.name
            src = plan.values[a.args[0]].val
            if (name == "dim_order_ops::_to_dim_order_copy.out"
                    and type(src).__name__ == "Tensor" and src.data_buffer_idx > 0):
                continue
            names.append(name)
    return names


@pytest.mark.parametrize("name", ["mlp", "cnn", "block", "stateful", "tuple"])
def test_same_kernels_as_reference(name: str) -> None:
    model, args, dyn = _cases()[name]
    ours = read_program(export(model, args, dynamic_shapes=dyn).buffer).execution_plan[0]
    ref = read_program(reference_export(model, args, dynamic_shapes=dyn)).execution_plan[0]
    assert _without_constant_casts(ours) == _without_constant_casts(ref)
    assert len(ours.inputs) == len(ref.inputs) and len(ours.outputs) == len(ref.outputs)
    assert ours.container_meta_type == ref.container_meta_type
    for oi, ri in zip(ours.inputs, ref.inputs):
        o, r = ours.values[oi].val, ref.values[ri].val
        assert (list(o.sizes), o.scalar_type, o.shape_dynamism) == (
            list(r.sizes), r.scalar_type, r.shape_dynamism)
    assert sum(ours.non_const_buffer_sizes) <= sum(ref.non_const_buffer_sizes)
    # identical literals are shared, so ember's value table is never larger
    assert len(ours.values) <= len(ref.values)
