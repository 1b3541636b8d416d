"""The entry points (to_edge, to_edge_transform_and_lower) and the two stages users
hold: EdgeProgramManager and ExecutorchProgramManager.

    edge = to_edge(ep)                       # EdgeProgramManager
    edge = edge.transform([my_pass])         # still edge
    edge = edge.to_backend(partitioner)      # some subgraphs delegated
    prog = edge.to_executorch()              # ExecutorchProgramManager
    prog.buffer / prog.write_to_file(f)      # the .pte bytes
"""

from __future__ import annotations

import copy
import dataclasses
import os
import warnings
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Sequence, Set, Union

import torch
from torch.export import ExportedProgram
from torch.fx import GraphModule

from . import dialect
from . import schema as S
from .backend import lowered as _lowered
from .backend.lowered import all_handle_nodes
from .backend.lowering import to_backend
from .config import ExecutorchBackendConfig
from .edge import EdgeCompileConfig, check_dim_orders, check_ir_validity, convert_to_edge
from .emit import MethodEmitter, ProgramState, emit_constant_method
from .errors import ExportError, source_location
from .flat_tensor import DataEntry, DataFile, TensorLayout, serialize_ptd
from .graph_utils import (
    copy_graph_module,
    rebuild_program,
    resync_signature,
    run_graph_pass,
    subgraphs,
)
from .kernel_library import KernelSet, load_libraries
from .memory_planning import MemoryPlan, format_report
from .passes.constant_folding import fold_constants
from .passes.debug_handles import assign_debug_handles
from .passes.out_variants import to_out_variants
from .passes.quantized_embedding import fuse_quantized_embeddings
from .passes.reinplace import reinplace_functionalized
from .passes.spec_prop import propagate_specs
from .passes.views import is_elided_view, replace_view_copy_with_view
from .passes.write_back import insert_write_back
from .serialize import ProgramData, serialize_pte


class EdgeProgramManager:
    """One or more methods in the edge dialect (see `to_edge`)."""

    def __init__(self, edge_programs: Union[ExportedProgram, Dict[str, ExportedProgram]],
                 constant_methods: Optional[Dict[str, Any]] = None,
                 compile_config: Optional[EdgeCompileConfig] = None) -> None:
        if isinstance(edge_programs, ExportedProgram):
            edge_programs = {"forward": edge_programs}
        self._edge_programs: Dict[str, ExportedProgram] = dict(edge_programs)
        self._config_methods = dict(constant_methods) if constant_methods else None
        self.compile_config = compile_config or EdgeCompileConfig()

    @property
    def methods(self) -> Set[str]:
        return set(self._edge_programs)

    @property
    def config_methods(self) -> Set[str]:
        return set(self._config_methods or {})

    def exported_program(self, method_name: str = "forward", *,
                         name: Optional[str] = None) -> ExportedProgram:
        key = name or method_name
        if key not in self._edge_programs:
            raise KeyError(f"no method {key!r}; methods are {sorted(self._edge_programs)}")
        return self._edge_programs[key]

    def transform(self, passes: Union[Sequence[Callable], Dict[str, Sequence[Callable]]],
                  compile_config: Optional[EdgeCompileConfig] = None) -> "EdgeProgramManager":
        """Runs torch.fx passes (GraphModule -> PassResult/GraphModule/None) on each method."""
        config = compile_config or self.compile_config
        out: Dict[str, ExportedProgram] = {}
        for name, ep in self._edge_programs.items():
            plist = passes.get(name) if isinstance(passes, dict) else passes
            if not plist:
                out[name] = ep
                continue
            gm = copy_graph_module(ep.graph_module)
            for p in plist:
                gm = run_graph_pass(gm, p)
            gm.graph.eliminate_dead_code()
            assign_debug_handles(gm)
            check_dim_orders(gm)
            if config._check_ir_validity:
                check_ir_validity(gm, list(config._core_aten_ops_exception_list)
                                  + list(config.preserve_ops))
            sig = resync_signature(gm, ep.graph_signature, {})
            out[name] = rebuild_program(ep, gm, sig)
        return EdgeProgramManager(out, self._config_methods, config)

    def to_backend(self, partitioner: Any) -> "EdgeProgramManager":
        """Delegates the subgraphs the partitioner tags to their backends."""
        if isinstance(partitioner, dict):
            per_method = partitioner
        else:
            per_method = {name: partitioner for name in self._edge_programs}
        out = {name: (to_backend(ep, per_method[name]) if name in per_method else ep)
               for name, ep in self._edge_programs.items()}
        return EdgeProgramManager(out, self._config_methods, self.compile_config)

    def to_executorch(self, config: Optional[ExecutorchBackendConfig] = None
                      ) -> "ExecutorchProgramManager":
        return ExecutorchProgramManager(self._edge_programs, self._config_methods,
                                        config or ExecutorchBackendConfig())


