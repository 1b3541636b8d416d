"""An edge program as ExecuTorch's ETRecord stores it, so its Inspector reads ember's ETRecords.

ExecuTorch keeps the edge program of an ETRecord in its own serialization of
exported programs (`edge_dialect_exported_program/<method>` plus
`_state_dict`, `_constants` and `_example_inputs` side entries): torch.export's
JSON schema as it stood at version 5.4, with a `dialect` field, and each
node's debug handle in its metadata. ember writes it with torch.export's own
serializer and then leaves out the fields torch has added since (listed in
_NEWER_FIELDS), so that both ExecuTorch's reader (that older schema) and
torch's (which accepts it) load the program.

A program with delegates is written with each delegate call replaced by the
subgraph its backend was given (inlined, the weights becoming the program's
own): the Inspector looks nodes up by debug handle, and every handle a trace
names, inside delegates too, is then a node of that one graph.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import math
import operator
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import ExportGraphSignature, InputKind, InputSpec, TensorArgument
from torch.fx import GraphModule, Node

from ..backend.lowered import LoweredBackendModule
from ..dialect import is_delegate_call
from ..passes.debug_handles import KEY as DEBUG_HANDLE

#: The schema version ExecuTorch's reader checks (its major must match).
SCHEMA_VERSION = {"major": 5, "minor": 4}

#: Fields of torch.export's schema classes that the 5.4 schema does not have.
_NEWER_FIELDS = {
    "ExportedProgram": {"torch_version", "guards_code"},
    "Graph": {"sym_float_values"},
    "GraphModule": {"metadata", "treespec_namedtuple_fields"},
    "ModuleCallSignature": {"forward_arg_names"},
    "NamedArgument": {"kind"},
    "Node": {"is_hop_single_tensor_return"},
}


class ProgramNotWritable(Exception):
    """The program cannot be written in ExecuTorch's form (the reason says why)."""


