"""Eager intermediates of an edge program, by debug handle, for numeric debugging.

The edge graph runs node by node in PyTorch; a delegate call runs the
subgraph its backend was given the same way, so nodes inside delegates get
eager values too.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from ..backend.lowered import LoweredBackendModule
from ..dialect import is_delegate_call
from ..passes.debug_handles import KEY as DEBUG_HANDLE


def _placeholders(ep: ExportedProgram, user_inputs: Sequence[Any]) -> List[Any]:
    args: List[Any] = []
    user = iter(user_inputs)
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            try:
                args.append(next(user))
            except StopIteration:
                raise ValueError("fewer inputs than the program takes") from None
        elif spec.target in ep.state_dict:
            args.append(ep.state_dict[spec.target])
        elif spec.target in ep.constants:
            args.append(ep.constants[spec.target])
        else:
            raise ValueError(f"the program's input {spec.target!r} has no value")
    return args


class _Recorder(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule, record: Dict[int, Any]) -> None:
        super().__init__(gm)
        self.record = record

    def run_node(self, n: torch.fx.Node) -> Any:
        if is_delegate_call(n):
            args = self.map_nodes_to_values(n.args, n)
            lowered = args[0]
            if isinstance(lowered, LoweredBackendModule):
                out = _run(lowered.original_module, args[1:], self.record)
                return tuple(out) if len(out) != 1 else (out[0],)
        result = super().run_node(n)
        h = n.meta.get(DEBUG_HANDLE)
        if isinstance(h, int):
            self.record.setdefault(h, _detach(result))
        return result


def _detach(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return v.detach().clone()
    if isinstance(v, (list, tuple)):
        return type(v)(_detach(x) for x in v)
    return v


def _run(ep: ExportedProgram, user_inputs: Sequence[Any], record: Dict[int, Any]) -> List[Any]:
    with torch.no_grad():
        out = _Recorder(ep.graph_module, record).run(*_placeholders(ep, user_inputs))
    return list(out) if isinstance(out, (list, tuple)) else [out]


def eager_intermediates(ep: ExportedProgram, inputs: Sequence[Any]) -> Dict[int, Any]:
    """Debug handle -> eager output of that node, for these inputs."""
    record: Dict[int, Any] = {}
    _run(ep, [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs], record)
    return record


def gap(got: torch.Tensor, want: torch.Tensor, distance: str = "MSE") -> Tuple[float, float]:
    """(distance, relative error = max |got - want| / max(|want|)) of two tensors."""
    a = got.detach().to(torch.float64).reshape(-1)
    b = want.detach().to(torch.float64).reshape(-1)
    if a.numel() == 0:
        return 0.0, 0.0
    diff = a - b
    dist = distance.upper()
    if dist == "MSE":
        d = float((diff * diff).mean())
    elif dist == "L1":
        d = float(diff.abs().mean())
    elif dist == "MAX_ABS":
        d = float(diff.abs().max())
    else:
        raise ValueError(f"unknown distance {distance!r}: use MSE, L1 or MAX_ABS")
    scale = float(b.abs().max())
    rel = float(diff.abs().max()) / scale if scale > 0 else float(diff.abs().max())
    return d, rel
