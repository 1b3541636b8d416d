"""Functional ops -> out-variant ops writing into planned memory.

`aten::add.Tensor(a, b)` becomes `aten::add.out(a, b, out=<alloc>)`, where
`<alloc>` is a `dialect.alloc` marker node carrying the output's TensorSpec.
The out variant is found from torch's own operator schemas: among the
overloads of the op's name, the one of kind "out" whose signature (arguments
without the out ones and without tensor-option arguments such as dtype,
which the out tensor already carries) equals the functional op's.
Multi-output ops get one alloc per out argument (`native_layer_norm.out` has
out0, out1, out2); ops with a `Tensor[] out` get one alloc holding a list.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

import torch
from torch._ops import OpOverload
from torch.fx import GraphModule

from .. import dialect
from ..errors import ExportError, source_location
from ..tensor_spec import TensorSpec

_cache: Dict[OpOverload, Optional[Tuple[OpOverload, Tuple[str, ...]]]] = {}


def _parse(schema: torch._C.FunctionSchema):
    from torchgen.model import FunctionSchema

    try:
        return FunctionSchema.parse(str(schema))
    except Exception:  # schemas torchgen cannot read (complex, generic lists) have no out form
        return None


def _signature_key(fs) -> str:
    return str(dataclasses.replace(fs.signature(), returns=()))


def out_variant(op: OpOverload) -> Optional[Tuple[OpOverload, Tuple[str, ...]]]:
    """(out-variant overload, names of its out arguments), or None if there is none."""
    if op in _cache:
        return _cache[op]
    from torchgen.model import SchemaKind

    result = None
    fs = _parse(op._schema)
    if fs is not None:
        if fs.kind() == SchemaKind.out:
            result = (op, tuple(a.name for a in fs.arguments.out))
        else:
            key = _signature_key(fs)
            packet = getattr(getattr(torch.ops, op.namespace), op._schema.name.split("::")[1])
            for name in packet.overloads():
                cand = getattr(packet, name)
                cfs = _parse(cand._schema)
                if cfs is not None and cfs.kind() == SchemaKind.out and _signature_key(cfs) == key:
                    result = (cand, tuple(a.name for a in cfs.arguments.out))
                    break
    _cache[op] = result
    return result


def _empty_placeholder(specs: List) -> TensorSpec:
    """A (0,)-shaped out tensor for an output a multi-output op leaves undefined."""
    dtype = next((s.dtype for s in specs if isinstance(s, TensorSpec)), torch.float32)
    return TensorSpec(dtype, [0], [0])


# Ops that run as they are: in-place write-back and symbolic-size prim ops.
_KEEP = {torch.ops.aten.copy_.default}


def to_out_variants(gm: GraphModule) -> None:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, OpOverload):
            continue
        op = node.target
        if op in _KEEP or dialect.is_sym_op(op) or op in dialect.ASSERT_OPS:
            continue
        found = out_variant(op)
        if found is None:
            raise ExportError(
                f"operator {dialect.op_display_name(op)} has no out variant, so the runtime "
                f"cannot run it with planned memory; it comes from {source_location(node)}. "
                "Register an out variant for the custom op, or delegate it to a backend.")
        out_op, out_names = found
        if out_op is op:
            continue
        spec = node.meta.get("spec")
        val = node.meta.get("val")
        if len(out_names) == 1:
            specs: List = [spec]
            vals: List = [val]
        else:
            specs, vals = list(spec), list(val)
        allowed = {a.name for a in out_op._schema.arguments}
        kwargs = {k: v for k, v in node.kwargs.items() if k in allowed}
        for name, s, v in zip(out_names, specs, vals):
            if s is None and len(out_names) > 1:
                # An output the op does not produce (convolution_backward's
                # output_mask): an empty placeholder, as the reference emits.
                s = _empty_placeholder(specs)
            with gm.graph.inserting_before(node):
                alloc = gm.graph.call_function(dialect.alloc, (None,))
            alloc.meta["spec"] = s
            alloc.meta["val"] = v
            kwargs[name] = alloc
        node.target = out_op
        node.kwargs = kwargs