def _to_json(obj: Any) -> Any:
    """A serialized schema object as JSON values, without the newer fields."""
    from torch._export.serde.schema import _Union
    if isinstance(obj, _Union):
        return {obj.type: _to_json(obj.value)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        drop = _NEWER_FIELDS.get(type(obj).__name__, ())
        return {f.name: _to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if f.name not in drop}
    if isinstance(obj, (list, tuple)):
        return [_to_json(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _to_json(v) for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        return "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, bytes):
        return base64.b64encode(obj).decode("ascii")
    return obj


def _output_names(node: Dict[str, Any]) -> List[str]:
    names = []
    for out in node.get("outputs") or []:
        for kind, v in out.items():
            if kind == "as_tensor":
                names.append(v["name"])
            elif kind == "as_tensors":
                names.extend(t["name"] for t in v)
    return names


def inline_delegates(ep: ExportedProgram) -> ExportedProgram:
    """ep with every delegate call replaced by the subgraph its backend took
    (the nodes keep their debug handles; the subgraph's weights become ep's)."""
    if not any(is_delegate_call(n) for n in ep.graph.nodes):
        return ep
    gm = GraphModule(ep.graph_module, ep.graph_module.graph.__deepcopy__())
    g = gm.graph
    specs = list(ep.graph_signature.input_specs)
    state = dict(ep.state_dict)
    constants = dict(ep.constants)
    placeholders = [n for n in g.nodes if n.op == "placeholder"]
    last_ph = placeholders[-1] if placeholders else None
    for call in [n for n in g.nodes if is_delegate_call(n)]:
        lowered = getattr(gm, str(call.args[0].target), None) \
            if isinstance(call.args[0], Node) else None
        if not isinstance(lowered, LoweredBackendModule):
            raise ProgramNotWritable("a delegate call without its lowered module")
        sub = inline_delegates(lowered.original_module)
        env: Dict[Node, Any] = {}
        user_args = iter(call.args[1:])
        for ph, spec in zip([n for n in sub.graph.nodes if n.op == "placeholder"],
                            sub.graph_signature.input_specs):
            if spec.kind == InputKind.USER_INPUT:
                env[ph] = next(user_args)
                continue
            if spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER,
                                 InputKind.CONSTANT_TENSOR):
                raise ProgramNotWritable(f"a delegated input of kind {spec.kind.name}")
            target = f"_delegate_{len(specs)}_{spec.target}".replace(".", "_")
            with g.inserting_after(last_ph) if last_ph is not None else g.inserting_before(
                    next(iter(g.nodes))):
                new = g.placeholder(target)
            new.meta.update(ph.meta)
            last_ph = new
            value = sub.state_dict.get(spec.target) if spec.target in sub.state_dict \
                else sub.constants.get(spec.target)
            if value is None:
                raise ProgramNotWritable(f"the delegated input {spec.target!r} has no value")
            if spec.kind == InputKind.CONSTANT_TENSOR:
                constants[target] = value
            else:
                state[target] = value
            specs.append(InputSpec(spec.kind, TensorArgument(name=new.name), target,
                                   persistent=True if spec.kind == InputKind.BUFFER else None))
            env[ph] = new
        with g.inserting_before(call):
            for n in sub.graph.nodes:
                if n.op == "placeholder":
                    continue
                if n.op == "output":
                    outs = n.args[0]
                    break
                new = g.node_copy(n, lambda a: env[a])
                env[n] = new
        results = [env[o] if isinstance(o, Node) else o for o in outs]
        if len(sub.graph_signature.output_specs) != len(results) or any(
                s.kind.name != "USER_OUTPUT" for s in sub.graph_signature.output_specs):
            raise ProgramNotWritable("a delegate that mutates buffers")
        for user in list(call.users):
            if user.target is operator.getitem:
                user.replace_all_uses_with(results[user.args[1]])
                g.erase_node(user)
            else:
                raise ProgramNotWritable("a delegate call whose result is not unpacked")
        g.erase_node(call)
    # inputs in the graph's placeholder order
    by_name = {s.arg.name: s for s in specs if hasattr(s.arg, "name")}
    ordered = [by_name[n.name] for n in g.nodes if n.op == "placeholder"]
    for n in [n for n in g.nodes if n.op == "get_attr" and not n.users]:
        g.erase_node(n)
    for name, _ in list(gm.named_children()):
        if isinstance(getattr(gm, name), LoweredBackendModule):
            delattr(gm, name)
    g.eliminate_dead_code()
    gm.recompile()
    # outputs by the names of the nodes that now make them
    out_node = next(n for n in g.nodes if n.op == "output")
    out_specs = []
    for spec, value in zip(ep.graph_signature.output_specs, out_node.args[0]):
        if isinstance(spec.arg, TensorArgument) and isinstance(value, Node):
            spec = dataclasses.replace(spec, arg=TensorArgument(name=value.name))
        out_specs.append(spec)
    sig = ExportGraphSignature(ordered, out_specs)
    return ExportedProgram(root=gm, graph=g, graph_signature=sig, state_dict=state,
                           range_constraints=ep.range_constraints,
                           module_call_graph=ep.module_call_graph, constants=constants,
                           verifiers=ep.verifiers)


def serialize_edge_program(ep: ExportedProgram) -> Tuple[bytes, bytes, bytes, bytes]:
    """(program JSON, state dict, constants, example inputs): the four entries
    of one method's edge program in an ETRecord. Raises ProgramNotWritable."""
    from torch._export.serde.serialize import ExportedProgramSerializer
    try:
        flat = inline_delegates(ep)
    except ProgramNotWritable:
        raise
    except Exception as e:  # torch.fx and ExportedProgram checks raise many kinds
        raise ProgramNotWritable(f"inlining its delegates: {type(e).__name__}: "
                                 f"{str(e)[:200]}") from None
    handles: Dict[str, int] = {}
    for n in flat.graph.nodes:
        h = n.meta.get(DEBUG_HANDLE)
        if isinstance(h, int) and n.op == "call_function":
            handles[n.name] = h
            for u in n.users:  # the items of a multi-output node are its outputs
                if u.target is operator.getitem:
                    handles.setdefault(u.name, h)
    try:
        art = ExportedProgramSerializer().serialize(flat)
    except Exception as e:  # torch's serializer raises many kinds
        raise ProgramNotWritable(f"{type(e).__name__}: {str(e)[:200]}") from None
    doc = _to_json(art.exported_program)
    doc["schema_version"] = dict(SCHEMA_VERSION)
    doc["dialect"] = "EDGE"
    for node in doc["graph_module"]["graph"]["nodes"]:
        h: Optional[int] = next((handles[n] for n in _output_names(node) if n in handles), None)
        if h is not None:
            node.setdefault("metadata", {})["debug_handle"] = str(h)
    program = json.dumps(doc, allow_nan=False).encode("utf-8")
    return program, art.state_dict, art.constants, art.example_inputs


def deserialize_edge_program(program: bytes, state_dict: bytes, constants: bytes,
                             example_inputs: bytes) -> ExportedProgram:
    """Reads one method's edge program from an ETRecord, ember's or
    ExecuTorch's (schema 5.x), with torch.export's deserializer; the debug
    handles in the nodes' metadata go back into node.meta. Raises what the
    deserializer raises on a program it cannot read."""
    from torch._export.serde.schema import SCHEMA_VERSION as TORCH_VERSION
    from torch._export.serde.serialize import SerializedArtifact, deserialize
    doc = json.loads(program)
    if not isinstance(doc, dict):
        raise ValueError("the program is not a JSON object")
    # the fields 5.4 lacks take their defaults; the dialect is named by verifiers
    doc["schema_version"] = {"major": TORCH_VERSION[0], "minor": TORCH_VERSION[1]}
    dialect = doc.pop("dialect", None)
    doc.setdefault("verifiers", [dialect] if isinstance(dialect, str) else [])
    handles: Dict[str, int] = {}
    for node in doc.get("graph_module", {}).get("graph", {}).get("nodes", []):
        h = (node.get("metadata") or {}).get("debug_handle")
        if isinstance(h, str) and h.isdigit():
            for name in _output_names(node):
                handles[name] = int(h)
    ep = deserialize(SerializedArtifact(json.dumps(doc).encode("utf-8"), state_dict, constants,
                                        example_inputs))
    for n in ep.graph.nodes:
        if n.name not in handles or n.op != "call_function":
            continue
        if n.target is operator.getitem:  # an item of a multi-output node: the node's
            if isinstance(n.args[0], Node):
                n.args[0].meta.setdefault(DEBUG_HANDLE, handles[n.name])
        else:
            n.meta[DEBUG_HANDLE] = handles[n.name]
    return ep
