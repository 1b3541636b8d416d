"""Small helpers for editing torch.fx graphs of exported programs."""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch._export.verifier import Verifier
from torch.export import ExportedProgram
from torch.export.graph_signature import (
    ConstantArgument,
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputSpec,
    TensorArgument,
)
from torch.fx import GraphModule, Node
from torch.utils import _pytree as pytree

# Metadata a replacement node inherits from the node it stands for.
_INHERITED_META = ("stack_trace", "nn_module_stack", "source_fn_stack", "from_node",
                   "debug_handle", "torch_fn", "seq_nr")


class EdgeVerifier(Verifier):
    """Export's structural checks, also allowing delegate calls and their lowered modules."""

    dialect = "EMBER_EDGE"

    def allowed_op_types(self) -> Tuple[type, ...]:
        return super().allowed_op_types() + (types.FunctionType,)

    def allowed_getattr_types(self) -> Tuple[type, ...]:
        return super().allowed_getattr_types() + (torch.nn.Module,)


def cond_branches(gm: GraphModule, node: Node) -> Tuple[GraphModule, GraphModule]:
    """The (true, false) branch modules of a torch.cond node."""
    return getattr(gm, node.args[1].target), getattr(gm, node.args[2].target)


def is_cond(node: Node) -> bool:
    return node.op == "call_function" and node.target is torch.ops.higher_order.cond


def subgraphs(gm: GraphModule) -> List[GraphModule]:
    """The branch modules of every torch.cond in gm, recursively (gm excluded)."""
    out: List[GraphModule] = []
    for n in gm.graph.nodes:
        if is_cond(n):
            for b in cond_branches(gm, n):
                out.append(b)
                out.extend(subgraphs(b))
    return out


def fake_mode_of(gm: GraphModule) -> Any:
    from torch._guards import detect_fake_mode

    vals = [n.meta["val"] for n in gm.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)]
    return detect_fake_mode(vals)


def meta_val(arg: Any) -> Any:
    """Replaces nodes inside arg by their traced values."""
    return torch.fx.node.map_aggregate(
        arg, lambda a: a.meta["val"] if isinstance(a, Node) else a)


def inherit_meta(new: Node, old: Node) -> None:
    for k in _INHERITED_META:
        if k in old.meta and k not in new.meta:
            new.meta[k] = old.meta[k]


def recompute_val(node: Node, fake_mode: Any) -> None:
    """Re-traces node.meta['val'] after its target changed."""
    with fake_mode:
        node.meta["val"] = node.target(*meta_val(node.args), **meta_val(node.kwargs))


def repropagate_vals(gm: GraphModule) -> None:
    """Re-traces node.meta['val'] of every op after edits to the graph.

    Turning a view into a copy changes its layout (copies are contiguous), and
    ops downstream inherit layouts (an elementwise op keeps its input's
    strides), so their traced values must be recomputed, not just the edited
    node's. Data-dependent ops keep their values (re-tracing would invent new
    unbacked sizes).
    """
    from torch._dispatch.python import enable_python_dispatcher

    fake_mode = fake_mode_of(gm)
    if fake_mode is None:
        return
    with fake_mode, enable_python_dispatcher():
        _repropagate(gm)


_KEEP_VAL_TAGS = (torch.Tag.data_dependent_output, torch.Tag.dynamic_output_shape)


def _repropagate(gm: GraphModule) -> None:
    import operator

    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if n.target is operator.getitem:
            parent = n.args[0].meta.get("val")
            if isinstance(parent, (list, tuple)):
                n.meta["val"] = parent[n.args[1]]
        elif is_cond(n):
            for branch in cond_branches(gm, n):
                phs = [p for p in branch.graph.nodes if p.op == "placeholder"]
                for p, op in zip(phs, n.args[3]):
                    if isinstance(op, Node):
                        p.meta["val"] = op.meta.get("val")
                _repropagate(branch)
            outs = pytree.tree_leaves(cond_branches(gm, n)[0].graph.output_node().args[0])
            n.meta["val"] = [o.meta.get("val") if isinstance(o, Node) else o for o in outs]
        elif isinstance(n.target, torch._ops.OpOverload):
            if any(t in n.target.tags for t in _KEEP_VAL_TAGS):
                continue
            if not isinstance(n.meta.get("val"), (torch.Tensor, list, tuple)):
                continue
            n.meta["val"] = n.target(*meta_val(n.args), **meta_val(n.kwargs))


def call_before(gm: GraphModule, before: Node, target: Callable, args: tuple,
                kwargs: Optional[Dict[str, Any]] = None, *, like: Optional[Node] = None,
                fake_mode: Any = None) -> Node:
    """Inserts target(*args, **kwargs) before `before`, with meta['val'] computed."""
    kwargs = kwargs or {}
    with gm.graph.inserting_before(before):
        node = gm.graph.call_function(target, args, kwargs)
    fake_mode = fake_mode or fake_mode_of(gm)
    with fake_mode:
        node.meta["val"] = target(*meta_val(args), **meta_val(kwargs))
    inherit_meta(node, like or before)
    return node


