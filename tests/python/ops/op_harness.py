"""Runs PyTorch's OpInfo samples of each core ATen op through ember.

For a core op X:

1. Candidate OpInfos are the entries of torch's `op_db` whose function, run
   on a few samples, dispatches X (found once per session by tracing every
   OpInfo with a TorchDispatchMode). OpInfos named after X come first, then
   the ones that dispatch the fewest other core ops.
2. Each candidate's samples for each dtype are run under a dispatch mode
   that records every call of X with its exact ATen arguments. Such a call
   is one sample of X; its dtype is that of its first non-bool tensor
   argument (else its first tensor, else its output).
3. The samples of X go into one program: forward(*all tensor arguments)
   calls X once per sample and returns every result. A batch that torch or
   ember cannot export, or that fails in the runtime, is split in halves
   until the sample at fault is found, so one bad sample costs only its own
   result.
   Core ops that torch decomposes above the dispatcher (CompositeImplicit,
   e.g. upsample_nearest2d.vec) are never dispatched: their samples are the
   OpInfo's own function, exported whole, and count only when the program
   calls the op's kernel. Every export keeps the op under test whole
   (EdgeCompileConfig.preserve_ops): torch's decomposition table replaces
   some core ops too (reflection_pad2d, the norm backward ops, ...).
   A dtype that an OpInfo lists but whose samples never reach X in it gets
   the float32 samples with their tensors converted (`synthesize`); eager
   runs them or refuses the dtype, which then counts as unsupported.
   Ops that no OpInfo reaches take hand-written samples (manual_samples.py)
   in every dtype eager accepts; a few ops get hand-written samples besides
   their OpInfo ones, for cases the capped set misses (manual_samples.EXTRA:
   3-d convolution).
4. Every output is compared with eager PyTorch at the dtype's tolerance;
   NaN positions must match. Outputs of random or uninitialized ops are
   checked for dtype and shape only.

Mode: by default at most EMBER_OPS_CAP (3) samples per (op, dtype), taken from
at most 3 OpInfos per op and the first 20 samples of each; EMBER_OPS_FULL=1
takes every sample of every candidate OpInfo (about 190,000 with torch 2.13,
some two hours of one core; EMBER_OPS_SHARD=k/n splits the ops over n runs).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
import warnings
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import numpy as np
import torch
from torch._ops import OpOverload
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

import ember
from ember import dialect, ops_coverage
from ember.errors import ExportError
from ember.runtime import EmberError, Runtime, dtype_to_ember

import manual_samples
from conftest import ROOT

DTYPES = ops_coverage.DTYPES
DTYPE_NAMES = {dt: str(dt).replace("torch.", "") for dt in DTYPES}

# (rtol, atol) per floating dtype; integers and bool compare exactly.
TOLERANCES: Dict[torch.dtype, Tuple[float, float]] = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1.6e-2, 1e-2),
}


@dataclasses.dataclass(frozen=True)
class Config:
    full: bool
    cap: Optional[int]          # samples per (op, dtype); None: all
    candidates: Optional[int]   # OpInfos per op; None: all
    scan: Optional[int]         # samples looked at per (OpInfo, dtype); None: all
    batch: int                  # samples per program
    shard: Tuple[int, int] = (0, 1)  # (k, n): this run takes the ops i with i % n == k

    def takes(self, index: int) -> bool:
        return index % self.shard[1] == self.shard[0]

    @staticmethod
    def from_env() -> "Config":
        shard = (0, 1)
        spec = os.environ.get("EMBER_OPS_SHARD", "")
        if spec:
            m = re.fullmatch(r"(\d+)/(\d+)", spec)
            if m is None or not 0 <= int(m.group(1)) < int(m.group(2)):
                raise ValueError(f"EMBER_OPS_SHARD={spec!r}: expected k/n with 0 <= k < n")
            shard = (int(m.group(1)), int(m.group(2)))
        if os.environ.get("EMBER_OPS_FULL", "") not in ("", "0"):
            return Config(full=True, cap=None, candidates=None, scan=None, batch=160, shard=shard)
        cap = int(os.environ.get("EMBER_OPS_CAP", "3"))
        return Config(full=False, cap=cap, candidates=3, scan=20, batch=160, shard=shard)


def progress(message: str) -> None:
    """Appends a progress line to the file EMBER_OPS_PROGRESS names, if any (pytest
    captures the terminal): `EMBER_OPS_PROGRESS=ops.log pytest ...` and `tail -f ops.log`."""
    path = os.environ.get("EMBER_OPS_PROGRESS", "")
    if path:
        with open(path, "a") as f:
            f.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")


def samples_dir() -> str:
    """Where the programs and results go (EMBER_OP_SAMPLES, default build/op-samples)."""
    d = os.environ.get("EMBER_OP_SAMPLES", os.path.join("build", "op-samples"))
    return d if os.path.isabs(d) else os.path.join(ROOT, d)


# --------------------------------------------------------------------------- #
# Which OpInfos dispatch which core ops
# --------------------------------------------------------------------------- #


class _Recorder(TorchDispatchMode):
    """Records the set of ops dispatched, or full calls of the ops in `capture`."""

    def __init__(self, capture: Optional[Set[OpOverload]] = None) -> None:
        super().__init__()
        self.capture = capture
        self.seen: Set[OpOverload] = set()
        self.calls: List[Tuple[OpOverload, Tuple[Any, ...], Dict[str, Any]]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.seen.add(func)
        if self.capture is not None and func in self.capture:
            # Copies taken before the call: an in-place op later in the
            # OpInfo's function must not change what this sample saw.
            self.calls.append((func, _clone_tree(args), _clone_tree(kwargs)))
        return func(*args, **kwargs)


def _clone_tree(tree: Any) -> Any:
    return pytree.tree_map(
        lambda v: v.detach().clone(memory_format=torch.contiguous_format)
        if isinstance(v, torch.Tensor) else v, tree)


class _quiet(warnings.catch_warnings):
    """Silences torch's warnings about the samples it is asked to run."""

    def __enter__(self) -> None:
        super().__enter__()
        warnings.simplefilter("ignore")


