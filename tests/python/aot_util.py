"""Shared helpers for the ahead-of-time tests.

The reference ExecuTorch package is the compatibility oracle here: its runtime
runs the programs ember writes, and its deserializer reads them back.
"""

from __future__ import annotations

import copy
from typing import Any, List, Optional, Sequence

import torch
from torch.utils import _pytree as pytree

from ember import ExecutorchBackendConfig, to_edge

RTOL = 1e-5
ATOL = 1e-6


def export(model: torch.nn.Module, args: tuple, dynamic_shapes: Any = None,
           config: Optional[ExecutorchBackendConfig] = None, **edge_kwargs: Any):
    """torch.export -> ember to_edge -> to_executorch."""
    ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)
    return to_edge(ep, **edge_kwargs).to_executorch(config or ExecutorchBackendConfig())


def load_reference(buffer: bytes, method: str = "forward"):
    from executorch.runtime import Runtime

    return Runtime.get().load_program(buffer).load_method(method)


def assert_matches(outputs: Sequence[torch.Tensor], expected: Any) -> None:
    exp = pytree.tree_leaves(expected)
    assert len(outputs) == len(exp), (len(outputs), len(exp))
    for i, (o, e) in enumerate(zip(outputs, exp)):
        e = torch.as_tensor(e)
        assert o.dtype == e.dtype, f"output {i}: dtype {o.dtype} != {e.dtype}"
        assert tuple(o.shape) == tuple(e.shape), f"output {i}: shape {o.shape} != {e.shape}"
        if e.dtype.is_floating_point:
            torch.testing.assert_close(o, e, rtol=RTOL, atol=ATOL, msg=f"output {i}")
        else:
            assert torch.equal(o, e), f"output {i}: {o} != {e}"


def run_and_compare(model: torch.nn.Module, runs: List[tuple], buffer: bytes,
                    method: str = "forward") -> None:
    """Runs each input tuple through the reference runtime (one loaded method) and eager."""
    m = load_reference(buffer, method)
    eager = copy.deepcopy(model)
    fn = getattr(eager, method) if method != "forward" else eager
    for args in runs:
        with torch.no_grad():
            expected = fn(*args)
        assert_matches(m.execute(list(args)), expected)


def read_program(buffer: bytes):
    """The reference's view of a .pte (its Program dataclasses)."""
    from executorch.exir._serialize._program import _get_extended_header
    from executorch.exir._serialize._program import _flatbuffer_to_program

    eh = _get_extended_header(buffer)
    return _flatbuffer_to_program(buffer[: eh.program_size] if eh else buffer)


def kernel_names(plan) -> List[str]:
    """Kernel names of a plan's KernelCall instructions, in order."""
    out = []
    for chain in plan.chains:
        for ins in chain.instructions:
            a = ins.instr_args
            if type(a).__name__ == "KernelCall":
                op = plan.operators[a.op_index]
                out.append(f"{op.name}.{op.overload}" if op.overload else op.name)
    return out


def reference_export(model: torch.nn.Module, args: tuple, dynamic_shapes: Any = None) -> bytes:
    """The same model through the reference exporter (for structural comparisons)."""
    from executorch.exir import to_edge as ref_to_edge

    ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)
    return ref_to_edge(ep).to_executorch().buffer