def first_user_input(gm: GraphModule, sig: ExportGraphSignature) -> Node:
    """The node before which new lifted-constant placeholders go."""
    user = set(sig.user_inputs)
    for n in gm.graph.nodes:
        if n.op != "placeholder" or n.name in user:
            return n
    return gm.graph.output_node()


def resync_signature(gm: GraphModule, sig: ExportGraphSignature,
                     new_inputs: Dict[str, InputSpec]) -> ExportGraphSignature:
    """The signature of gm after nodes were replaced, or placeholders added or removed.

    Placeholders keep their names: each keeps its old input spec, except the
    ones named in `new_inputs`, which were added. Output specs are renamed
    after the nodes the output now returns.
    """
    old = {getattr(spec.arg, "name", None): spec for spec in sig.input_specs}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    # A graph copy renames a placeholder whose name shadows a Python builtin
    # ("input" -> "input_1"): its spec is the one under the name without the
    # numeric suffix, if no placeholder still has that name.
    names = {n.name for n in placeholders}
    inputs: List[InputSpec] = []
    for n in placeholders:
        spec = new_inputs.get(n.name) or old.get(n.name)
        base, _, suffix = n.name.rpartition("_")
        if spec is None and suffix.isdigit() and base not in names and \
                isinstance(getattr(old.get(base), "arg", None), TensorArgument):
            spec = dataclasses.replace(old[base], arg=TensorArgument(name=n.name))
        if spec is None:
            raise RuntimeError(f"placeholder {n.name} has no input spec")
        inputs.append(spec)
    returned = pytree.tree_leaves(gm.graph.output_node().args[0])
    outputs: List[OutputSpec] = []
    for spec, ret in zip(sig.output_specs, returned):
        if isinstance(ret, Node) and isinstance(spec.arg, TensorArgument):
            spec = dataclasses.replace(spec, arg=TensorArgument(name=ret.name))
        elif not isinstance(ret, Node) and not isinstance(spec.arg, ConstantArgument):
            spec = dataclasses.replace(spec, arg=ConstantArgument(name="", value=ret))
        outputs.append(spec)
    return ExportGraphSignature(input_specs=inputs, output_specs=outputs)


def rebuild_program(ep: ExportedProgram, gm: GraphModule, sig: ExportGraphSignature,
                    constants: Optional[Dict[str, Any]] = None,
                    state_dict: Optional[Dict[str, Any]] = None) -> ExportedProgram:
    """A new ExportedProgram around an edited graph module."""
    gm.graph.lint()
    gm.recompile()
    return ExportedProgram(
        root=gm,
        graph=gm.graph,
        graph_signature=sig,
        state_dict=ep.state_dict if state_dict is None else state_dict,
        range_constraints=ep.range_constraints,
        module_call_graph=ep.module_call_graph,
        example_inputs=ep.example_inputs,
        constants=dict(ep.constants) if constants is None else constants,
        verifiers=[EdgeVerifier],
    )


def new_constant_spec(node_name: str, fqn: str) -> InputSpec:
    return InputSpec(kind=InputKind.CONSTANT_TENSOR, arg=TensorArgument(name=node_name),
                     target=fqn, persistent=None)


def copy_graph_module(gm: GraphModule) -> GraphModule:
    """A copy of gm's graph (node meta dicts copied, values shared) over gm's attributes."""
    graph = torch.fx.Graph()
    val_map: Dict[torch.fx.Node, torch.fx.Node] = {}
    out = graph.graph_copy(gm.graph, val_map, return_output_node=True)
    if isinstance(out, tuple):  # (output value, output node) on newer torch
        out = out[0]
    old_out = gm.graph.output_node()
    new_out = graph.output(out)
    new_out.meta = dict(old_out.meta)
    for old, new in val_map.items():
        new.meta = dict(old.meta)
        # the copy's namespace renames builtins ("input" -> "input_1"); the
        # graph signature names the originals
        if new.name != old.name:
            new.name = old.name
    copy_gm = GraphModule(gm, graph)
    # Control-flow branches are graph modules too; copy them so passes on the
    # copy never touch the original program.
    for n in graph.nodes:
        if n.op == "get_attr":
            sub = getattr(copy_gm, n.target)
            if isinstance(sub, GraphModule):
                setattr(copy_gm, n.target, copy_graph_module(sub))
    return copy_gm


def run_graph_pass(gm: GraphModule, p: Callable) -> GraphModule:
    """Runs a torch.fx pass; accepts passes that return a PassResult, a module or None."""
    res = p(gm)
    if res is None:
        return gm
    if isinstance(res, GraphModule):
        return res
    new = getattr(res, "graph_module", None)
    if isinstance(new, GraphModule):
        return new
    raise TypeError(f"pass {p!r} returned {type(res).__name__}, expected a PassResult")