def _run_op(oi: Any, sample: Any, recorder: _Recorder) -> None:
    with recorder:
        try:
            oi.op(sample.input, *sample.args, **sample.kwargs)
        except Exception:  # a sample eager rejects dispatches nothing useful
            pass


def _first_dtype(oi: Any) -> Optional[torch.dtype]:
    supported = oi.supported_dtypes("cpu")
    if torch.float32 in supported:
        return torch.float32
    return next((dt for dt in DTYPES if dt in supported), None)


def _samples(oi: Any, dtype: torch.dtype, limit: Optional[int]) -> Iterator[Any]:
    torch.manual_seed(0)
    try:
        for i, s in enumerate(oi.sample_inputs("cpu", dtype)):
            if limit is not None and i >= limit:
                return
            yield s
    except Exception:  # a generator that fails on this platform gives what it gave
        return


_discovered: Optional[Dict[OpOverload, List[Tuple[Any, int]]]] = None


def discover(full: bool) -> Dict[OpOverload, List[Tuple[Any, int]]]:
    """core op -> [(OpInfo, number of core ops its samples dispatch)], once per session."""
    global _discovered
    if _discovered is not None:
        return _discovered
    from torch.testing._internal.common_methods_invocations import op_db

    core = set(ops_coverage.core_aten_overloads())
    found: Dict[OpOverload, List[Tuple[Any, int]]] = {}
    progress(f"tracing {len(op_db)} OpInfos")
    with _quiet():
        for oi in op_db:
            dtype = _first_dtype(oi)
            if dtype is None:
                continue
            rec = _Recorder()
            for s in _samples(oi, dtype, None if full else 3):
                _run_op(oi, s, rec)
            hits = rec.seen & core
            for op in hits:
                found.setdefault(op, []).append((oi, len(hits)))
    _discovered = found
    return found


def _base_names(op: OpOverload) -> Set[str]:
    name = op._schema.name.split("::", 1)[1]
    names = {name, name.lstrip("_")}
    for prefix in ("native_", "_native_"):
        if name.startswith(prefix):
            names.add(name[len(prefix):])
    return names


def _opinfo_names(oi: Any) -> Set[str]:
    names = {oi.name, oi.name.split(".")[-1], getattr(oi, "aten_name", None) or ""}
    return {n for n in names if n}


def candidates(op: OpOverload, cfg: Config) -> List[Any]:
    """The OpInfos whose samples feed `op`, best first."""
    pairs = discover(cfg.full).get(op, [])
    wanted = _base_names(op)
    ranked = sorted(pairs, key=lambda p: (not (_opinfo_names(p[0]) & wanted), p[1]))
    out = [oi for oi, _ in ranked]
    return out if cfg.candidates is None else out[:cfg.candidates]


def torch_dtypes(ops_infos: Sequence[Any]) -> List[torch.dtype]:
    """The dtypes of DTYPES that at least one of the OpInfos supports on CPU."""
    supported: Set[torch.dtype] = set()
    for oi in ops_infos:
        supported |= set(oi.supported_dtypes("cpu"))
    return [dt for dt in DTYPES if dt in supported]


# --------------------------------------------------------------------------- #
# Samples of one op
# --------------------------------------------------------------------------- #


