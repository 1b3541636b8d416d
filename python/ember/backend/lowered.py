"""A delegated subgraph: the backend's payload plus what the emitter needs."""

from __future__ import annotations

import operator
from typing import Any, Callable, Dict, List, Optional

import torch
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
from torch.fx import Node
from torch.utils import _pytree as pytree

from ..capture import ember_call_delegate
from ..dialect import call_delegate, is_delegate_call
from ..graph_utils import EdgeVerifier
from ..passes.debug_handles import handle_nodes, node_handles
from .backend_details import CompileSpec

__all__ = ["LoweredBackendModule", "all_handle_nodes", "call_delegate", "is_delegate_call",
           "standalone_program"]

# Emits and serializes a program (an ExecutorchProgramManager) from
# {method: edge program} and a config. The program stage, which sits above
# the backends, installs it (ember.program), so that a lowered module can be
# a program of its own without this stage importing the ones above it.
program_builder: Optional[Callable[[Dict[str, ExportedProgram], Any], Any]] = None


class LoweredBackendModule(torch.nn.Module):
    """The result of `BackendDetails.preprocess` for one subgraph.

    The parent graph calls it through `call_delegate(lowered, *inputs)`; the
    emitter writes a BackendDelegate (backend id, payload, compile specs) and a
    DelegateCall whose arguments are the inputs, then the outputs.
    """

    def __init__(self, backend_id: str, processed_bytes: bytes,
                 compile_specs: List[CompileSpec], original_module: ExportedProgram,
                 debug_handle_map: Optional[Any] = None,
                 named_data: Optional[Dict[str, bytes]] = None,
                 external_tags: Optional[Dict[str, str]] = None) -> None:
        super().__init__()
        self.backend_id = backend_id
        self.processed_bytes = bytes(processed_bytes)
        self.compile_specs = list(compile_specs)
        self.original_module = original_module
        self.debug_handle_map = debug_handle_map
        # key -> bytes the payload refers to (the program's named data)
        self.named_data: Dict[str, bytes] = dict(named_data or {})
        # key -> data file tag, for the blobs that go to a .ptd file
        self.external_tags: Dict[str, str] = dict(external_tags or {})

    @property
    def original_module_nodes(self) -> List[Node]:
        """The operator nodes the backend took, in order."""
        return [n for n in self.original_module.graph.nodes if n.op == "call_function"]

    def debug_handles(self) -> List[int]:
        """Debug handles of the nodes this delegate runs (the edge program's numbering)."""
        return node_handles(self.original_module_nodes)

    def delegate_map(self) -> Dict[Any, List[int]]:
        """The backend's own identifiers -> debug handles.

        A backend that reports one in its PreprocessResult (for example its
        instruction index -> the handles it fused) gives that map; otherwise
        each handle maps to itself, since the backend numbers failures by the
        handles it was given.
        """
        if self.debug_handle_map:
            return {k: sorted(v) if isinstance(v, (list, tuple, set)) else [v]
                    for k, v in self.debug_handle_map.items()}
        return {h: [h] for h in self.debug_handles()}

    def program(self, config: Optional[Any] = None) -> Any:
        """This module alone as a program: one delegate call on the subgraph's
        inputs (the whole-program lowering flow). An ExecutorchProgramManager;
        config is an ExecutorchBackendConfig (None: the default)."""
        if program_builder is None:
            raise RuntimeError("import ember to emit a lowered module as a program")
        return program_builder({"forward": standalone_program(self)}, config)

    def buffer(self, config: Optional[Any] = None) -> bytes:
        """The .pte bytes of program()."""
        return self.program(config).buffer

    def forward(self, *args: Any) -> Any:
        # Traced by torch.export as one delegate call (composition); in eager
        # PyTorch it runs the subgraph the backend was given.
        out = ember_call_delegate(self, *args)
        spec = self.original_module.call_spec.out_spec
        return pytree.tree_unflatten(list(out), spec) if spec is not None else out


def all_handle_nodes(gm: torch.fx.GraphModule) -> Dict[int, Node]:
    """Debug handle -> node over gm, its branches and the programs of its lowered modules."""
    out = handle_nodes(gm)
    for _, mod in gm.named_children():
        if isinstance(mod, LoweredBackendModule):
            for h, n in all_handle_nodes(mod.original_module.graph_module).items():
                out.setdefault(h, n)
    return out


def standalone_program(lowered: "LoweredBackendModule") -> ExportedProgram:
    """An edge program that only calls `lowered` on the user inputs of its subgraph."""
    sub = lowered.original_module
    kinds = {s.arg.name: s.kind for s in sub.graph_signature.input_specs}
    user_outputs = [s.arg.name for s in sub.graph_signature.output_specs
                    if s.kind == OutputKind.USER_OUTPUT]
    if len(user_outputs) != len(sub.graph_signature.output_specs):
        raise ValueError("a program whose backend mutates buffers or inputs cannot be lowered "
                         "whole; delegate its subgraphs with a partitioner instead")
    gm = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())
    g = gm.graph
    inputs = []
    for n in sub.graph.nodes:
        if n.op == "placeholder" and kinds.get(n.name) == InputKind.USER_INPUT:
            p = g.placeholder(n.name)
            p.meta["val"] = n.meta.get("val")
            inputs.append(p)
    gm.add_submodule("lowered_module_0", lowered)
    attr = g.get_attr("lowered_module_0")
    call = g.call_function(call_delegate, (attr, *inputs))
    by_name = {n.name: n for n in sub.graph.nodes}
    vals = [by_name[name].meta.get("val") for name in user_outputs]
    call.meta["val"] = tuple(vals)
    items = []
    for i, v in enumerate(vals):
        item = g.call_function(operator.getitem, (call, i))
        item.meta["val"] = v
        items.append(item)
    g.output(tuple(items))
    gm.recompile()
    sig = ExportGraphSignature(
        input_specs=[InputSpec(InputKind.USER_INPUT, TensorArgument(p.name), None)
                     for p in inputs],
        output_specs=[OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(i.name), None)
                      for i in items])
    calls = [ModuleCallEntry("", ModuleCallSignature(
        inputs=[], outputs=[], in_spec=sub.call_spec.in_spec, out_spec=sub.call_spec.out_spec))]
    return ExportedProgram(root=gm, graph=gm.graph, graph_signature=sig, state_dict={},
                           range_constraints=sub.range_constraints, module_call_graph=calls,
                           example_inputs=None, constants={}, verifiers=[EdgeVerifier])