class _LoweredMethod:
    def __init__(self, name: str, ep: ExportedProgram, gm: GraphModule, plan: MemoryPlan,
                 returned: List[bool]) -> None:
        self.name = name
        self.ep = ep
        self.gm = gm
        self.plan = plan
        self.returned = returned


def _lower_method(name: str, ep: ExportedProgram, config: ExecutorchBackendConfig
                  ) -> _LoweredMethod:
    """Edge program -> execution graph with out variants, specs and a memory plan."""
    gm = copy_graph_module(ep.graph_module)
    for p in config.passes:
        gm = run_graph_pass(gm, p)
    sig = ep.graph_signature
    reinplace_functionalized(gm, sig)  # mutating custom ops in place on their buffers
    returned = insert_write_back(gm, sig)
    gm.graph.eliminate_dead_code()
    propagate_specs(gm, ep, sig, returned, config.init_mutable_buffers)
    if config.fuse_quantized_embeddings or config.do_quant_fusion_and_const_prop:
        fuse_quantized_embeddings(gm)
    if config.fold_constants:
        fold_constants(gm)
    graphs = [gm] + subgraphs(gm)
    for g in graphs:
        if config.remove_view_copy:
            replace_view_copy_with_view(g)
        to_out_variants(g)
    libraries = load_libraries(config.kernel_libraries)
    if config.available_kernels is not None:
        check_kernels(name, gm, KernelSet(config.available_kernels, libraries))
    elif config.check_kernels:
        registry = _runtime_kernels()
        if registry is not None:
            check_kernels(name, gm, KernelSet(registry, libraries))
    plan = config.planner_for(name).run(gm, name)
    for g in graphs:
        g.recompile()
    return _LoweredMethod(name, ep, gm, plan, returned)


def kernels_called(gm: GraphModule) -> Dict[str, List[torch.fx.Node]]:
    """Kernel name -> nodes calling it, for an execution graph."""
    out: Dict[str, List[torch.fx.Node]] = {}
    nodes = [n for g in [gm] + subgraphs(gm) for n in g.graph.nodes]
    for n in nodes:
        if n.op != "call_function":
            continue
        if isinstance(n.target, torch._ops.OpOverload):
            name, overload = dialect.kernel_name(n.target)
            key = f"{name}.{overload}" if overload else name
        elif n.target in dialect.PYTHON_SYM_OPS:
            key = dialect.PYTHON_SYM_OPS[n.target]
        elif n.target is dialect.et_view:
            key = "executorch_prim::et_view.default"
        else:
            continue
        out.setdefault(key, []).append(n)
    return out


class _RuntimeKernels:
    """`key in registry` asks libember's kernel registry (ember.runtime.has_kernel)."""

    def __init__(self, has_kernel: Callable[[str], bool]) -> None:
        self._has = has_kernel

    def __contains__(self, key: object) -> bool:
        return bool(self._has(str(key)))


_warned_no_runtime = False


