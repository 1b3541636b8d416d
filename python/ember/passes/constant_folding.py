"""Compute at export time what depends only on constants.

`linear` decomposes to `permute_copy(weight)` + `addmm`; the reference runs
that permute on every call. With `ExecutorchBackendConfig(fold_constants=True)`
such ops run once here and their results are stored as constants; weights
that nothing else uses are then left out of the program.

An op is folded when all its tensor arguments are constants, it is
deterministic, and its result is no larger than its largest input (so that
folding never grows the file, e.g. by materializing an expand).
"""

from __future__ import annotations

from typing import Any, Dict

import torch
from torch._ops import OpOverload
from torch.fx import GraphModule, Node

from .. import dialect
from ..tensor_spec import TensorSpec

_NEVER = {"rand", "randn", "randint", "rand_like", "randn_like", "randperm", "bernoulli",
          "normal", "uniform", "empty", "empty_like", "empty_strided", "native_dropout",
          "_empty_dim_order"}


def _foldable(op: Any) -> bool:
    if not isinstance(op, OpOverload) or dialect.is_sym_op(op):
        return False
    if op._schema.is_mutable or torch.Tag.nondeterministic_seeded in op.tags:
        return False
    return op._schema.name.split("::")[1] not in _NEVER


def fold_constants(gm: GraphModule) -> int:
    """Replaces constant-only ops with constants; returns how many were folded."""
    values: Dict[Node, torch.Tensor] = {}
    for n in gm.graph.nodes:
        spec = n.meta.get("spec")
        if n.op == "placeholder" and isinstance(spec, TensorSpec) and spec.const:
            values[n] = spec.data
    folded = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or not _foldable(n.target):
            continue
        deps: list = []
        torch.fx.node.map_arg((n.args, n.kwargs), deps.append)
        if not deps or any(d not in values for d in deps):
            continue
        args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), lambda d: values[d])
        with torch.no_grad():
            out = n.target(*args, **kwargs)
        if not isinstance(out, torch.Tensor):
            continue
        if out.numel() > max(values[d].numel() for d in deps):
            continue
        out = out.contiguous()
        values[n] = out
        with gm.graph.inserting_before(n):
            const = gm.graph.call_function(dialect.constant, ())
        const.meta = dict(n.meta)
        const.meta["spec"] = TensorSpec.from_tensor(out, const=True)
        const.meta["val"] = n.meta.get("val")
        n.replace_all_uses_with(const)
        gm.graph.erase_node(n)
        values[const] = out
        folded += 1
    return folded
