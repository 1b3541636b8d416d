"""The Inspector: ember's traces (ETDump) joined with the program's ETRecord.

    from ember.devtools import Inspector
    inspector = Inspector(etdump_path="model.etdp", etrecord="model.etrecord")
    inspector.print_data_tabular()

Events of runs with the same name (every execute of a method) are gathered
into one `EventBlock`; each event carries its timings over those runs, the
operator nodes it runs (by debug handle, through the ETRecord), their module
and source line, and the outputs the runtime recorded. Delegate-internal
events are named after the edge node they run. Nothing here needs the
executorch package.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple, Union

import torch

from .etdump_reader import ETDump, ETDumpError, RunData, TensorRef, parse_etdump
from .etrecord import ETRecord, NodeInfo, as_etrecord

PathLike = Union[str, "os.PathLike[str]"]

DELEGATE_CALL = "DELEGATE_CALL"


def _percentile(sorted_vals: Sequence[float], p: float) -> float:
    if not sorted_vals:
        return float("nan")
    k = (len(sorted_vals) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (k - lo)


@dataclass
class PerfStats:
    """Durations of one event over the runs of its block, in milliseconds."""

    raw: List[float]

    @property
    def count(self) -> int:
        return len(self.raw)

    def _s(self) -> List[float]:
        return sorted(self.raw)

    @property
    def min(self) -> float:
        return min(self.raw) if self.raw else float("nan")

    @property
    def max(self) -> float:
        return max(self.raw) if self.raw else float("nan")

    @property
    def avg(self) -> float:
        return sum(self.raw) / len(self.raw) if self.raw else float("nan")

    @property
    def p50(self) -> float:
        return _percentile(self._s(), 50)

    @property
    def p90(self) -> float:
        return _percentile(self._s(), 90)


@dataclass
class Event:
    """One event of a block (an instruction, a delegate call, a node inside a
    delegate, or a load/execute phase), over every run of the block."""

    name: str  # what the table shows: operator, or the delegate node's operator
    raw_name: str  # the name the runtime recorded (kernel key, node type, phase)
    chain_index: int
    instruction_id: int
    delegate_debug_id: Optional[int]
    debug_handles: List[int]
    is_delegated_op: bool
    delegate_backend_name: Optional[str]
    nodes: List[NodeInfo]
    perf_data: PerfStats
    start_ns: List[int] = field(default_factory=list)  # per run, relative to its run's start
    end_ns: List[int] = field(default_factory=list)
    debug_data: List[Any] = field(default_factory=list)  # the output, per run (tensors)

    @property
    def op_types(self) -> List[str]:
        return [n.op for n in self.nodes]

    @property
    def module(self) -> str:
        """The innermost module that made the nodes (their common one), "" when unknown."""
        paths = [n.module_stack for n in self.nodes if n.module_stack]
        if not paths:
            return ""
        common = paths[0]
        for p in paths[1:]:
            i = 0
            while i < min(len(common), len(p)) and common[i][0] == p[i][0]:
                i += 1
            common = common[:i]
        return (common[-1][0] or "<root>") if common else "<root>"

    @property
    def module_type(self) -> str:
        paths = [n.module_stack for n in self.nodes if n.module_stack]
        if len(paths) == 1 or (paths and all(p == paths[0] for p in paths)):
            return paths[0][-1][1]
        return ""

    @property
    def source(self) -> str:
        """'model.py:42' of the first node that has a stack trace, "" if none."""
        for n in self.nodes:
            loc = n.source_file_line
            if loc:
                return loc
        return ""


@dataclass
class EventBlock:
    """Every run that has this name (a method's executes, or its load)."""

    name: str
    runs: int
    events: List[Event]
    run_output: List[Any] = field(default_factory=list)  # the method's outputs, last run


def _short_op(op: str) -> str:
    """'aten::convolution.default' / 'aten.convolution.default' -> 'convolution'."""
    s = op.replace("::", ".")
    parts = s.split(".")
    if len(parts) >= 3:
        name = parts[-2]
    else:
        name = parts[-1] if len(parts) == 2 and parts[0] in ("aten", "quantized_decomposed",
                                                             "ember", "llama") else s
    return _SHORTER.get(name, name)


# operators whose schema names read badly in a table
_SHORTER = {"_native_batch_norm_legit_no_training": "batch_norm",
            "_native_batch_norm_legit": "batch_norm"}


def _read(path: Optional[PathLike], what: str) -> Optional[bytes]:
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ETDumpError(f"cannot read the {what} {os.fspath(path)!r}: {e.strerror}") from None


class Inspector:
    """Reads an ETDump (and optionally its debug buffer and the program's ETRecord).

    etdump_path / etdump_data: the trace (a file, or its bytes).
    etrecord: an ETRecord (object from generate_etrecord, or a path) of the
        same program, for operator names, source lines and delegate nodes.
    debug_buffer_path / debug_buffer: the recorded tensors (`--debug-outputs`).
    method: the method whose instructions the ETRecord maps ("forward").
    Raises ETDumpError / ETRecordError naming the problem with either file.
    """

    def __init__(self, etdump_path: Optional[PathLike] = None,
                 etrecord: Union[None, ETRecord, PathLike] = None,
                 debug_buffer_path: Optional[PathLike] = None, *,
                 etdump_data: Optional[bytes] = None, debug_buffer: Optional[bytes] = None,
                 method: str = "forward") -> None:
        if etdump_data is None:
            if etdump_path is None:
                raise ValueError("Inspector needs etdump_path (or etdump_data)")
            etdump_data = _read(etdump_path, "ETDump")
        if debug_buffer is None:
            debug_buffer = _read(debug_buffer_path, "debug buffer")
        self.etdump: ETDump = parse_etdump(etdump_data)
        self.etrecord: Optional[ETRecord] = as_etrecord(etrecord)
        self.method = method
        self._debug = debug_buffer
        self.event_blocks: List[EventBlock] = self._blocks()

    @classmethod
    def from_method(cls, method: Any, etrecord: Union[None, ETRecord, PathLike] = None,
                    **kw: Any) -> "Inspector":
        """An Inspector over what an ember.runtime.Method loaded with an event
        tracer has recorded so far (its etdump() and debug_buffer())."""
        debug = method.debug_buffer()
        return cls(etdump_data=method.etdump(), etrecord=etrecord,
                   debug_buffer=debug or None, method=method.name, **kw)

    # ------------------------------------------------------------------ build

    def _node(self, h: int) -> Optional[NodeInfo]:
        return self.etrecord.node(h, self.method) if self.etrecord else None

    def _instr_handles(self, instr: int) -> List[int]:
        if not self.etrecord:
            return []
        return list(self.etrecord.debug_handle_map.get(self.method, {}).get(instr, []))

    def _delegate_handles(self, instr: int, debug_id: int) -> List[int]:
        """The handles behind a delegate's own identifier: through the delegate
        map of the delegate that instruction calls, else the id itself."""
        if not self.etrecord:
            return [debug_id]
        handles = set(self._instr_handles(instr))
        for d in self.etrecord.delegate_map.get(self.method, {}).values():
            m = d.get("delegate_map", {})
            hs = m.get(str(debug_id))
            if hs is not None and (not handles or set(hs) & handles):
                return [int(x) for x in hs]
        # no map entry: ember's backends report the node's own debug handle
        return [debug_id]

    def _describe(self, raw: str, instr: int, did: int) -> Tuple[str, List[int], bool,
                                                                  Optional[str]]:
        if did >= 0:  # an event from inside a delegate
            hs = self._delegate_handles(instr, did)
            nodes = [n for n in (self._node(h) for h in hs) if n]
            backend = next((n.backend for n in nodes if n.backend), None) or \
                self._backend_of(instr)
            ops = "+".join(_short_op(n.op) for n in nodes)
            name = (f"{raw} ({ops})" if raw != ops else ops) if nodes else f"{raw} #{did}"
            return name, hs, True, backend
        hs = self._instr_handles(instr) if instr >= 0 else []
        nodes = [n for n in (self._node(h) for h in hs) if n]
        if raw == DELEGATE_CALL:
            backend = self._backend_of(instr)
            label = backend or "delegate"
            return f"{label} ({len(hs)} nodes)" if hs else label, hs, False, backend
        if nodes:
            return _short_op(nodes[0].op), hs, False, None
        return (_short_op(raw) if raw.startswith("aten::") else raw), hs, False, None

    def _backend_of(self, instr: int) -> Optional[str]:
        for h in self._instr_handles(instr):
            n = self._node(h)
            if n and n.backend:
                return n.backend
        # ExecuTorch's ETRecord keys its delegate map by instruction id
        d = self.etrecord.delegate_map.get(self.method, {}).get(instr) if self.etrecord else None
        return d.get("name") if isinstance(d, dict) else None

    def _blocks(self) -> List[EventBlock]:
        groups: Dict[str, List[RunData]] = {}
        for run in self.etdump.run_data:
            groups.setdefault(run.name, []).append(run)
        blocks = []
        for name, runs in groups.items():
            events: Dict[Tuple, Event] = {}
            order: List[Tuple] = []
            out: List[Any] = []
            for run in runs:
                t0 = min((p.start_time for p in run.profile_events), default=0)
                seen: Dict[Tuple, int] = {}
                by_instr: Dict[Tuple[int, int, int], List[Event]] = {}
                for p in run.profile_events:
                    base = (p.name, p.chain_index, p.instruction_id, p.delegate_debug_id_int)
                    k = base + (seen.get(base, 0),)
                    seen[base] = k[-1] + 1
                    ev = events.get(k)
                    if ev is None:
                        label, hs, deleg, backend = self._describe(
                            p.name, p.instruction_id, p.delegate_debug_id_int)
                        ev = Event(label, p.name, p.chain_index, p.instruction_id,
                                   p.delegate_debug_id_int if deleg else None, hs, deleg,
                                   backend, [n for n in (self._node(h) for h in hs) if n],
                                   PerfStats([]))
                        events[k] = ev
                        order.append(k)
                    ev.perf_data.raw.append(max(0, p.end_time - p.start_time) / 1e6)
                    ev.start_ns.append(p.start_time - t0)
                    ev.end_ns.append(p.end_time - t0)
                    if p.instruction_id >= 0:
                        by_instr.setdefault((p.chain_index, p.instruction_id,
                                             max(-1, p.delegate_debug_id_int)), []).append(ev)
                out = []
                taken: Dict[Tuple[int, int, int], int] = {}
                for d in run.debug_events:
                    val = self._load(d.value)
                    if d.output:
                        out.append(val)
                        continue
                    # a delegate's own debug event goes to the node it names;
                    # nodes sharing a handle take their outputs in run order
                    key = (d.chain_index, d.instruction_id, max(-1, d.delegate_debug_id_int))
                    evs = by_instr.get(key, [])
                    if evs:
                        k = taken.get(key, 0)
                        taken[key] = k + 1
                        evs[min(k, len(evs) - 1)].debug_data.append(val)
            # execution order: a delegate call starts before the nodes it runs
            ordered = sorted((events[k] for k in order),
                             key=lambda e: (e.start_ns[0] if e.start_ns else 0,
                                            e.is_delegated_op))
            blocks.append(EventBlock(name, len(runs), ordered, out))
        return blocks

    def _load(self, v: Any) -> Any:
        if isinstance(v, TensorRef):
            return v.load(self._debug)
        if isinstance(v, list):
            return [self._load(x) for x in v]
        return v

    # ------------------------------------------------------------------ queries

    def block(self, name: Optional[str] = None) -> EventBlock:
        """The block of a method's executes (default: the inspected method)."""
        name = name or self.method
        for b in self.event_blocks:
            if b.name == name:
                return b
        raise KeyError(f"the ETDump has no runs named {name!r}; it has "
                       f"{[b.name for b in self.event_blocks]}")

    def rows(self, include_delegate_nodes: bool = True) -> List[Dict[str, Any]]:
        out = []
        for b in self.event_blocks:
            for e in b.events:
                if e.is_delegated_op and not include_delegate_nodes:
                    continue
                s = e.perf_data
                out.append({
                    "event_block_name": b.name, "event_name": e.name, "raw_name": e.raw_name,
                    "instruction_id": e.instruction_id, "is_delegated_op": e.is_delegated_op,
                    "delegate_backend_name": e.delegate_backend_name,
                    "debug_handles": e.debug_handles, "op_types": e.op_types,
                    "count": s.count, "min_ms": s.min, "avg_ms": s.avg, "p50_ms": s.p50,
                    "p90_ms": s.p90, "max_ms": s.max, "module": e.module,
                    "module_type": e.module_type, "source": e.source,
                })
        return out

    def to_dataframe(self, include_delegate_nodes: bool = True) -> Any:
        """One row per event (pandas DataFrame): name, statistics, module, source."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the installation
            raise ImportError("to_dataframe needs pandas (pip install pandas)") from e
        return pd.DataFrame(self.rows(include_delegate_nodes))

    def format_table(self, block: Optional[str] = None, tablefmt: str = "simple") -> str:
        from tabulate import tabulate
        headers = ["event", "backend", "count", "min ms", "avg ms", "p50 ms", "p90 ms",
                   "max ms", "module", "source"]
        text = []
        for b in self.event_blocks:
            if block is not None and b.name != block:
                continue
            rows = []
            for e in b.events:
                s = e.perf_data
                name = ("  └ " + e.name) if e.is_delegated_op else e.name
                rows.append([name, e.delegate_backend_name or "", s.count, s.min, s.avg, s.p50,
                             s.p90, s.max, e.module, e.source])
            text.append(f"{b.name} ({b.runs} run{'s' if b.runs != 1 else ''})\n" +
                        tabulate(rows, headers=headers, floatfmt=".4f", tablefmt=tablefmt))
        return "\n\n".join(text)

    def print_data_tabular(self, file: Optional[TextIO] = None,
                           block: Optional[str] = None) -> None:
        """Prints every block's events with their statistics (milliseconds)."""
        print(self.format_table(block), file=file or sys.stdout)

    def slowest(self, n: int = 5, block: Optional[str] = None,
                delegated: Optional[bool] = None) -> List[Event]:
        """The n events with the largest average time (operator events only)."""
        evs = [e for e in self.block(block).events if e.instruction_id >= 0 or e.is_delegated_op]
        if delegated is not None:
            evs = [e for e in evs if e.is_delegated_op == delegated]
        return sorted(evs, key=lambda e: -e.perf_data.avg)[:n]

    def source_of(self, handle: int) -> str:
        """'model.py:42 in forward: `...`' for a debug handle, through the ETRecord."""
        n = self._node(handle)
        if n is None:
            raise KeyError(f"debug handle {handle} is not in the ETRecord of {self.method!r}")
        return n.source

    def op_times(self, block: Optional[str] = None) -> List[Tuple[str, float, int]]:
        """(operator, total average ms per run, events) over the block, slowest first;
        a delegate call counts by its nodes when they were traced."""
        b = self.block(block)
        traced = {e.instruction_id for e in b.events if e.is_delegated_op}
        acc: Dict[str, List[float]] = {}
        for e in b.events:
            if e.instruction_id < 0 and not e.is_delegated_op:
                continue
            if e.raw_name == DELEGATE_CALL and e.instruction_id in traced:
                continue
            key = e.name + (f" [{e.delegate_backend_name}]" if e.is_delegated_op else "")
            a = acc.setdefault(key, [0.0, 0])
            a[0] += e.perf_data.avg
            a[1] += 1
        return sorted(((k, v[0], int(v[1])) for k, v in acc.items()), key=lambda r: -r[1])

    # ------------------------------------------------------------------ numerics

    def calculate_numeric_gap(self, inputs: Sequence[Any], reference: Any = None,
                              distance: str = "MSE", block: Optional[str] = None,
                              run: int = -1) -> List[Dict[str, Any]]:
        """Compares every recorded intermediate output with eager PyTorch.

        inputs: the inputs the traced execute was given.
        reference: the edge program (ExportedProgram or EdgeProgramManager) to
            run eagerly; default: the one in the ETRecord.
        Returns one row per instruction (and per node inside a delegate that
        reports its outputs) with a recorded tensor output, in the order the
        outputs were made: instruction, operator, handle, source, the distance
        ("MSE", "L1" or "MAX_ABS") and the relative error.
        """
        from .numeric import eager_intermediates, gap
        ep = reference
        if ep is None:
            progs = self.etrecord.edge_dialect_program if self.etrecord else None
            ep = (progs or {}).get(self.method)
        if ep is None:
            raise ValueError("calculate_numeric_gap needs the edge program: pass reference= "
                             "(the EdgeProgramManager or ExportedProgram) or an ETRecord that "
                             "holds it")
        if hasattr(ep, "exported_program") and callable(ep.exported_program):
            ep = ep.exported_program(self.method)
        eager = eager_intermediates(ep, inputs)
        rows = []
        # in the order the outputs were made: a delegate call's after its nodes'
        events = sorted(self.block(block).events,
                        key=lambda e: e.end_ns[run] if e.end_ns else 0)
        for e in events:
            if e.instruction_id < 0 or not e.debug_data:
                continue
            got = e.debug_data[run]
            if not isinstance(got, torch.Tensor):
                continue
            # the instruction's output is its last node's: the latest handle
            # whose eager value has the recorded shape, in one of the layouts
            # a delegate may keep it in
            best, handle = None, None
            for h in sorted(e.debug_handles, reverse=True):
                for v in _tensors(eager.get(h)):
                    for w in _layouts(v):
                        if tuple(w.shape) == tuple(got.shape):
                            d, rel = gap(got, w, distance)
                            if best is None or rel < best[1]:
                                best, handle = (d, rel), h
                if best is not None:
                    break
            if best is None:
                continue
            d, rel = best
            n = self._node(handle)
            rows.append({"instruction_id": e.instruction_id, "event_name": e.name,
                         "debug_handle": handle, "backend": e.delegate_backend_name or "",
                         "source": n.source if n else "", "module": e.module,
                         distance.lower(): d, "rel_err": rel})
        return rows

    def first_divergences(self, inputs: Sequence[Any], reference: Any = None,
                          rtol: float = 1e-4, k: int = 5, **kw: Any) -> List[Dict[str, Any]]:
        """The first k instructions (in execution order) whose relative error
        exceeds rtol: where a numeric problem starts, not where it ends up."""
        rows = self.calculate_numeric_gap(inputs, reference, **kw)
        return [r for r in rows if r["rel_err"] > rtol][:k]


def _layouts(v: torch.Tensor) -> List[torch.Tensor]:
    """v as PyTorch orders it, and as a channels-last delegate stores it:
    [N, C, H, W] as [N, H, W, C]; [N, C, L] as [N, L, 1, C] (a 1-d convolution
    run as a 2-d one). A delegate's trace records its own buffers as they are."""
    out = [v]
    if v.dim() == 4:
        out.append(v.permute(0, 2, 3, 1))
    elif v.dim() == 3:
        out.append(v.permute(0, 2, 1).unsqueeze(2))
    return out


def _tensors(v: Any) -> List[torch.Tensor]:
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _tensors(x)]
    return []
