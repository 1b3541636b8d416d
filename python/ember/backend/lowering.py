"""to_backend: replace each tagged subgraph by a call to its lowered module.

For every tag the partitioner returns:

1. the tagged nodes are fused into a submodule (torch's fuser keeps the graph
   acyclic and topologically ordered);
2. the submodule becomes an ExportedProgram of its own: its inputs are user
   inputs, except constants tagged for the delegate, which it owns;
3. the backend's `preprocess` turns that program into a payload;
4. the parent graph calls `call_delegate(lowered_module, *inputs)`, which the
   emitter writes as a DelegateCall (inputs, then outputs).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from torch.export import ExportedProgram
from torch.export.exported_program import ModuleCallEntry, ModuleCallSignature
from torch.export.graph_signature import (
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from torch.fx import GraphModule, Node
from torch.utils import _pytree as pytree

from ..graph_utils import (
    EdgeVerifier,
    copy_graph_module,
    inherit_meta,
    rebuild_program,
    resync_signature,
)
from .backend_details import CompileSpec, find_backend
from .lowered import LoweredBackendModule, call_delegate
from .partitioner import TAG, Partitioner


def _input_specs_by_name(sig: ExportGraphSignature) -> Dict[str, InputSpec]:
    return {getattr(s.arg, "name", ""): s for s in sig.input_specs}


def _subprogram(parent: ExportedProgram, sub: GraphModule, call: Node,
                owned: Dict[int, InputSpec]) -> ExportedProgram:
    """The fused submodule as an ExportedProgram; args in `owned` become its constants."""
    phs = [n for n in sub.graph.nodes if n.op == "placeholder"]
    # Placeholders first, owned constants before user inputs (export's order).
    order = [p for i, p in enumerate(phs) if i in owned] + [
        p for i, p in enumerate(phs) if i not in owned]
    first = next(n for n in sub.graph.nodes if n.op != "placeholder")
    for p in order:
        first.prepend(p)
    state_dict: Dict[str, Any] = {}
    constants: Dict[str, Any] = {}
    specs: List[InputSpec] = []
    user_vals = []
    for i, p in enumerate(phs):
        p.meta.setdefault("val", call.args[i].meta.get("val"))
    for p in order:
        i = phs.index(p)
        if i in owned:
            ps = owned[i]
            specs.append(InputSpec(kind=ps.kind, arg=TensorArgument(name=p.name),
                                   target=ps.target, persistent=ps.persistent))
            if ps.target in parent.state_dict:
                state_dict[ps.target] = parent.state_dict[ps.target]
            else:
                constants[ps.target] = parent.constants[ps.target]
        else:
            specs.append(InputSpec(kind=InputKind.USER_INPUT, arg=TensorArgument(name=p.name),
                                   target=None))
            user_vals.append(p.meta.get("val"))
    outs = pytree.tree_leaves(sub.graph.output_node().args[0])
    out_specs = [OutputSpec(kind=OutputKind.USER_OUTPUT, arg=TensorArgument(name=o.name),
                            target=None) for o in outs]
    sig = ExportGraphSignature(input_specs=specs, output_specs=out_specs)
    in_spec = pytree.tree_flatten((tuple(user_vals), {}))[1]
    out_spec = pytree.tree_flatten(tuple(outs))[1]
    call_graph = [ModuleCallEntry("", ModuleCallSignature(inputs=[], outputs=[], in_spec=in_spec,
                                                          out_spec=out_spec))]
    sub.graph.lint()
    sub.recompile()
    return ExportedProgram(root=sub, graph=sub.graph, graph_signature=sig, state_dict=state_dict,
                           range_constraints=parent.range_constraints,
                           module_call_graph=call_graph, example_inputs=None,
                           constants=constants, verifiers=[EdgeVerifier])


def to_backend(*args: Any, **kwargs: Any) -> Any:
    """Delegation, in the two forms ExecuTorch users know.

    `to_backend(backend_id, edge_program, compile_specs)` lowers the whole
    edge program to one backend and returns its LoweredBackendModule; that
    module serializes alone (`.buffer()`), or composes into a bigger model
    that is exported again (it traces as one delegate call).

    `to_backend(edge_program, partitioner)` delegates the subgraphs the
    partitioner tags and returns the edge program with delegate calls.
    """
    if args and isinstance(args[0], str):
        return lower_whole_program(*args, **kwargs)
    return partition_and_lower(*args, **kwargs)


def lower_whole_program(backend_id: str, edge_program: ExportedProgram,
                        compile_specs: Optional[List[CompileSpec]] = None
                        ) -> LoweredBackendModule:
    """The whole edge program, preprocessed by one backend."""
    specs = list(compile_specs or [])
    backend = find_backend(backend_id)
    sub_ep = rebuild_program(edge_program, copy_graph_module(edge_program.graph_module),
                             edge_program.graph_signature)
    res = backend.preprocess(sub_ep, specs)
    return LoweredBackendModule(backend_id, res.processed_bytes, specs, sub_ep,
                                res.debug_handle_map, res.named_data, res.external_tags)


def _share_constants(gm: GraphModule, sig: ExportGraphSignature, inputs: Dict[str, InputSpec],
                     tags: List[str]) -> None:
    """A constant read inside a delegate and also elsewhere (a tied embedding
    and output projection, a weight two delegates read) gets one placeholder
    per delegate tag, so that every delegate owns the weights it reads (and
    can pack them at init) while the rest of the program keeps its own."""
    for ph in [n for n in gm.graph.nodes if n.op == "placeholder"]:
        spec = inputs.get(ph.name)
        if spec is None or spec.kind == InputKind.USER_INPUT or ph.meta.get(TAG) is not None:
            continue
        if spec.target in set(sig.buffers_to_mutate.values()):
            continue  # state, not a constant
        user_tags = {u.meta.get(TAG) for u in ph.users}
        for tag in sorted(t for t in user_tags if t in tags):
            with gm.graph.inserting_after(ph):
                dup = gm.graph.placeholder(f"{ph.name}_{tag}")
            dup.meta = dict(ph.meta)
            dup.meta[TAG] = tag
            inputs[dup.name] = InputSpec(kind=spec.kind, arg=TensorArgument(name=dup.name),
                                         target=spec.target, persistent=spec.persistent)
            for u in [u for u in ph.users if u.meta.get(TAG) == tag]:
                u.replace_input_with(ph, dup)


def partition_and_lower(ep: ExportedProgram, partitioner: Partitioner) -> ExportedProgram:
    """Returns ep with the partitioner's subgraphs delegated."""
    work = rebuild_program(ep, copy_graph_module(ep.graph_module), ep.graph_signature)
    result = partitioner.partition(work)
    tagged = result.tagged_exported_program
    gm = tagged.graph_module
    inputs = _input_specs_by_name(tagged.graph_signature)
    _share_constants(gm, tagged.graph_signature, inputs, list(result.partition_tags))
    from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

    count = 0
    for tag, dspec in result.partition_tags.items():
        nodes = [n for n in gm.graph.nodes if n.op == "call_function" and n.meta.get(TAG) == tag]
        if not nodes:
            continue
        prefix = f"_ember_fused_{count}_"
        gm = fuse_by_partitions(gm, [dict.fromkeys(nodes)], prefix=prefix,
                                always_return_tuple=True)
        call = next(n for n in gm.graph.nodes
                    if n.op == "call_module" and str(n.target).startswith(prefix))
        sub = getattr(gm, call.target)
        owned = {i: inputs[a.name] for i, a in enumerate(call.args)
                 if isinstance(a, Node) and a.op == "placeholder" and a.meta.get(TAG) == tag
                 and a.name in inputs and inputs[a.name].kind != InputKind.USER_INPUT}
        sub_ep = _subprogram(tagged, sub, call, owned)
        backend = find_backend(dspec.backend_id)
        res = backend.preprocess(sub_ep, list(dspec.compile_specs))
        lowered = LoweredBackendModule(dspec.backend_id, res.processed_bytes,
                                       list(dspec.compile_specs), sub_ep, res.debug_handle_map,
                                       res.named_data, res.external_tags)
        name = f"lowered_module_{count}"
        gm.add_submodule(name, lowered)
        args = tuple(a for i, a in enumerate(call.args) if i not in owned)
        owned_nodes = {call.args[i] for i in owned}
        with gm.graph.inserting_before(call):
            attr = gm.graph.get_attr(name)
            dc = gm.graph.call_function(call_delegate, (attr,) + args)
        dc.meta["val"] = call.meta.get("val")
        inherit_meta(dc, nodes[-1])
        dc.meta.pop("debug_handle", None)  # it runs the handles of the nodes it took
        call.replace_all_uses_with(dc)
        gm.graph.erase_node(call)
        gm.delete_submodule(call.target)
        for a in owned_nodes:
            if not a.users:
                gm.graph.erase_node(a)
        count += 1

    sig = resync_signature(gm, tagged.graph_signature, {})
    used = {s.target for s in sig.input_specs if s.target is not None}
    state_dict = {k: v for k, v in tagged.state_dict.items() if k in used}
    constants = {k: v for k, v in tagged.constants.items() if k in used}
    # Weights that moved into delegates leave the parent program.
    return rebuild_program(tagged, gm, sig, constants, state_dict)


def get_lowered_modules(ep: ExportedProgram) -> List[Tuple[str, LoweredBackendModule]]:
    return [(n, m) for n, m in ep.graph_module.named_children()
            if isinstance(m, LoweredBackendModule)]

