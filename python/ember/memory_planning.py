"""Memory planning: every non-constant tensor gets a buffer id and a byte offset.

The planner works on an execution graph whose nodes carry TensorSpecs
(`tensor_spec.py`). A tensor's lifetime is the inclusive range of node
indices that produce or use its storage; two tensors may share bytes only if
their lifetimes are disjoint. Inputs, outputs and mutated buffers are planned
by default (switches below); mutated buffers live for the whole method.

The algorithm is greedy best-fit: tensors are placed largest first, each into
the smallest gap (between tensors whose lifetimes overlap its own) that holds
it, or after all of them. Sizes and offsets are multiples of `alignment`.

Several buffers ("memory ids") are supported: `memory_id` (a hook) or
`buffer_memory_ids` (by buffer name) may send a tensor to buffer 2, 3, ...,
for example a KV cache that an embedded caller places in its own RAM.
`non_const_buffer_sizes[k]` is the size of buffer k; entry 0 is reserved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from torch.fx import GraphModule, Node
from torch.utils import _pytree as pytree

from .graph_utils import cond_branches, is_cond
from .tensor_spec import TensorSpec, tensor_specs


def _align(n: int, alignment: int) -> int:
    return n + (-n % alignment)


@dataclass
class BufferReport:
    memory_id: int
    planned_bytes: int  # the buffer's size after planning
    naive_bytes: int  # every planned tensor in its own aligned slot
    tensors: int


@dataclass
class MemoryPlan:
    """Result of planning one method."""

    method: str
    # non_const_buffer_sizes: [0, size of buffer 1, size of buffer 2, ...]
    buffer_sizes: List[int]
    buffers: List[BufferReport] = field(default_factory=list)

    @property
    def planned_bytes(self) -> int:
        return sum(self.buffer_sizes)

    @property
    def naive_bytes(self) -> int:
        return sum(b.naive_bytes for b in self.buffers)


def format_report(plans: Sequence[MemoryPlan]) -> str:
    """A table of planned vs naive bytes per method and buffer."""
    rows = []
    for p in plans:
        for b in p.buffers:
            saved = 1 - b.planned_bytes / b.naive_bytes if b.naive_bytes else 0.0
            rows.append([p.method, b.memory_id, b.tensors, b.planned_bytes, b.naive_bytes,
                         f"{saved:.0%}"])
    headers = ["method", "buffer", "tensors", "planned bytes", "naive sum", "saved"]
    try:
        from tabulate import tabulate

        return tabulate(rows, headers=headers)
    except ImportError:  # tabulate is optional
        lines = ["  ".join(headers)] + ["  ".join(str(c) for c in r) for r in rows]
        return "\n".join(lines)


# A hook deciding the buffer of a tensor: (node that produces it, its spec) -> memory id.
MemoryIdFn = Callable[[Node, TensorSpec], Optional[int]]


@dataclass
class MemoryPlanningPass:
    alignment: int = 16
    alloc_graph_input: bool = True
    alloc_graph_output: bool = True
    alloc_mutable_buffers: bool = True
    # "greedy" (lifetime-based best fit) or "naive" (every tensor its own slot).
    algorithm: str = "greedy"
    memory_id: Optional[MemoryIdFn] = None
    # Mutated buffers by fully qualified name -> memory id (e.g. {"k_cache": 2}).
    buffer_memory_ids: Dict[str, int] = field(default_factory=dict)

    def run(self, gm: GraphModule, method: str = "forward") -> MemoryPlan:
        if self.alignment <= 0 or self.alignment & (self.alignment - 1):
            raise ValueError(f"alignment must be a power of two, got {self.alignment}")
        nodes = _timeline(gm)
        last = len(nodes) - 1
        producers: Dict[int, Tuple[Node, TensorSpec]] = {}
        for i, node in enumerate(nodes):
            own = tensor_specs(node.meta.get("spec"))
            used = [s for a in _arg_nodes(node) for s in tensor_specs(a.meta.get("spec"))]
            for spec in own:
                producers.setdefault(id(spec.storage), (node, spec.storage))
            for spec in list(own) + used:
                st = spec.storage
                lo, hi = st.lifetime
                lo = 0 if node.op == "placeholder" else (i if lo is None else min(lo, i))
                hi = i if hi is None else max(hi, i)
                if st.mutable_buffer is not None:
                    lo, hi = 0, last
                st.lifetime = [lo, hi]
        # A value that a MoveCall points at a branch result keeps that result alive.
        for node in nodes:
            for spec in tensor_specs(node.meta.get("spec")):
                for src in spec.moved_from:
                    st, end = src.storage, spec.storage.lifetime[1]
                    if st.lifetime[1] is not None and end is not None:
                        st.lifetime[1] = max(st.lifetime[1], end)

        by_buffer: Dict[int, List[TensorSpec]] = {}
        for node, spec in producers.values():
            if not self._planned(spec):
                continue
            mem_id = self._memory_id(node, spec)
            if mem_id < 1:
                raise ValueError(f"memory ids start at 1 (0 is reserved); got {mem_id}")
            by_buffer.setdefault(mem_id, []).append(spec)

        n_buffers = max(by_buffer, default=0)
        sizes = [0] * (n_buffers + 1)
        reports = []
        for mem_id in range(1, n_buffers + 1):
            specs = by_buffer.get(mem_id, [])
            place = _greedy if self.algorithm == "greedy" else _naive
            size = place(specs, self.alignment)
            for s in specs:
                s.mem_id = mem_id
            sizes[mem_id] = size
            naive = sum(_align(s.nbytes, self.alignment) for s in specs)
            reports.append(BufferReport(mem_id, size, naive, len(specs)))
        return MemoryPlan(method, sizes, reports)

    def _planned(self, spec: TensorSpec) -> bool:
        if spec.const:
            return False
        if spec.mutable_buffer is not None:
            return self.alloc_mutable_buffers
        if spec.is_input and not self.alloc_graph_input:
            return False
        if spec.is_output and not self.alloc_graph_output:
            return False
        return True

    def _memory_id(self, node: Node, spec: TensorSpec) -> int:
        if spec.mutable_buffer is not None and spec.mutable_buffer in self.buffer_memory_ids:
            return self.buffer_memory_ids[spec.mutable_buffer]
        if self.memory_id is not None:
            mem_id = self.memory_id(node, spec)
            if mem_id is not None:
                return mem_id
        return 1


def _timeline(gm: GraphModule) -> List[Node]:
    """Nodes in execution order: a torch.cond's branches run where the cond is."""
    out: List[Node] = []
    for n in gm.graph.nodes:
        if is_cond(n):
            for branch in cond_branches(gm, n):
                out.extend(b for b in _timeline(branch) if b.op != "placeholder")
        out.append(n)
    return out