@dataclasses.dataclass
class Sample:
    op: OpOverload
    key: str                    # the kernel the sample is for ("aten::add.out")
    source: str                 # "OpInfo name[variant] dtype #index"
    dtype: torch.dtype
    leaves: List[Any]           # flattened (args, kwargs); tensors are inputs
    spec: Any                   # their pytree spec
    inputs: List[torch.Tensor]
    expected: List[torch.Tensor] = dataclasses.field(default_factory=list)
    # float16/bfloat16/float32 samples: the op computed one float type wider
    # (float32/float64) and rounded back, a second rounding of the exact
    # result that is as right as eager's.
    alternate: Optional[List[torch.Tensor]] = None
    values_checked: bool = True  # False: random or uninitialized outputs
    # the core op under test: the export keeps it whole (torch's decomposition
    # table, or its own composite implementation, would otherwise replace it)
    preserve: Optional[OpOverload] = None
    checks: List[str] = dataclasses.field(default_factory=list)  # per output, for the C test
    status: str = "pending"     # pass | fail | skip | no-kernel
    reason: str = ""

    def release(self) -> None:
        """Drops the tensors once the sample ran and its program was written."""
        self.leaves, self.inputs, self.expected, self.alternate = [], [], [], None

    def call(self, tensors: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        it = iter(tensors)
        # an op that writes into an argument (batch norm's running stats) gets
        # copies: a program input it mutated would become an extra output
        fresh = _mutates_arguments(self.op)
        leaves = [(next(it).clone() if fresh else next(it)) if isinstance(v, torch.Tensor) else v
                  for v in self.leaves]
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        out = self.op(*args, **kwargs)
        return [v for v in pytree.tree_leaves(out) if isinstance(v, torch.Tensor)]


def _mutates_arguments(op: Any) -> bool:
    return isinstance(op, OpOverload) and any(
        a.alias_info is not None and a.alias_info.is_write for a in op._schema.arguments)


def _sample_dtype(args: Any, kwargs: Any, out: Any) -> Optional[torch.dtype]:
    tensors = [v for v in pytree.tree_leaves((args, kwargs)) if isinstance(v, torch.Tensor)]
    for t in tensors:
        if t.dtype != torch.bool:
            return t.dtype
    if tensors:
        return tensors[0].dtype
    outs = [v for v in pytree.tree_leaves(out) if isinstance(v, torch.Tensor)]
    return outs[0].dtype if outs else None


def op_name_of(op: Any) -> str:
    """`aten.add.Tensor` for an overload, else the callable's name."""
    return ops_coverage.op_name(op) if isinstance(op, OpOverload) else getattr(
        op, "__name__", type(op).__name__)


def values_are_defined(op: Any) -> bool:
    """False for ops whose outputs are random or uninitialized."""
    if not isinstance(op, OpOverload):
        return True
    name = op._schema.name.split("::", 1)[1]
    return torch.Tag.nondeterministic_seeded not in op.tags and not name.startswith("empty")


def _make_sample(op: Any, key: str, source: str, args: Any, kwargs: Any) -> Sample:
    leaves, spec = pytree.tree_flatten((args, kwargs))
    inputs = [v for v in leaves if isinstance(v, torch.Tensor)]
    s = Sample(op, key, source, torch.float32, leaves, spec, inputs,
               values_checked=values_are_defined(op))
    try:
        with torch.no_grad():
            out = op(*_clone_tree(args), **_clone_tree(kwargs))
    except Exception as e:  # noqa: BLE001 - eager itself rejects the captured call
        s.status, s.reason = "skip", f"eager raises {_first_line(e)}"
        return s
    # outputs an output mask turned off are None; the program returns the others
    leaves_out = [v for v in pytree.tree_leaves(out) if v is not None]
    dtype = _sample_dtype(args, kwargs, out)
    if dtype is None or any(not isinstance(v, torch.Tensor) for v in leaves_out):
        s.status, s.reason = "skip", "returns a Python scalar"
        return s
    s.dtype = dtype
    if any(t.is_complex() or t.dtype not in DTYPES or t.is_quantized for t in inputs + leaves_out):
        s.status, s.reason = "skip", "a tensor of a dtype outside the table"
        return s
    s.expected = [t.detach().contiguous() for t in leaves_out]
    s.checks = ["values" if s.values_checked else "shape"] * len(s.expected)
    for k in range(manual_samples.CHECKED_OUTPUTS.get(op_name_of(op), len(s.expected)),
                   len(s.expected)):
        s.checks[k] = "skip"
    if s.values_checked and any(t.dtype in _WIDER for t in leaves_out):
        s.alternate = _wider_reference(op, args, kwargs, s.expected)
    return s


_WIDER = {torch.float16: torch.float32, torch.bfloat16: torch.float32,
          torch.float32: torch.float64}


def _wider_reference(op: OpOverload, args: Any, kwargs: Any, like: List[torch.Tensor]
                     ) -> Optional[List[torch.Tensor]]:
    """The op on float16/bfloat16/float32 inputs upcast one float type, outputs cast back."""
    def up(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and v.dtype in _WIDER:
            return v.to(_WIDER[v.dtype])
        return v

    try:
        with torch.no_grad():
            out = op(*pytree.tree_map(up, _clone_tree(args)),
                     **pytree.tree_map(up, _clone_tree(kwargs)))
    except Exception:  # noqa: BLE001 - no float32 form: eager's result is the only reference
        return None
    outs = [v for v in pytree.tree_leaves(out) if isinstance(v, torch.Tensor)]
    if len(outs) != len(like) or any(tuple(a.shape) != tuple(b.shape) for a, b in zip(outs, like)):
        return None
    return [a.to(b.dtype).contiguous() for a, b in zip(outs, like)]


# Ops whose index output may order ties differently from eager: the indices
# must select the values they come with, and the values must match eager.
_TIE_INDEX_OPS = {torch.ops.aten.sort.default: (1, -1), torch.ops.aten.topk.default: (2, -1)}


def _schema_arg(s: Sample, name: str, position: int, default: Any) -> Any:
    args, kwargs = pytree.tree_unflatten(s.leaves, s.spec)
    if name in kwargs:
        return kwargs[name]
    return args[position] if position < len(args) else default


def _check_tie_indices(s: Sample, outs: Sequence[Any]) -> Optional[str]:
    """For sort/topk: do the indices pick the returned values out of the input?"""
    pos, default = _TIE_INDEX_OPS[s.op]
    values, indices = outs[0], outs[1]
    if not isinstance(indices, torch.Tensor) or indices.dtype != torch.int64:
        return "indices are not an int64 tensor"
    if tuple(indices.shape) != tuple(s.expected[1].shape):
        return f"indices shape {tuple(indices.shape)} != {tuple(s.expected[1].shape)}"
    x = s.inputs[0]
    dim = _schema_arg(s, "dim", pos, default)
    if x.dim() == 0:
        return None if bool((indices == 0).all()) else "a 0-d input has index 0 only"
    n = x.shape[dim]
    if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= n):
        return "an index is out of range"
    picked = torch.gather(x, dim, indices)
    if not torch.equal(picked.isnan(), values.isnan()) or not torch.equal(
            picked.nan_to_num(), values.nan_to_num()):
        return "the indices do not select the returned values"
    srt = indices.sort(dim=dim).values
    if indices.numel() and bool((srt.narrow(dim, 1, srt.shape[dim] - 1)
                                 == srt.narrow(dim, 0, srt.shape[dim] - 1)).any()):
        return "an index repeats"
    return None


def collect(op: OpOverload, key: str, infos: Sequence[Any], cfg: Config
            ) -> Dict[torch.dtype, List[Sample]]:
    """Captured samples of `op`, by dtype (capped by cfg.cap)."""
    pools: Dict[torch.dtype, List[Sample]] = {dt: [] for dt in DTYPES}

    def full(dt: torch.dtype) -> bool:
        return cfg.cap is not None and len(pools[dt]) >= cfg.cap

    with _quiet():
        for dt in DTYPES:
            for oi in infos:
                if full(dt):
                    break
                if dt not in oi.supported_dtypes("cpu"):
                    continue
                label = oi.name + (f"[{oi.variant_test_name}]" if oi.variant_test_name else "")
                for i, s in enumerate(_samples(oi, dt, cfg.scan)):
                    rec = _Recorder({op})
                    _run_op(oi, s, rec)
                    for _, args, kwargs in rec.calls:
                        sample = _make_sample(op, key, f"{label} {DTYPE_NAMES[dt]} #{i}", args,
                                              kwargs)
                        sample.preserve = op
                        if sample.dtype not in pools or full(sample.dtype):
                            continue
                        pools[sample.dtype].append(sample)
                    if full(dt):
                        break
    return pools


def is_composite(op: OpOverload) -> bool:
    """Whether torch decomposes `op` above the dispatcher (a dispatch mode never sees it)."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")


def composite_candidates(op: OpOverload, cfg: Config) -> List[Any]:
    """OpInfos named like a composite op (`upsample_nearest2d` -> `upsample_nearest`)."""
    from torch.testing._internal.common_methods_invocations import op_db

    wanted = _base_names(op)
    wanted |= {re.sub(r"[123]d$", "", n) for n in wanted}
    # OpInfos named exactly so (`var`) before namespaced ones (`masked.var`,
    # which computes without the op), which only count when there are no others
    found = [oi for oi in op_db if oi.name in wanted] or [
        oi for oi in op_db if oi.name.split(".")[-1] in wanted]
    return found if cfg.candidates is None else found[:cfg.candidates]


def _spatial_rank_fits(op: OpOverload, sample: Any) -> bool:
    """For an N-d op (`upsample_nearest2d`), whether the sample's input has
    N + 1 or N + 2 dims: other ranks call the 1-d or 3-d sibling."""
    m = re.search(r"([123])d$", op._schema.name)
    if m is None or not isinstance(sample.input, torch.Tensor):
        return True
    return sample.input.dim() - int(m.group(1)) in (1, 2)


class _OpInfoCall:
    """An OpInfo's function as a sample's op: exported as it is, and its samples
    count for the composite op only if the program then calls that op's kernel."""

    def __init__(self, oi: Any) -> None:
        self.oi = oi

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.oi.op(*args, **kwargs)


def collect_composite(op: OpOverload, key: str, infos: Sequence[Any], cfg: Config
                      ) -> Dict[torch.dtype, List[Sample]]:
    """Samples of a composite op: each OpInfo sample, called through the OpInfo
    and exported with `op` preserved (torch would otherwise decompose it)."""
    pools: Dict[torch.dtype, List[Sample]] = {dt: [] for dt in DTYPES}
    with _quiet():
        for dt in DTYPES:
            for oi in infos:
                if dt not in oi.supported_dtypes("cpu"):
                    continue
                label = oi.name + (f"[{oi.variant_test_name}]" if oi.variant_test_name else "")
                call = _OpInfoCall(oi)
                for i, s in enumerate(_samples(oi, dt, cfg.scan)):
                    if cfg.cap is not None and len(pools[dt]) >= cfg.cap:
                        break
                    if not _spatial_rank_fits(op, s):
                        continue
                    args = _clone_tree((s.input,) + tuple(s.args))
                    sample = _make_sample(call, key, f"{label} {DTYPE_NAMES[dt]} #{i}", args,
                                          _clone_tree(dict(s.kwargs)))
                    sample.preserve = op
                    if sample.dtype == dt:
                        pools[dt].append(sample)
    return pools


# Eager's words for "this kernel has no such dtype" (as opposed to a bad argument).
_REFUSAL = re.compile(r"not implemented for '|to have one of the following scalar types"
                      r"|Input dtype must be either a floating point"
                      r"|with (a bool tensor|two bool tensors) is not supported")


def refuses_dtype(reason: str) -> bool:
    """Whether an eager error says the op does not take the dtype at all."""
    return bool(_REFUSAL.search(reason))


def _convert(t: torch.Tensor, dt: torch.dtype) -> torch.Tensor:
    """Tensor `t` in dtype `dt`, values kept where `dt` can hold them."""
    if dt == torch.bool:
        return t != 0
    if dt.is_floating_point or t.dtype == torch.bool:
        return t.to(dt)
    info = torch.iinfo(dt)
    v = t.round() if t.dtype.is_floating_point else t
    if dt == torch.uint8:
        v = v.abs()
    return v.clamp(info.min, info.max).to(dt)


def _int_scalars(v: Any) -> Any:
    return int(round(v)) if isinstance(v, float) and v == v and abs(v) != float("inf") else v


def synthesize(pools: Dict[torch.dtype, List[Sample]], wanted: Sequence[torch.dtype],
               cap: Optional[int]) -> Dict[torch.dtype, str]:
    """Fills the empty pools of `wanted` dtypes from the samples of another dtype.

    An OpInfo may list a dtype whose samples never reach the ATen op in it
    (softmax on integers computes in float). Each such dtype gets the
    samples of a reference dtype (float32 first) with their tensors of that
    dtype converted, and eager decides: samples it runs are tested like any
    other; if it refuses the dtype outright ("not implemented for 'Int'"),
    the op does not support it. Returns {dtype: eager's refusal}.
    """
    ref_dt = next((dt for dt in (torch.float32,) + tuple(DTYPES) if pools.get(dt)), None)
    refused: Dict[torch.dtype, str] = {}
    if ref_dt is None:
        return refused
    refs = [s for s in pools[ref_dt] if s.status != "skip"] or pools[ref_dt]
    with _quiet():
        for dt in wanted:
            if pools.get(dt) or dt == ref_dt:
                continue
            made: List[Sample] = []
            for r in refs[:cap]:
                leaves = [_convert(v, dt) if isinstance(v, torch.Tensor) and v.dtype == ref_dt
                          else v for v in r.leaves]
                tries = [leaves]
                if not dt.is_floating_point:
                    tries.append([_int_scalars(v) for v in leaves])
                for attempt in tries:
                    args, kwargs = pytree.tree_unflatten(attempt, r.spec)
                    s = _make_sample(r.op, r.key, f"{r.source} as {DTYPE_NAMES[dt]}", args, kwargs)
                    s.preserve = r.preserve
                    if s.status != "skip" or refuses_dtype(s.reason):
                        break
                made.append(s)
            if made and all(s.status == "skip" and refuses_dtype(s.reason) for s in made):
                refused[dt] = made[0].reason
            else:
                pools[dt] = made
    return refused


def collect_manual(op: OpOverload, name: str, key: str, extra: bool = False
                   ) -> Tuple[Dict[torch.dtype, List[Sample]], List[torch.dtype]]:
    """The hand-written samples of an op no OpInfo reaches (manual_samples.py),
    and the dtypes eager accepts for it; extra: the samples manual_samples.EXTRA
    adds to an op's OpInfo samples."""
    pools: Dict[torch.dtype, List[Sample]] = {dt: [] for dt in DTYPES}
    supported: List[torch.dtype] = []
    with _quiet():
        for dt in DTYPES:
            try:
                calls = manual_samples.samples(name, dt, extra)
            except Exception as e:  # noqa: BLE001 - making the inputs needs a refused op
                if refuses_dtype(str(e)):
                    continue
                raise
            call = manual_samples.CALLERS.get(name, op)
            made = [_make_sample(call, key, f"hand-written {DTYPE_NAMES[dt]} #{i}", args, kwargs)
                    for i, (args, kwargs) in enumerate(calls)]
            for s in made:
                s.preserve = op
            if all(s.status == "skip" and refuses_dtype(s.reason) for s in made):
                continue
            supported.append(dt)
            pools[dt] = [s for s in made if not (s.status == "skip" and refuses_dtype(s.reason))]
    return pools, supported


# --------------------------------------------------------------------------- #
# Export, run, compare
# --------------------------------------------------------------------------- #


class _Batch(torch.nn.Module):
    def __init__(self, samples: Sequence[Sample]) -> None:
        super().__init__()
        self.samples = list(samples)

    def forward(self, *flat: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        outs: List[torch.Tensor] = []
        pos = 0
        for s in self.samples:
            n = len(s.inputs)
            outs.extend(s.call(flat[pos:pos + n]))
            pos += n
        return tuple(outs)


@dataclasses.dataclass
class Built:
    buffer: bytes
    samples: List[Sample]
    kernels: List[Set[str]]             # kernel keys each sample's outputs depend on
    instructions: Dict[int, Set[int]]   # instruction index -> samples it computes


def _kernel_key(n: torch.fx.Node) -> Optional[str]:
    if isinstance(n.target, OpOverload):
        name, overload = dialect.kernel_name(n.target)
        return f"{name}.{overload}" if overload else name
    if n.target is dialect.et_view:
        return "executorch_prim::et_view.default"
    return None


def _ancestors_per_output(gm: torch.fx.GraphModule) -> List[Set[torch.fx.Node]]:
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    result = []
    for root in pytree.tree_leaves(output.args[0]):
        seen: Set[torch.fx.Node] = set()
        stack = [root] if isinstance(root, torch.fx.Node) else []
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(n.all_input_nodes)
        result.append(seen)
    return result


class StageError(Exception):
    """A batch failed at one stage: export (torch), edge (ember AOT), kernel, runtime."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def _first_line(e: BaseException, limit: int = 160) -> str:
    text = str(e).strip().splitlines()
    line = text[0] if text else ""
    return f"{type(e).__name__}: {line}"[:limit]


def build(samples: Sequence[Sample]) -> Built:
    flat = tuple(t for s in samples for t in s.inputs)
    with _quiet():
        try:
            ep = torch.export.export(_Batch(samples), flat, strict=False)
        except Exception as e:  # noqa: BLE001
            raise StageError("export", _first_line(e)) from e
        preserve = sorted({s.preserve for s in samples if s.preserve is not None}, key=str)
        try:
            config = ember.EdgeCompileConfig(preserve_ops=preserve)
            prog = ember.to_edge(ep, compile_config=config).to_executorch()
            buf = prog.buffer
        except ExportError as e:
            if "no kernel in the runtime" in str(e):
                missing = re.findall(r"^\s+(\S+): from", str(e), re.M)
                raise StageError("kernel", "no kernel for " + ", ".join(missing)) from e
            raise StageError("edge", _first_line(e)) from e
        except Exception as e:  # noqa: BLE001
            raise StageError("edge", _first_line(e)) from e
    per_output = _ancestors_per_output(prog.execution_graph("forward"))
    kernels: List[Set[str]] = []
    owner: Dict[int, Set[int]] = {}  # debug handle -> samples
    pos = 0
    for i, s in enumerate(samples):
        nodes: Set[torch.fx.Node] = set()
        for anc in per_output[pos:pos + len(s.expected)]:
            nodes |= anc
        pos += len(s.expected)
        kernels.append({k for n in nodes if n.op == "call_function"
                        and (k := _kernel_key(n)) is not None})
        for n in nodes:
            h = n.meta.get("debug_handle")
            if isinstance(h, int):
                owner.setdefault(h, set()).add(i)
    instructions = {idx: set().union(*(owner.get(h, set()) for h in handles))
                    for idx, handles in prog.debug_handle_map.get("forward", {}).items()}
    return Built(buf, list(samples), kernels, instructions)


def execute(built: Built) -> List[torch.Tensor]:
    flat = [t for s in built.samples for t in s.inputs]
    try:
        method = Runtime.get().load_program(built.buffer).load_method("forward")
        return method.execute(flat)
    except EmberError as e:
        raise StageError("runtime", _first_line(e)) from e


def compare(got: Any, want: torch.Tensor, values: bool) -> Optional[str]:
    """None if `got` matches `want`, else what differs."""
    if not isinstance(got, torch.Tensor):
        return f"output is a {type(got).__name__}, not a tensor"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    if not values:
        return None
    if want.dtype in TOLERANCES:
        rtol, atol = TOLERANCES[want.dtype]
        try:
            torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            return "; ".join(lines[:4])
        return None
    if not torch.equal(got, want):
        bad = (got != want).nonzero()
        i = tuple(bad[0].tolist()) if len(bad) else ()
        return (f"{len(bad)} of {want.numel()} elements differ (first at {list(i)}: "
                f"got {got[i].item()}, want {want[i].item()})")
    return None


def _failing_samples(built: Built, message: str) -> Set[int]:
    """The samples computed by the instruction a runtime error names (empty if unknown)."""
    m = re.search(r"instruction (\d+)", message)
    return set(built.instructions.get(int(m.group(1)), set())) if m else set()


def run_batch(samples: List[Sample], written: List[Built], isolate: bool = False) -> None:
    """Exports, runs and checks samples; sets each one's status.

    A batch that cannot be exported is split in halves until the sample at
    fault is found. A runtime error names its instruction: the samples that
    instruction computes fail, and the others run again without them. Unless
    `isolate`, the other samples of a failing (kernel, dtype) are left out
    too ("not run"): each would cost a rebuild of the whole batch, and the
    (op, dtype) fails either way.
    """
    if not samples:
        return
    progress(f"  batch of {len(samples)} ({samples[0].source} ... {samples[-1].source})")
    built: Optional[Built] = None
    try:
        built = build(samples)
        got = execute(built)
    except StageError as e:
        if e.stage == "runtime" and built is not None:
            culprits = _failing_samples(built, str(e))
            if culprits and len(culprits) < len(samples):
                groups = {(samples[i].key, samples[i].dtype): samples[i].source for i in culprits}
                rest = []
                for i, s in enumerate(samples):
                    if i in culprits:
                        s.status, s.reason = "fail", f"runtime: {e}"
                    elif not isolate and (s.key, s.dtype) in groups:
                        s.status = "skip"
                        s.reason = (f"not run: {groups[(s.key, s.dtype)]} of the same op and dtype "
                                    "failed in the runtime")
                    else:
                        rest.append(s)
                run_batch(rest, written, isolate)
                return
        if len(samples) > 1:
            mid = len(samples) // 2
            run_batch(samples[:mid], written, isolate)
            run_batch(samples[mid:], written, isolate)
            return
        s = samples[0]
        if e.stage == "runtime":
            s.status, s.reason = "fail", f"runtime: {e}"
        elif e.stage == "kernel":
            s.status, s.reason = "no-kernel", str(e)
        else:
            s.status, s.reason = "skip", f"{e.stage}: {e}"
        return
    pos = 0
    for s, keys in zip(built.samples, built.kernels):
        n = len(s.expected)
        outs = got[pos:pos + n]
        pos += n
        if s.key not in keys:
            s.status = "skip"
            s.reason = "the program does not call " + s.key + (
                f" (it calls {', '.join(sorted(keys))})" if keys else " (no kernel call at all)")
            continue
        problems = []
        for k, (g, w) in enumerate(zip(outs, s.expected)):
            if s.checks[k] == "skip":
                continue
            if k == 1 and s.op in _TIE_INDEX_OPS:
                p = _check_tie_indices(s, outs)
                s.checks[k] = "shape"  # checked here; the C test checks the values only
            else:
                p = compare(g, w, s.values_checked)
                if p is not None and s.alternate is not None and compare(
                        g, s.alternate[k], True) is None:
                    p = None
                    s.expected[k] = s.alternate[k]  # the reference it matched, for the C test
            if p is not None:
                problems.append(f"output {k}: {p}")
        if len(outs) != n:
            problems.insert(0, f"{len(outs)} outputs, expected {n}")
        s.status, s.reason = ("fail", "; ".join(problems)) if problems else ("pass", "")
    written.append(built)


class Runner:
    """Runs samples in batches of cfg.batch as they are collected, writes each
    program that ran for the C test, then drops the samples' tensors: memory
    stays at about one op's samples, even in the full mode."""

    def __init__(self, cfg: Config, writer: "SampleWriter") -> None:
        self.cfg = cfg
        self.writer = writer
        self.pending: List[Sample] = []
        self.ran = 0
        self.programs = 0

    def add(self, samples: Sequence[Sample]) -> None:
        self.pending.extend(s for s in samples if s.status == "pending")
        while len(self.pending) >= self.cfg.batch:
            batch, self.pending = self.pending[:self.cfg.batch], self.pending[self.cfg.batch:]
            self._run(batch)

    def finish(self) -> None:
        if self.pending:
            batch, self.pending = self.pending, []
            self._run(batch)
        self.writer.finish()

    def _run(self, batch: List[Sample]) -> None:
        progress(f"samples {self.ran}-{self.ran + len(batch)}")
        written: List[Built] = []
        run_batch(batch, written, isolate=self.cfg.full)
        for built in written:
            self.writer.write(f"batch{self.programs:03d}", built)
            self.programs += 1
        for s in batch:
            s.release()
        self.ran += len(batch)


# --------------------------------------------------------------------------- #
# Writing programs for the C test (tests/c/kernels/test_op_samples.c)
# --------------------------------------------------------------------------- #


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def _npy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as uint16
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


class SampleWriter:
    """Writes each program that ran, its inputs and expected outputs, and a manifest.

    manifest.txt, one block per program:
        program NAME.pte
        in FILE.npy DTYPE_CODE                      (one line per input)
        out FILE.npy DTYPE_CODE RTOL ATOL CHECK     (CHECK: values | shape | skip)
        end
    bfloat16 arrays are stored as uint16 bits; DTYPE_CODE says what they hold.
    An output whose Python check failed is `skip` (the Python test reports it).
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self.blocks: List[str] = []
        self.count = 0
        if os.path.isdir(root):
            shutil.rmtree(root)
        os.makedirs(root, exist_ok=True)

    def write(self, op_label: str, built: Built) -> None:
        base = f"{_slug(op_label)}-{self.count}"
        self.count += 1
        with open(os.path.join(self.root, base + ".pte"), "wb") as f:
            f.write(built.buffer)
        lines = [f"program {base}.pte"]
        k = 0
        for s in built.samples:
            for t in s.inputs:
                name = f"{base}.in{k}.npy"
                np.save(os.path.join(self.root, name), _npy(t))
                lines.append(f"in {name} {dtype_to_ember(t.dtype)}")
                k += 1
        k = 0
        for s in built.samples:
            first = k
            for t in s.expected:
                name = f"{base}.out{k}.npy"
                np.save(os.path.join(self.root, name), _npy(t))
                rtol, atol = TOLERANCES.get(t.dtype, (0.0, 0.0))
                check = "skip" if s.status != "pass" else s.checks[k - first]
                lines.append(f"out {name} {dtype_to_ember(t.dtype)} {rtol:g} {atol:g} {check}")
                k += 1
        lines.append("end")
        self.blocks.append("\n".join(lines))

    def finish(self) -> None:
        header = ("# Programs exported from PyTorch OpInfo samples of the core ATen ops, with\n"
                  "# their inputs and eager outputs; run by tests/c/kernels/test_op_samples.c.\n")
        with open(os.path.join(self.root, "manifest.txt"), "w") as f:
            f.write(header + "\n".join(self.blocks) + ("\n" if self.blocks else ""))


# --------------------------------------------------------------------------- #
# Results (read by scripts/op_coverage.py)
# --------------------------------------------------------------------------- #


def dtype_result(samples: Sequence[Sample], supported: bool, implemented: bool) -> Dict[str, Any]:
    counts = {k: sum(s.status == k for s in samples) for k in ("pass", "fail", "skip", "no-kernel")}
    if not supported:
        status = "unsupported"
    elif not implemented or counts["no-kernel"] and not counts["pass"] and not counts["fail"]:
        status = "no-kernel"
    elif counts["fail"]:
        status = "fail"
    elif counts["pass"]:
        status = "pass"
    else:
        status = "skipped"
    reasons: Dict[str, int] = {}
    for s in samples:
        if s.status in ("skip", "no-kernel"):
            reasons[s.reason] = reasons.get(s.reason, 0) + 1
    failures = [f"{s.source}: {s.reason}" for s in samples if s.status == "fail"]
    return {"status": status, **counts, "total": len(samples),
            "skip_reasons": dict(sorted(reasons.items(), key=lambda kv: -kv[1])[:5]),
            "failures": failures[:5]}


class Results:
    """Collects one record per op and writes results.json."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.ops: Dict[str, Dict[str, Any]] = {}
        self.started = time.time()

    def record(self, entry: ops_coverage.OpEntry, status: str, infos: Sequence[Any] = (),
               dtypes: Optional[Dict[str, Dict[str, Any]]] = None, note: str = "",
               hand_written: bool = False) -> None:
        self.ops[entry.name] = {
            "hand_written": hand_written,
            "kernel_keys": list(entry.kernel_keys),
            "implemented": entry.implemented,
            "missing": list(entry.missing),
            "status": status,
            "opinfos": [oi.name + (f"[{oi.variant_test_name}]" if oi.variant_test_name else "")
                        for oi in infos],
            "dtypes": dtypes or {},
            "note": note,
        }

    def write(self, path: str) -> None:
        data = {
            "mode": "full" if self.cfg.full else "default",
            "shard": f"{self.cfg.shard[0]}/{self.cfg.shard[1]}",
            "cap": self.cfg.cap,
            "torch": torch.__version__,
            "seconds": round(time.time() - self.started, 1),
            "dtypes": [DTYPE_NAMES[dt] for dt in DTYPES],
            "ops": self.ops,
        }
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)


# --------------------------------------------------------------------------- #
# The whole run
# --------------------------------------------------------------------------- #


@dataclasses.dataclass
class OpOutcome:
    entry: ops_coverage.OpEntry
    status: str                 # tested | symbolic | no-kernel | no-opinfo
    infos: List[Any] = dataclasses.field(default_factory=list)
    supported: List[torch.dtype] = dataclasses.field(default_factory=list)
    pools: Dict[torch.dtype, List[Sample]] = dataclasses.field(default_factory=dict)
    note: str = ""
    hand_written: bool = False  # samples from manual_samples.py, not from OpInfos
    refused: Dict[torch.dtype, str] = dataclasses.field(default_factory=dict)

    @property
    def samples(self) -> List[Sample]:
        return [s for dt in DTYPES for s in self.pools.get(dt, [])]

    def dtype_results(self) -> Dict[str, Dict[str, Any]]:
        implemented = self.entry.implemented
        return {DTYPE_NAMES[dt]: dtype_result(
            self.pools.get(dt, []),
            dt not in self.refused and (dt in self.supported or bool(self.pools.get(dt))),
            implemented) for dt in DTYPES}


def run_all(entries: Sequence[ops_coverage.OpEntry], cfg: Config) -> Dict[str, OpOutcome]:
    """Collects and runs the samples of every op; writes the programs and results.json.

    Samples of all ops share programs (cfg.batch samples each), so that the
    fixed cost of an export is paid a few dozen times rather than once per op.
    """
    results = Results(cfg)
    outcomes: Dict[str, OpOutcome] = {}
    runner = Runner(cfg, SampleWriter(samples_dir()))
    for index, entry in enumerate(entries):
        if not cfg.takes(index):
            continue
        op = entry.op
        if ops_coverage.is_symbolic(op):
            outcomes[entry.name] = OpOutcome(entry, "symbolic", note="works on sizes, not data")
            continue
        if not entry.kernel_keys:
            outcomes[entry.name] = OpOutcome(entry, "no-kernel", note=entry.reason)
            continue
        composite = is_composite(op)
        infos = composite_candidates(op, cfg) if composite else candidates(op, cfg)
        supported = torch_dtypes(infos)
        if not entry.implemented:
            outcomes[entry.name] = OpOutcome(entry, "no-kernel", infos, supported)
            continue
        key = entry.kernel_keys[0]
        if not infos:
            if entry.name not in manual_samples.SAMPLES:
                outcomes[entry.name] = OpOutcome(entry, "no-opinfo",
                                                 note="no OpInfo in torch's op_db dispatches it")
                continue
            pools, supported = collect_manual(op, entry.name, key)
            outcome = OpOutcome(entry, "tested", [], supported, pools, hand_written=True,
                                note="no OpInfo reaches it: hand-written samples")
            outcomes[entry.name] = outcome
            runner.add(outcome.samples)
            continue
        progress(f"collecting samples of {entry.name}")
        pools = (collect_composite(op, key, infos, cfg) if composite
                 else collect(op, key, infos, cfg))
        refused = synthesize(pools, supported, cfg.cap)
        note = ""
        if refused:
            note = ("eager refuses " + ", ".join(DTYPE_NAMES[dt] for dt in refused)
                    + " although an OpInfo lists it")
        if entry.name in manual_samples.EXTRA:
            extra, _ = collect_manual(op, entry.name, key, extra=True)
            for dt, made in extra.items():
                if made and (pools.get(dt) or dt in supported):
                    pools.setdefault(dt, []).extend(made)
            what = manual_samples.EXTRA[entry.name][1]
            note = "; ".join(n for n in (note, f"with hand-written {what} samples") if n)
        outcome = OpOutcome(entry, "tested", infos, supported, pools, note=note, refused=refused)
        outcomes[entry.name] = outcome
        runner.add(outcome.samples)
    runner.finish()
    for name, o in outcomes.items():
        has_samples = o.infos or o.hand_written
        dtypes = o.dtype_results() if o.status in ("tested", "no-kernel") and has_samples else {}
        results.record(o.entry, o.status, o.infos, dtypes, o.note, o.hand_written)
    results.write(os.path.join(samples_dir(), "results.json"))
    return outcomes
