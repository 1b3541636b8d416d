"""ETRecord: what the Inspector needs to know about a program, saved beside its `.pte`.

The file is ExecuTorch's ETRecord zip layout:

- `ETRECORD_V0`: empty; marks the file as an ETRecord;
- `debug_handle_map`: JSON, method -> instruction id -> debug handles;
- `delegate_map`: JSON, method -> delegate index -> {"name": backend id,
  "delegate_map": the backend's ids -> handles};
- `instruction_id_to_num_outs_map`: JSON, method -> instruction id -> outputs;
- `ember_debug_info_example_inputs`: JSON, ember's own: every node's
  operator, source stack trace, module hierarchy and backend, and each
  method's memory plan;
- `edge_dialect_exported_program/<method>` and its `_state_dict`,
  `_constants` and `_example_inputs`: the edge program as ExecuTorch's
  ETRecord stores it (etrecord_program.py: torch.export's serialization at
  ExecuTorch's schema version, delegates inlined), so ExecuTorch's
  parse_etrecord and Inspector read ember's file whole.

ember's parse_etrecord reads ember's files and ExecuTorch's.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Dict, List, Optional, Tuple, Union

import torch
from torch.export import ExportedProgram
from torch.fx import GraphModule, Node

from ..backend.lowered import LoweredBackendModule
from ..errors import source_location, stack_frames
from ..memory_planning import tensor_lifetimes
from ..passes.debug_handles import handle_nodes
from .etrecord_program import (ProgramNotWritable, deserialize_edge_program,
                               serialize_edge_program)

PathLike = Union[str, "os.PathLike[str]"]

IDENTIFIER = "ETRECORD_V0"
EDGE_PREFIX = "edge_dialect_exported_program"
DEBUG_HANDLE_MAP = "debug_handle_map"
DELEGATE_MAP = "delegate_map"
NUM_OUTS_MAP = "instruction_id_to_num_outs_map"
EMBER_INFO = "ember_debug_info_example_inputs"
EMBER_INFO_VERSION = 1


class ETRecordError(ValueError):
    """An ETRecord that cannot be written or read; the message says which part."""


@dataclass
class NodeInfo:
    """One operator node of the edge program, by debug handle."""

    handle: int
    name: str
    op: str
    source: str  # "model.py:42 in forward: `y = x.foo()`"
    stack_trace: Optional[str]
    module_stack: List[List[str]]  # [[fully qualified name, module type], ...], outermost first
    backend: Optional[str]  # the backend that runs it, None for a kernel
    shape: Optional[List[int]]

    @property
    def module_path(self) -> str:
        return "/".join(m[0] or "<root>" for m in self.module_stack) if self.module_stack else ""

    @property
    def source_file_line(self) -> Optional[str]:
        """'model.py:42' of the user frame, None without a stack trace."""
        frames = stack_frames(self.stack_trace)
        if not frames:
            return None
        user = [f for f in frames if "site-packages" not in f[0] and "/torch/" not in f[0]]
        f = (user or frames)[-1]
        return f"{os.path.basename(f[0])}:{f[1]}"


@dataclass
class PlannedTensor:
    """A planned tensor of the execution graph: where it lives and when."""

    name: str
    mem_id: int
    offset: int
    nbytes: int
    first: int  # first and last step (execution graph node index) it is alive
    last: int


@dataclass
class ETRecord:
    """What generate_etrecord saves and parse_etrecord reads back."""

    edge_dialect_program: Optional[Dict[str, ExportedProgram]] = None
    debug_handle_map: Dict[str, Dict[int, List[int]]] = field(default_factory=dict)
    delegate_map: Dict[str, Dict[int, Dict[str, Any]]] = field(default_factory=dict)
    instruction_id_to_num_outs_map: Dict[str, Dict[int, int]] = field(default_factory=dict)
    nodes: Dict[str, Dict[int, NodeInfo]] = field(default_factory=dict)
    memory_plan: Dict[str, List[PlannedTensor]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    def node(self, handle: int, method: str = "forward") -> Optional[NodeInfo]:
        return self.nodes.get(method, {}).get(handle)

    def save(self, path: Union[PathLike, BinaryIO]) -> None:
        _write(self, path)


def _op_name(n: Node) -> str:
    t = n.target
    if hasattr(t, "name") and callable(t.name):
        return str(t.name())
    return getattr(t, "__name__", str(t))


def _shape(n: Node) -> Optional[List[int]]:
    v = n.meta.get("val")
    if isinstance(v, torch.Tensor):
        return [int(s) if isinstance(s, int) else -1 for s in v.shape]
    return None


def _module_stack(n: Node) -> List[List[str]]:
    stack = n.meta.get("nn_module_stack") or {}
    out = []
    for v in stack.values():
        if isinstance(v, (tuple, list)) and len(v) == 2:
            fqn, typ = v
            typ = typ if isinstance(typ, str) else getattr(typ, "__qualname__", str(typ))
            out.append([str(fqn), typ.rsplit(".", 1)[-1]])
    return out


def _collect_nodes(gm: GraphModule, backend: Optional[str],
                   out: Dict[int, NodeInfo]) -> None:
    for h, n in handle_nodes(gm).items():
        out.setdefault(h, NodeInfo(h, n.name, _op_name(n), source_location(n),
                                   n.meta.get("stack_trace"), _module_stack(n), backend,
                                   _shape(n)))
    for _, mod in gm.named_children():
        if isinstance(mod, LoweredBackendModule):
            _collect_nodes(mod.original_module.graph_module, mod.backend_id, out)


def _edge_programs(edge: Any) -> Dict[str, ExportedProgram]:
    if isinstance(edge, ExportedProgram):
        return {"forward": edge}
    if isinstance(edge, dict):
        return dict(edge)
    if hasattr(edge, "methods") and hasattr(edge, "exported_program"):
        return {m: edge.exported_program(m) for m in sorted(edge.methods)}
    raise ETRecordError(f"generate_etrecord: edge_dialect_program must be an EdgeProgramManager "
                        f"(from to_edge / to_edge_transform_and_lower) or an ExportedProgram, "
                        f"not {type(edge).__name__}")


def build_etrecord(edge_dialect_program: Any, executorch_program: Any) -> ETRecord:
    """The ETRecord of a program, in memory (generate_etrecord saves it)."""
    edge = _edge_programs(edge_dialect_program)
    for attr in ("debug_handle_map", "delegate_map", "execution_graph"):
        if not hasattr(executorch_program, attr):
            raise ETRecordError(
                "generate_etrecord: executorch_program must be the ExecutorchProgramManager "
                f"from ember's to_executorch(), not {type(executorch_program).__name__}")
    rec = ETRecord(edge_dialect_program=edge)
    rec.debug_handle_map = {m: {int(i): list(h) for i, h in d.items()}
                            for m, d in executorch_program.debug_handle_map.items()}
    rec.delegate_map = {m: {int(i): {"name": v["name"],
                                     "delegate_map": {str(k): list(h) for k, h in
                                                      v["delegate_map"].items()}}
                            for i, v in d.items()}
                        for m, d in executorch_program.delegate_map.items()}
    rec.instruction_id_to_num_outs_map = {
        m: {i: 1 for i in d} for m, d in rec.debug_handle_map.items()}
    for m, ep in edge.items():
        nodes: Dict[int, NodeInfo] = {}
        _collect_nodes(ep.graph_module, None, nodes)
        rec.nodes[m] = nodes
    for m in sorted(executorch_program.methods):
        try:
            gm = executorch_program.execution_graph(m)
        except Exception:  # constant methods have no graph
            continue
        plan = []
        for name, st in tensor_lifetimes(gm):
            first, last = st.lifetime if st.lifetime else (None, None)
            plan.append(PlannedTensor(name, int(st.mem_id), int(st.mem_offset or 0),
                                      int(st.nbytes), int(first if first is not None else 0),
                                      int(last if last is not None else 0)))
        rec.memory_plan[m] = plan
    return rec


def generate_etrecord(et_record: Union[PathLike, BinaryIO], edge_dialect_program: Any,
                      executorch_program: Any, exported_program: Any = None,
                      extra_recorded_export_modules: Any = None) -> ETRecord:
    """Writes the ETRecord of a program, as ExecuTorch's `generate_etrecord` does.

    et_record: the file to write (a path or a binary file object).
    edge_dialect_program: the EdgeProgramManager the program was made from
        (a deep copy taken before `to_executorch()`, as ExecuTorch's docs show).
    executorch_program: the ExecutorchProgramManager `to_executorch()` returned.
    exported_program, extra_recorded_export_modules: accepted for the same
        call signature; ember's Inspector does not use them.
    Returns the ETRecord it wrote. Raises ETRecordError on arguments of the
    wrong kind.
    """
    del exported_program, extra_recorded_export_modules
    rec = build_etrecord(edge_dialect_program, executorch_program)
    rec.save(et_record)
    return rec


def _node_to_json(n: NodeInfo) -> Dict[str, Any]:
    return {"name": n.name, "op": n.op, "source": n.source, "stack_trace": n.stack_trace,
            "module_stack": n.module_stack, "backend": n.backend, "shape": n.shape}


def _write(rec: ETRecord, path: Union[PathLike, BinaryIO]) -> None:
    if isinstance(path, (str, os.PathLike)):
        path = os.fspath(path)
    programs: Dict[str, Tuple[bytes, bytes, bytes, bytes]] = {}
    notes = list(rec.notes)
    for method, ep in sorted((rec.edge_dialect_program or {}).items()):
        try:
            programs[method] = serialize_edge_program(ep)
        except ProgramNotWritable as e:
            notes.append(f"edge program of {method!r} not written: {e}")
    info: Dict[str, Any] = {
        "version": EMBER_INFO_VERSION,
        "nodes": {m: {str(h): _node_to_json(n) for h, n in d.items()}
                  for m, d in rec.nodes.items()},
        "memory_plan": {m: [[t.name, t.mem_id, t.offset, t.nbytes, t.first, t.last] for t in p]
                        for m, p in rec.memory_plan.items()},
        "notes": notes,
    }
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(IDENTIFIER, "")
        z.writestr(DEBUG_HANDLE_MAP, json.dumps(
            {m: {str(i): h for i, h in d.items()} for m, d in rec.debug_handle_map.items()}))
        z.writestr(DELEGATE_MAP, json.dumps(
            {m: {str(i): v for i, v in d.items()} for m, d in rec.delegate_map.items()}))
        z.writestr(NUM_OUTS_MAP, json.dumps(
            {m: {str(i): v for i, v in d.items()}
             for m, d in rec.instruction_id_to_num_outs_map.items()}))
        z.writestr(EMBER_INFO, json.dumps(info))
        for method in sorted(programs):
            base = f"{EDGE_PREFIX}/{method}"
            for suffix, data in zip(("", "_state_dict", "_constants", "_example_inputs"),
                                    programs[method]):
                z.writestr(base + suffix, data)


def _json_entry(z: zipfile.ZipFile, name: str, path: str) -> Any:
    try:
        return json.loads(z.read(name))
    except (ValueError, UnicodeDecodeError) as e:
        raise ETRecordError(f"{path}: entry {name!r} is not valid JSON ({e})") from None
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as e:
        raise ETRecordError(f"{path}: entry {name!r} is damaged ({e})") from None


def _int_keys(d: Any, what: str, path: str) -> Dict[str, Dict[int, Any]]:
    if not isinstance(d, dict) or not all(isinstance(v, dict) for v in d.values()):
        raise ETRecordError(f"{path}: {what} must map method names to objects")
    try:
        return {m: {int(k): v for k, v in inner.items()} for m, inner in d.items()}
    except (TypeError, ValueError):
        raise ETRecordError(f"{path}: {what} has a key that is not an instruction id") from None


def _handles(h: Any, path: str) -> List[int]:
    """One instruction's handles: a list, or a single int (ExecuTorch writes both)."""
    if h is None:
        return []
    if isinstance(h, int) and not isinstance(h, bool):
        return [h]
    if isinstance(h, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in h):
        return list(h)
    raise ETRecordError(f"{path}: {DEBUG_HANDLE_MAP} holds {h!r} where debug handles belong")


def parse_etrecord(etrecord: Union[PathLike, BinaryIO], load_programs: bool = True) -> ETRecord:
    """Reads an ETRecord written by ember's or ExecuTorch's generate_etrecord.

    load_programs: also deserialize the edge programs (needs torch to know
        every operator they use; skipped with a note when it does not).
    Raises ETRecordError naming the problem for a file that is not an
    ETRecord or is damaged.
    """
    name = os.fspath(etrecord) if isinstance(etrecord, (str, os.PathLike)) else "ETRecord"
    try:
        z = zipfile.ZipFile(etrecord if not isinstance(etrecord, os.PathLike)
                            else os.fspath(etrecord))
    except FileNotFoundError:
        raise ETRecordError(f"{name}: no such file") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as e:
        raise ETRecordError(f"{name}: not an ETRecord (not a zip file: {e})") from None
    with z:
        names = set(z.namelist())
        if IDENTIFIER not in names:
            raise ETRecordError(f"{name}: not an ETRecord (no {IDENTIFIER} entry)")
        if DEBUG_HANDLE_MAP not in names:
            raise ETRecordError(f"{name}: the ETRecord has no {DEBUG_HANDLE_MAP}")
        rec = ETRecord()
        rec.debug_handle_map = {m: {i: _handles(h, name) for i, h in d.items()}
                                for m, d in _int_keys(_json_entry(z, DEBUG_HANDLE_MAP, name),
                                                      DEBUG_HANDLE_MAP, name).items()}
        if DELEGATE_MAP in names:
            rec.delegate_map = _int_keys(_json_entry(z, DELEGATE_MAP, name), DELEGATE_MAP, name)
        if NUM_OUTS_MAP in names:
            rec.instruction_id_to_num_outs_map = _int_keys(
                _json_entry(z, NUM_OUTS_MAP, name), NUM_OUTS_MAP, name)
        if EMBER_INFO in names:
            _read_info(rec, _json_entry(z, EMBER_INFO, name), name)
        programs = sorted(n for n in names if n.startswith(EDGE_PREFIX + "/")
                          and not n.endswith(("_state_dict", "_constants", "_example_inputs")))
        if load_programs and programs:
            rec.edge_dialect_program = {}
            for base in programs:
                method = base[len(EDGE_PREFIX) + 1:]
                try:
                    ep = deserialize_edge_program(z.read(base), z.read(base + "_state_dict"),
                                                  z.read(base + "_constants"),
                                                  z.read(base + "_example_inputs"))
                except KeyError as e:
                    raise ETRecordError(f"{name}: program {base!r} lacks a side entry ({e})") \
                        from None
                except Exception as e:  # torch's deserializer raises many kinds
                    rec.notes.append(f"edge program of {method!r} not loaded: "
                                     f"{type(e).__name__}: {str(e)[:200]}")
                    continue
                rec.edge_dialect_program[method] = ep
                if method not in rec.nodes:
                    nodes: Dict[int, NodeInfo] = {}
                    _collect_nodes(ep.graph_module, None, nodes)
                    rec.nodes[method] = nodes
    return rec


def _read_info(rec: ETRecord, info: Any, path: str) -> None:
    if not isinstance(info, dict) or info.get("version") != EMBER_INFO_VERSION:
        raise ETRecordError(f"{path}: {EMBER_INFO} is not version {EMBER_INFO_VERSION} "
                            "of ember's debug info")
    try:
        for m, d in info.get("nodes", {}).items():
            rec.nodes[m] = {int(h): NodeInfo(int(h), v["name"], v["op"], v["source"],
                                             v.get("stack_trace"), v.get("module_stack") or [],
                                             v.get("backend"), v.get("shape"))
                            for h, v in d.items()}
        for m, p in info.get("memory_plan", {}).items():
            rec.memory_plan[m] = [PlannedTensor(str(a), int(b), int(c), int(d), int(e), int(f))
                                  for a, b, c, d, e, f in p]
        rec.notes.extend(str(n) for n in info.get("notes", []))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ETRecordError(f"{path}: {EMBER_INFO} is malformed ({type(e).__name__}: {e})") \
            from None


def as_etrecord(etrecord: Union[None, ETRecord, PathLike]) -> Optional[ETRecord]:
    if etrecord is None or isinstance(etrecord, ETRecord):
        return etrecord
    return parse_etrecord(etrecord)