def _runtime_kernels() -> Optional[_RuntimeKernels]:
    """libember's registry, or None (with a warning, once) when the bindings are not built."""
    global _warned_no_runtime
    try:
        from .runtime import has_kernel
    except ImportError as e:
        if not _warned_no_runtime:
            _warned_no_runtime = True
            warnings.warn(
                f"ember.runtime is not importable ({e}); skipping the export-time check that "
                "every operator has a kernel in libember. Build the extension "
                "(`pip install -e .`) or pass ExecutorchBackendConfig(check_kernels=False) "
                "to silence this.", RuntimeWarning, stacklevel=4)
        return None
    return _RuntimeKernels(has_kernel)


def check_kernels(method: str, gm: GraphModule, available: Any) -> None:
    missing = {}
    for key, nodes in kernels_called(gm).items():
        if key == "executorch_prim::et_view.default" and all(
                is_elided_view(n.meta["spec"]) for n in nodes):
            continue
        if key not in available:
            missing[key] = nodes
    if missing:
        lines = []
        for k, v in sorted(missing.items()):
            lines.append(f"  {k}: from {source_location(v[0])}")
            more = sorted({source_location(n) for n in v[1:]} - {source_location(v[0])})
            lines += [f"      and from {loc}" for loc in more]
        raise ExportError(
            f"method {method!r} calls operators that have no kernel in the runtime:\n"
            + "\n".join(lines)
            + "\nTo fix: register a custom kernel for each op in the runtime "
            "(ember_kernels_register) and describe it to the exporter with "
            "ExecutorchBackendConfig(kernel_libraries=[\"my_ops.yaml\"]), or delegate it "
            "to a backend (to_backend with a partitioner), or rewrite the model to avoid it. "
            "If the target runtime has these kernels, pass "
            "ExecutorchBackendConfig(check_kernels=False).")


@dataclasses.dataclass(frozen=True)
class DebugHandleInfo:
    """What a debug handle stands for: the node, its operator and its source line."""

    handle: int
    node_name: str
    operator: str
    source: str
    stack_trace: Optional[str]

    @staticmethod
    def of(handle: int, node: torch.fx.Node) -> "DebugHandleInfo":
        target = node.target
        op = target.name() if hasattr(target, "name") else getattr(target, "__name__", str(target))
        return DebugHandleInfo(handle, node.name, op, source_location(node),
                               node.meta.get("stack_trace"))

    def __str__(self) -> str:
        return f"debug handle {self.handle}: {self.operator} (node {self.node_name}), from {self.source}"


