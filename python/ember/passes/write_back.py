"""Write mutated buffers and inputs back with `aten::copy_`.

An exported program is functional: `self.acc.mul_(0.5)` becomes a new value
returned as a BUFFER_MUTATION output. The runtime keeps the buffer in planned
memory, so the new value must be copied into it before the method returns
(the reference exporter does the same, with `aten::copy_` kernel calls). User
input mutations are written back to the input tensor the same way.

Afterwards the BUFFER_MUTATION outputs are not method outputs any more; the
method returns user outputs (and, like the reference, mutated user inputs).
"""

from __future__ import annotations

from typing import Dict, List

import torch
from torch.export.graph_signature import ExportGraphSignature, InputKind, OutputKind
from torch.fx import GraphModule, Node

from ..graph_utils import inherit_meta


def insert_write_back(gm: GraphModule, sig: ExportGraphSignature) -> List[bool]:
    """Adds the copy_ nodes; returns, per graph output, whether the method returns it."""
    placeholders: Dict[str, Node] = {}
    names = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for spec, node in zip(sig.input_specs, names):
        if spec.kind == InputKind.BUFFER and spec.target is not None:
            placeholders[spec.target] = node
        elif spec.kind == InputKind.USER_INPUT:
            placeholders[node.name] = node
            placeholders[getattr(spec.arg, "name", node.name)] = node
    out_node = gm.graph.output_node()
    outputs = list(out_node.args[0])
    returned: List[bool] = []
    for i, spec in enumerate(sig.output_specs):
        if spec.kind not in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION):
            returned.append(True)
            continue
        returned.append(spec.kind == OutputKind.USER_INPUT_MUTATION)
        dst = placeholders.get(spec.target)
        src = outputs[i]
        if dst is None:
            raise RuntimeError(f"mutated {spec.kind.name.lower()} {spec.target!r} has no input")
        if src is dst:
            continue  # already updated in place
        with gm.graph.inserting_before(out_node):
            copy = gm.graph.call_function(torch.ops.aten.copy_.default, (dst, src))
        copy.meta["val"] = dst.meta.get("val")
        inherit_meta(copy, src)
        outputs[i] = copy
    out_node.args = (tuple(outputs),) + tuple(out_node.args[1:])
    return returned