def _arg_nodes(node: Node) -> Iterable[Node]:
    return [a for a in pytree.tree_leaves((node.args, node.kwargs)) if isinstance(a, Node)]


def _overlap(a: TensorSpec, b: TensorSpec) -> bool:
    return a.lifetime[0] <= b.lifetime[1] and b.lifetime[0] <= a.lifetime[1]


def _greedy(specs: List[TensorSpec], alignment: int) -> int:
    """Best fit, largest first; returns the buffer size."""
    order = sorted(specs, key=lambda s: (-_align(s.nbytes, alignment), s.lifetime[0]))
    placed: List[TensorSpec] = []
    size = 0
    for spec in order:
        need = _align(spec.nbytes, alignment)
        busy = sorted((p.mem_offset, _align(p.nbytes, alignment)) for p in placed
                      if _overlap(p, spec))
        best: Optional[int] = None
        best_gap = 0
        end = 0
        for off, sz in busy:
            gap = off - end
            if gap >= need and (best is None or gap < best_gap):
                best, best_gap = end, gap
            end = max(end, off + sz)
        spec.mem_offset = end if best is None else best
        placed.append(spec)
        size = max(size, spec.mem_offset + need)
    return size


def _naive(specs: List[TensorSpec], alignment: int) -> int:
    offset = 0
    for spec in sorted(specs, key=lambda s: s.lifetime[0]):
        spec.mem_offset = offset
        offset += _align(spec.nbytes, alignment)
    return offset


def tensor_lifetimes(gm: GraphModule) -> List[Tuple[str, TensorSpec]]:
    """(node name, storage spec) for every planned tensor, for debugging."""
    seen = set()
    out = []
    for node in gm.graph.nodes:
        for spec in tensor_specs(node.meta.get("spec")):
            st = spec.storage
            if st.mem_id is not None and id(st) not in seen:
                seen.add(id(st))
                out.append((node.name, st))
    return out