class ExecutorchProgramManager:
    """The program in execution form: emitted, planned and serialized."""

    def __init__(self, edge_programs: Dict[str, ExportedProgram],
                 constant_methods: Optional[Dict[str, Any]],
                 config: ExecutorchBackendConfig) -> None:
        self.config = config
        self._methods: Dict[str, _LoweredMethod] = {}
        state = ProgramState()
        plans: List[S.ExecutionPlan] = []
        self._debug_handle_map: Dict[str, Dict[int, List[int]]] = {}
        self._delegate_map: Dict[str, Dict[int, Dict[str, Any]]] = {}
        for name in sorted(edge_programs):
            lowered = _lower_method(name, edge_programs[name], config)
            self._methods[name] = lowered
            emitter = MethodEmitter(
                name, lowered.ep, lowered.gm, lowered.plan, state,
                returned=lowered.returned, emit_stacktrace=config.emit_stacktrace,
                emit_mutable_buffer_names=config.emit_mutable_buffer_names,
                external_constants=config.external_constants)
            plans.append(emitter.run())
            self._debug_handle_map[name] = {
                i: hs for i, hs in enumerate(emitter.debug_handles) if hs}
            self._delegate_map[name] = {
                i: {"name": lm.backend_id, "delegate_map": lm.delegate_map()}
                for i, lm in enumerate(emitter.lowered_modules)}
        for name, value in sorted((constant_methods or {}).items()):
            if name in self._methods:
                raise ValueError(f"constant method {name!r} clashes with a method of that name")
            plans.append(emit_constant_method(name, value, state))
        self._program = S.Program(version=S.SCHEMA_VERSION, execution_plan=plans)
        self._data = ProgramData(self._program, state.constants, state.mutable_data,
                                 state.delegate_data, state.named_data)
        self._external = state.external_data
        self._buffer: Optional[bytes] = None
        self._data_files: Optional[Dict[str, bytes]] = None

    @property
    def methods(self) -> Set[str]:
        return set(self._methods)

    @property
    def program(self) -> S.Program:
        """The emitted program (constant data lives in `program_data`)."""
        return self._program

    @property
    def program_data(self) -> ProgramData:
        return self._data

    def exported_program(self, method_name: str = "forward") -> ExportedProgram:
        """The method's execution graph (out variants, planned specs) as an ExportedProgram."""
        m = self._methods[method_name]
        view = copy.copy(m.ep)
        view._graph_module = m.gm  # for inspection: the execution graph does not run eagerly
        return view

    def execution_graph(self, method_name: str = "forward") -> GraphModule:
        return self._methods[method_name].gm

    @property
    def buffer(self) -> bytes:
        if self._buffer is None:
            c = self.config
            self._buffer = serialize_pte(
                self._data,
                segment_alignment=c.segment_alignment,
                constant_tensor_alignment=c.constant_tensor_alignment or 16,
                extract_delegate_segments=c.extract_delegate_segments,
            )
        return self._buffer

    @property
    def data_files(self) -> Dict[str, bytes]:
        """The `.ptd` data files of the program: tag (the file name without
        ".ptd") -> bytes; empty unless constants or delegate data were sent to
        data files (`ExecutorchBackendConfig.external_constants`, delegate tags)."""
        if self._data_files is None:
            files: Dict[str, bytes] = {}
            for tag, entries in self._external.items():
                df = DataFile()
                for key, (blob, layout) in entries.items():
                    df.add(key, DataEntry(blob, None if layout is None else TensorLayout(*layout),
                                          alignment=16))
                files[tag] = serialize_ptd(df, self.config.segment_alignment)
            self._data_files = files
        return self._data_files

    @property
    def _tensor_data(self) -> Dict[str, bytes]:
        """The reference's spelling of `data_files` on its program manager."""
        return self.data_files

    def write_tensor_data_to_file(self, outdir: str) -> None:
        """Writes each data file as `<outdir>/<tag>.ptd`."""
        for tag, data in self.data_files.items():
            with open(os.path.join(outdir, f"{tag}.ptd"), "wb") as f:
                f.write(data)

    def write_to_file(self, open_file: BinaryIO) -> None:
        open_file.write(self.buffer)

    def save(self, path: str) -> None:
        with open(path, "wb") as f:
            self.write_to_file(f)

    @property
    def debug_handle_map(self) -> Dict[str, Dict[int, List[int]]]:
        """Method -> {instruction index in its chain: debug handles of the nodes it runs}.

        A kernel call runs one node; a delegate call runs every node its
        backend took. Instructions the compiler added (write-backs of mutated
        buffers and inputs) have no handle and are left out.
        """
        return self._debug_handle_map

    @property
    def delegate_map(self) -> Dict[str, Dict[int, Dict[str, Any]]]:
        """Method -> {delegate index: {"name": backend id, "delegate_map": the
        backend's identifiers -> debug handles}}."""
        return self._delegate_map

    def debug_handle_info(self, handle: int, method_name: str = "forward") -> "DebugHandleInfo":
        """The operator node behind a debug handle, with the source line it came from.

        The runtime reports the handle of a failing delegate node
        (`EmberError.debug_handle`); this leads from it to the model code.
        """
        if method_name not in self._methods:
            raise KeyError(f"no method {method_name!r}; methods are {sorted(self._methods)}")
        nodes = all_handle_nodes(self._methods[method_name].ep.graph_module)
        if handle not in nodes:
            raise KeyError(f"method {method_name!r} has no node with debug handle {handle}")
        return DebugHandleInfo.of(handle, nodes[handle])

    @property
    def memory_plans(self) -> Dict[str, MemoryPlan]:
        return {name: m.plan for name, m in self._methods.items()}

    def memory_planning_report(self) -> str:
        """Planned bytes per method and buffer against the naive sum of tensor sizes."""
        return format_report(list(self.memory_plans.values()))



