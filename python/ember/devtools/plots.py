"""Plots of an Inspector's data, as matplotlib PNGs.

- `plot_op_times`: average time per operator per execute, slowest on top;
  delegated nodes in their backend's colour.
- `plot_timeline`: one execute, every event on its lane (instructions, and
  the nodes inside each delegate call) along the time axis.
- `plot_memory_plan`: the planned tensors of a method, as rectangles of
  their lifetime (execution steps) by their offset in the planned buffer.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Union

from .inspector import DELEGATE_CALL, Inspector

PathLike = Union[str, "os.PathLike[str]"]

_KERNEL, _DELEGATE, _NODE = "#4C72B0", "#DD8452", "#55A868"


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("plots need matplotlib (pip install matplotlib)") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig: Any, path: PathLike) -> str:
    fig.tight_layout()
    fig.savefig(os.fspath(path), dpi=80)
    _pyplot().close(fig)
    return os.fspath(path)


def plot_op_times(inspector: Inspector, path: PathLike, block: Optional[str] = None,
                  top: int = 20) -> str:
    """Horizontal bars: total average time per operator in one execute (ms)."""
    plt = _pyplot()
    rows = inspector.op_times(block)[:top]
    fig, ax = plt.subplots(figsize=(10, 0.32 * max(len(rows), 3) + 1.2))
    names = [r[0] for r in rows][::-1]
    vals = [r[1] for r in rows][::-1]
    colors = [_NODE if "[" in n else _KERNEL for n in names]
    ax.barh(range(len(rows)), vals, color=colors)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{n}  ×{r[2]}" for n, r in zip(names, rows[::-1])], fontsize=8)
    ax.set_xlabel("ms per execute (average over runs)")
    ax.set_title(f"time per operator — {block or inspector.method}")
    return _save(fig, path)


def plot_timeline(inspector: Inspector, path: PathLike, block: Optional[str] = None,
                  run: int = 0, max_labels: int = 30) -> str:
    """One execute as a Gantt chart: kernel instructions and delegate calls on
    the first lane, the nodes inside delegates on the second."""
    plt = _pyplot()
    b = inspector.block(block)
    evs = [e for e in b.events if len(e.start_ns) > run and e.instruction_id >= 0 or
           (e.is_delegated_op and len(e.start_ns) > run)]
    fig, ax = plt.subplots(figsize=(11, 3.6))
    t0 = min((e.start_ns[run] for e in evs), default=0)
    labelled = sorted(evs, key=lambda e: -(e.end_ns[run] - e.start_ns[run]))[:max_labels]
    for e in evs:
        s, d = (e.start_ns[run] - t0) / 1e3, (e.end_ns[run] - e.start_ns[run]) / 1e3
        lane = 0 if e.is_delegated_op else 1
        color = _NODE if e.is_delegated_op else (_DELEGATE if e.raw_name == DELEGATE_CALL
                                                  else _KERNEL)
        ax.broken_barh([(s, max(d, 1e-3))], (lane - 0.4, 0.8), facecolors=color,
                       edgecolors="white", linewidth=0.3)
        if e in labelled and d > 0:
            ax.text(s + d / 2, lane + (0.5 if lane else -0.55), e.name.split(" (")[0],
                    rotation=60, fontsize=6, ha="left" if lane else "right",
                    va="bottom" if lane else "top")
    ax.set_yticks([0, 1])
    ax.set_yticklabels(["inside delegates", "instructions"])
    ax.set_ylim(-3.6, 3.8)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=_KERNEL, label="kernel"),
                       Patch(color=_DELEGATE, label="delegate call"),
                       Patch(color=_NODE, label="node inside a delegate")],
              loc="lower right", fontsize=7, ncol=3, frameon=False)
    ax.set_xlabel("µs from the start of the execute")
    ax.set_title(f"timeline of one execute — {b.name} (run {run})", pad=40)
    return _save(fig, path)


def plot_memory_plan(inspector: Inspector, path: PathLike,
                     method: Optional[str] = None) -> str:
    """Planned tensors: x = lifetime (execution steps), y = offset in the buffer."""
    plt = _pyplot()
    method = method or inspector.method
    rec = inspector.etrecord
    plan = rec.memory_plan.get(method) if rec else None
    if not plan:
        raise ValueError(f"the ETRecord has no memory plan for {method!r} (the memory plan "
                         "plot needs an ETRecord from ember's generate_etrecord)")
    by_mem: Dict[int, List[Any]] = {}
    for t in plan:
        by_mem.setdefault(t.mem_id, []).append(t)
    fig, axes = plt.subplots(len(by_mem), 1, figsize=(9, 3.2 * len(by_mem)), squeeze=False)
    cmap = plt.get_cmap("tab20")
    for ax, (mem, ts) in zip(axes[:, 0], sorted(by_mem.items())):
        for i, t in enumerate(ts):
            ax.broken_barh([(t.first, t.last - t.first + 1)], (t.offset / 1024, t.nbytes / 1024),
                           facecolors=cmap(i % 20), edgecolors="black", linewidth=0.3)
        top = max(t.offset + t.nbytes for t in ts) / 1024
        ax.set_ylim(0, top * 1.02 or 1)
        ax.set_xlim(0, max(t.last for t in ts) + 2)
        ax.set_xlabel("execution step")
        ax.set_ylabel("offset (KiB)")
        ax.set_title(f"memory plan — {method}, buffer {mem}: {len(ts)} tensors in "
                     f"{top:.1f} KiB")
    return _save(fig, path)


def write_plots(inspector: Inspector, outdir: PathLike, prefix: str = "") -> List[str]:
    """Every plot the data allows, into outdir; returns the files written."""
    os.makedirs(outdir, exist_ok=True)
    out = [plot_op_times(inspector, os.path.join(outdir, f"{prefix}op_times.png")),
           plot_timeline(inspector, os.path.join(outdir, f"{prefix}timeline.png"))]
    rec = inspector.etrecord
    if rec and rec.memory_plan.get(inspector.method):
        out.append(plot_memory_plan(inspector, os.path.join(outdir, f"{prefix}memory_plan.png")))
    return out