def _executorch_program(methods: Dict[str, ExportedProgram],
                        config: Optional[ExecutorchBackendConfig]) -> ExecutorchProgramManager:
    return ExecutorchProgramManager(methods, None, config or ExecutorchBackendConfig())


# A lowered module emitted as a program of its own (LoweredBackendModule.program)
# goes through this stage, which the backends stage below it does not import.
_lowered.program_builder = _executorch_program

# --------------------------------------------------------------------------- #
# Entry points
# --------------------------------------------------------------------------- #


def _as_dict(programs: Union[ExportedProgram, Dict[str, ExportedProgram]]
             ) -> Dict[str, ExportedProgram]:
    if isinstance(programs, ExportedProgram):
        return {"forward": programs}
    if isinstance(programs, dict) and all(isinstance(p, ExportedProgram)
                                          for p in programs.values()):
        return dict(programs)
    raise TypeError("to_edge takes an ExportedProgram or a dict of them, keyed by method name")


def to_edge(
    programs: Union[ExportedProgram, Dict[str, ExportedProgram]],
    constant_methods: Optional[Dict[str, Any]] = None,
    compile_config: Optional[EdgeCompileConfig] = None,
    generate_etrecord: bool = False,
) -> "EdgeProgramManager":
    """Converts exported programs (one, or {method name: program}) to edge programs."""
    config = compile_config or EdgeCompileConfig()
    edge = {name: convert_to_edge(ep, config) for name, ep in _as_dict(programs).items()}
    return EdgeProgramManager(edge, constant_methods, config)


def to_edge_transform_and_lower(
    programs: Union[ExportedProgram, Dict[str, ExportedProgram]],
    transform_passes: Optional[Union[Sequence[Any], Dict[str, Sequence[Any]]]] = None,
    partitioner: Optional[Union[Any, List[Any], Dict[str, List[Any]]]] = None,
    constant_methods: Optional[Dict[str, Any]] = None,
    compile_config: Optional[EdgeCompileConfig] = None,
    generate_etrecord: bool = False,
) -> "EdgeProgramManager":
    """to_edge, then the transform passes, then lowering with each partitioner in turn.

    Ops a partitioner asks to keep whole (`ops_to_not_decompose`) are kept out
    of the decomposition, so that the partitioner can match them. When the
    partitioner also gives a filter, an op stays whole only if the filter
    accepts every one of its nodes: a node the partitioner would leave
    outside must decompose, since the runtime has kernels for core ATen only.
    """
    config = compile_config or EdgeCompileConfig()
    progs = _as_dict(programs)
    if partitioner is None:
        per_method: Dict[str, List[Any]] = {name: [] for name in progs}
    elif isinstance(partitioner, dict):
        per_method = {name: list(partitioner.get(name, [])) for name in progs}
    else:
        plist = list(partitioner) if isinstance(partitioner, (list, tuple)) else [partitioner]
        per_method = {name: plist for name in progs}

    edge: Dict[str, ExportedProgram] = {}
    for name, ep in progs.items():
        keep: List[OpOverload] = []
        for p in per_method[name]:
            ops, accept = p.ops_to_not_decompose(ep)
            for op in ops:
                nodes = [n for n in ep.graph.nodes if n.op == "call_function" and n.target == op]
                if not op.is_view and (accept is None or all(accept(n) for n in nodes)):
                    keep.append(op)
        edge[name] = convert_to_edge(ep, config, preserve=keep)
    manager = EdgeProgramManager(edge, constant_methods, config)
    if transform_passes is not None:
        manager = manager.transform(transform_passes)
    rounds = max((len(v) for v in per_method.values()), default=0)
    for i in range(rounds):
        manager = manager.to_backend(
            {name: plist[i] for name, plist in per_method.items() if i < len(plist)})
    return manager

