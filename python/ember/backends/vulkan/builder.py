"""An edge subprogram into a VkGraph, the way ExecuTorch's Vulkan AOT flow builds it.

Four steps, each a plain function over a list of operator calls (VOp):

1. lower(): on a copy of the subgraph, the graph rewrites of ExecuTorch's
   Vulkan preprocess (copies that change nothing go; relu / gelu on tensors
   with size-1 dims run squeezed; view chains fuse; views that only add or
   drop size-1 dims become unsqueeze / squeeze); then every call_function
   node becomes a VOp whose args follow the operator's schema (positional,
   then keyword, then defaults), with the rewrites into Vulkan's own ops:
   - addmm / mm reading a transposed weight -> aten.linear.default;
   - a batch norm after a convolution folds into its weight and bias;
   - relu / hardtanh after a convolution -> et_vk.conv_with_clamp.default
     (two more args: output_min, output_max);
   - ember::sdpa_with_kv_cache (as kv_cache.py rewrote it) ->
     et_vk.select_as_symint.default + sdpa_with_kv_cache.default;
   - a constant read by an op that does not pack its own weights goes
     through et_vk.prepack.default, placed right after its placeholder.
2. tag_layouts(): each non-constant tensor gets a storage type and memory
   layout its ops accept and it fits, preferring what its consumers need
   further down; where a tensor is stored otherwise than an op needs, an
   aten.clone.default transition is inserted.
3. emit(): values are created in graph order as VkGraphBuilder does (scalars
   shared by value, lists and None not shared; 64-bit types downcast to 32).
4. plan_memory(): tensors whose lifetimes do not overlap share a memory
   object (greedy, largest first).
"""

from __future__ import annotations

import hashlib
import math
import operator
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.export import ExportedProgram
from torch.fx import Node

from ...errors import ExportError
from ...graph_utils import copy_graph_module
from ...tensor_spec import upper_bound
from . import q4
from . import schema as vs
from .kv_cache import sdpa_with_kv_cache as kv_sdpa
from .rope import apply_rotary_emb, fuse_rope
from .ops import OpSpec, fit_pairs, pairs_of, spec_of, val

aten = torch.ops.aten

_LINEAR_WEIGHT_T = (aten.permute_copy.default, aten.t_copy.default)
_REDUNDANT = {aten.clone.default, aten.alias_copy.default, aten.expand_copy.default,
              aten.lift_fresh_copy.default}
_CLAMPS = {aten.relu.default, aten.hardtanh.default}


def _is_redundant(node: Node) -> bool:
    t = node.target
    name = getattr(t, "__name__", "")
    if t not in _REDUNDANT and not (
            getattr(t, "namespace", "") == "ember_dim_order" and name.split(".")[0] in
            ("_clone_dim_order", "_to_dim_order_copy")):
        return False
    src, dst = val(node.args[0]), val(node)
    return (isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor)
            and src.dtype == dst.dtype and src.shape == dst.shape)


def op_name(target: Any) -> str:
    """The operator name the Vulkan runtime registers: "aten.linear.default";
    ephemeral symbolic ops keep torch's short name ("sym_size.int"); ember's
    dim-order ops take ExecuTorch's namespace."""
    if target is aten.sym_size.int:
        return "sym_size.int"
    ns = target.namespace
    if ns == "ember_dim_order":
        ns = "dim_order_ops"
    return f"{ns}.{target.__name__}"


@dataclass(eq=False)
class Const:
    """Constant data the payload carries (a weight, or one folded from weights)."""

    data: torch.Tensor
    name: str


@dataclass
class VOp:
    name: str
    args: List[Any]           # Nodes, Consts, scalars, lists, None
    out: Any                  # Node whose value the op defines (or a Const for prepack)
    spec: OpSpec
    node: Optional[Node] = None
    debug_handle: int = 0


class Lowered:
    """The subprogram's operator calls and values, before emission."""

    def __init__(self, ep: ExportedProgram) -> None:
        self.ep = ep
        self.graph: torch.fx.Graph = ep.graph  # the copy lower() rewrites
        self.ops: List[VOp] = []
        self.alias: Dict[Node, Any] = {}          # node -> what holds its value
        self.consts: Dict[Node, Const] = {}       # constant placeholder -> data
        self.inputs: List[Node] = []
        self.outputs: List[Any] = []
        self.layout: Dict[Any, str] = {}          # tensor key -> "W"/"H"/"C"
        self.repr: Dict[Any, Tuple[str, str]] = {}  # tensor key -> (storage, layout)
        self.after: Dict[Node, List[Any]] = {}    # constants emitted right after a placeholder
        self.storage: Dict[Any, int] = {}

    def resolve(self, x: Any) -> Any:
        while isinstance(x, Node) and x in self.alias:
            x = self.alias[x]
        return x


def _schema_args(node: Node) -> List[Any]:
    target = node.target
    if not hasattr(target, "_schema"):
        return list(node.args)
    out = []
    for i, a in enumerate(target._schema.arguments):
        if not a.kwarg_only and i < len(node.args):
            out.append(node.args[i])
        elif a.name in node.kwargs:
            out.append(node.kwargs[a.name])
        else:
            out.append(a.default_value)
    return out


def _single_user(node: Node) -> Optional[Node]:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _fold_batch_norm(lw: Lowered, conv: Node, bn: Node) -> Optional[Any]:
    """Folds bn (eval, after conv) into conv's weight and bias constants;
    returns what now holds the bias (its placeholder, or a new constant), or
    None if the statistics are not constants."""
    w, b = conv.args[1], conv.args[2]
    wd = lw.consts.get(w) if isinstance(w, Node) else None
    bd = lw.consts.get(b) if isinstance(b, Node) else None
    if wd is None or (b is not None and bd is None) or conv.args[6]:
        return None
    stats = [lw.consts.get(a) if isinstance(a, Node) else None for a in bn.args[1:5]]
    if any(s is None for s in stats[2:]):
        return None
    bn_w, bn_b, mean, var = (s.data if s is not None else None for s in stats)
    from torch.nn.utils.fusion import fuse_conv_bn_weights

    fw, fb = fuse_conv_bn_weights(wd.data, bd.data if bd is not None else None, mean, var,
                                  bn.args[6], bn_w, bn_b)
    wd.data = fw.detach()
    if bd is not None:
        bd.data = fb.detach()
        bias: Any = b
    else:
        bias = Const(fb.detach(), f"{conv.name}_bias")
    # ExecuTorch's batch-norm fusion puts the fused weight and bias where the
    # weight was
    lw.after[w] = [bias]
    return bias


_UNARY_CHAIN = {aten.alias_copy.default, aten.clone.default, aten._to_copy.default,
                aten.abs.default, aten.clamp.default, aten.ceil.default, aten.floor.default,
                aten.neg.default, aten.relu.default, aten.round.default, aten.sigmoid.default,
                aten.silu.default, aten.sqrt.default, aten.tanh.default, aten.sign.default,
                aten.reciprocal.default, aten.gelu.default, aten.rsqrt.default,
                aten.exp.default, aten.log.default}


def _in_view_chain(n: Node) -> bool:
    t = n.target
    return n.op == "call_function" and (
        t is aten.view_copy.default or t in _UNARY_CHAIN or
        (getattr(t, "namespace", "") == "ember_dim_order" and
         t.__name__.split(".")[0] in ("_clone_dim_order", "_to_dim_order_copy")))


def _remove_redundant(g: torch.fx.Graph) -> None:
    """Copies that change neither dtype nor shape read their input instead."""
    for n in list(g.nodes):
        if n.op == "call_function" and _is_redundant(n):
            n.replace_all_uses_with(n.args[0])
            g.erase_node(n)


def _fuse_view_chains(g: torch.fx.Graph) -> None:
    """view -> (unary elementwise ops and views, one user each) -> view: the
    first view takes the last one's shape and the later views go (ExecuTorch's
    FuseViewCopyTransform). The ops in between then run on that shape."""
    for view in [n for n in g.nodes if n.op == "call_function" and
                 n.target is aten.view_copy.default]:
        if view.graph is not g or not view.users:
            continue
        chain, views, end = [], [], view
        while _in_view_chain(end) and len(end.users) == 1 and \
                _in_view_chain(next(iter(end.users))):
            end = next(iter(end.users))
            chain.append(end)
            if end.target is aten.view_copy.default:
                views.append(end)
        if not views:
            continue
        last = views[-1]
        between = [view] + chain[:chain.index(last)]
        if any(val(n).dtype != val(last).dtype for n in between):
            continue  # a cast in the chain: left as it is
        # the ops in between now compute in the final shape
        for n in between:
            n.meta["val"] = val(last)
        view.args = (view.args[0], last.args[1])
        for v in views:
            v.replace_all_uses_with(v.args[0])
        for v in reversed(views):
            if not v.users:
                g.erase_node(v)


def _static(shape: Sequence[Any]) -> bool:
    return all(isinstance(s, int) for s in shape)


def _squeeze_dims(src: Sequence[int], dst: Sequence[int]) -> Optional[List[int]]:
    if len(src) <= len(dst):
        return None
    i = j = 0
    idx = []
    while i < len(src) and j < len(dst):
        if src[i] == dst[j]:
            i, j = i + 1, j + 1
        elif src[i] == 1:
            idx.append(i)
            i += 1
        else:
            return None
    return idx if i == len(src) and j == len(dst) else None


def _unsqueeze_dim(src: Sequence[int], dst: Sequence[int]) -> Optional[int]:
    if len(dst) - len(src) != 1:
        return None
    i = j = 0
    idx = -1
    while j < len(dst):
        if i == j and j == len(src):
            if dst[j] != 1:
                return None
        elif src[i] != dst[j]:
            if dst[j] != 1:
                return None
            idx = j
            i -= 1
        i, j = i + 1, j + 1
    return idx


def _views_to_squeezes(g: torch.fx.Graph) -> None:
    """A static view that only drops or adds size-1 dims becomes squeeze_copy.dims
    or unsqueeze_copy (ExecuTorch's ViewCopyToSqueezeUnsqueezePass, whose quirk
    of leaving an unsqueeze at dim 0 or an empty squeeze as a view it shares)."""
    for n in [n for n in g.nodes if n.op == "call_function" and
              n.target is aten.view_copy.default]:
        src, dst = list(val(n.args[0]).shape), list(n.args[1])
        if not (_static(src) and _static(dst)):
            continue
        dims = _squeeze_dims(src, dst)
        if dims:
            target, arg = aten.squeeze_copy.dims, dims
        else:
            dim = _unsqueeze_dim(src, dst)
            if not dim:
                continue
            target, arg = aten.unsqueeze_copy.default, dim
        with g.inserting_before(n):
            new = g.call_function(target, (n.args[0], arg))
        new.meta = n.meta
        n.replace_all_uses_with(new)
        g.erase_node(n)


def _should_squeeze(shape: Sequence[int]) -> bool:
    if len(shape) == 3:
        return shape[1] == 1 and shape[0] > 1
    if len(shape) == 4:
        if shape[0] == shape[1] == shape[2] == 1:
            return False
        if shape[0] == shape[1] == 1 and shape[2] > 1 and shape[3] > 1:
            return False
        if shape[0] == 1 and shape[1] > 1 and shape[2] > 1 and shape[3] > 1:
            return False
        return 1 in shape[:-1]
    return False


def _squeeze_unary_inputs(g: torch.fx.Graph) -> None:
    """relu / gelu on a 3-d or 4-d tensor with size-1 dims run on the tensor
    with those dims dropped, between two views (ExecuTorch's
    SqueezeUnsqueezeInputs); a relu that a convolution absorbs is left alone."""
    for n in [n for n in g.nodes if n.op == "call_function" and
              n.target in (aten.relu.default, aten.gelu.default)]:
        x = n.args[0]
        shape = list(val(x).shape)
        if not _static(shape) or not _should_squeeze(shape):
            continue
        if n.target is aten.relu.default and isinstance(x, Node) and \
                x.target is aten.convolution.default and len(x.users) == 1:
            continue
        small = list(shape)
        while len(small) > 2 and 1 in small:
            small.remove(1)
        with val(x).fake_mode if hasattr(val(x), "fake_mode") else _nullcontext():
            small_val = val(x).reshape(small)
            out_small = val(n).reshape(small)
        with g.inserting_before(n):
            squeezed = g.call_function(aten.view_copy.default, (x, small))
        squeezed.meta = dict(n.meta, val=small_val)
        with g.inserting_after(n):
            back = g.call_function(aten.view_copy.default, (n, list(val(n).shape)))
        back.meta = dict(n.meta)
        n.replace_all_uses_with(back, delete_user_cb=lambda u: u is not back)
        n.args = (squeezed,) + tuple(n.args[1:])
        n.meta["val"] = out_small


def _repack_q4(lw: Lowered, m: "q4.Q4Weight", bias: Any, done: set) -> None:
    """The constants of a 4-bit linear in linear_q4gsw's layout (once each):
    the weight's 4-bit pairs, the scales transposed, scales and bias padded
    to a multiple of 4 columns."""
    for node, fn in ((m.weight, q4.pack_weight), (m.scales, q4.pack_scales),
                     (bias, q4.pad_columns)):
        if isinstance(node, Node) and node in lw.consts and node not in done:
            lw.consts[node].data = fn(lw.consts[node].data)
            done.add(node)
    # the payload's constants come in placeholder order; torchao's
    # parametrized weights are lifted after the module's bias, and
    # ExecuTorch's payload keeps that order, where ember's subgraph has them
    # by first use (the weights, read by dequantize_affine, first)
    if isinstance(bias, Node) and bias in lw.consts:
        order = {n: i for i, n in enumerate(lw.graph.nodes)}
        first = min((m.weight, m.scales), key=order.__getitem__)
        if order[bias] > order[first]:
            first.prepend(bias)


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def lower(ep: ExportedProgram) -> Lowered:
    lw = Lowered(ep)
    gm = copy_graph_module(ep.graph_module)
    g = gm.graph
    lw.graph = g
    fuse_rope(g)
    _remove_redundant(g)
    _squeeze_unary_inputs(g)
    _fuse_view_chains(g)
    _views_to_squeezes(g)
    for n in g.nodes:
        if n.op == "placeholder":
            data = q4.constant_of(ep, n)
            if data is not None:
                lw.consts[n] = Const(data, n.name)
    skip: set = set()
    repacked: set = set()
    original = {c: k.data for c, k in lw.consts.items()}  # before any repacking

    def const_of(c: Node) -> Optional[torch.Tensor]:
        return original.get(c)

    for n in g.nodes:
        if n.op != "call_function" or n in skip:
            continue
        t = n.target
        if t is operator.getitem:
            continue
        if _is_redundant(n):
            lw.alias[n] = n.args[0]
            continue
        if t is q4.dequantize_affine() and t is not None and q4.match(n, const_of) is not None:
            continue  # the weight of a 4-bit linear: repacked below
        spec = spec_of(t)
        if spec is None:
            raise ExportError(f"vulkan: {n.format_node()} has no Vulkan implementation")
        if t in _LINEAR_WEIGHT_T and _single_user(n) is not None and \
                _single_user(n).target in (aten.mm.default, aten.addmm.default):
            continue  # the weight of a linear: read untransposed
        if t in (aten.mm.default, aten.addmm.default):
            wt = n.args[-1]
            if isinstance(wt, Node) and wt.target in _LINEAR_WEIGHT_T:
                x = n.args[-2]
                bias = n.args[0] if t is aten.addmm.default else None
                m = q4.match(wt.args[0], const_of) if isinstance(wt.args[0], Node) else None
                if m is not None:
                    _repack_q4(lw, m, bias, repacked)
                    lw.ops.append(VOp("et_vk.linear_q4gsw.default",
                                      [x, m.weight, m.scales, m.group_size, bias], n,
                                      spec_of(aten.linear.default), n))
                    continue
                lw.ops.append(VOp("aten.linear.default", [x, wt.args[0], bias], n,
                                  spec_of(aten.linear.default), n))
                continue
        if t is kv_sdpa:
            q, k, v, start_pos, length, scale = _schema_args(n)
            qv = val(q)  # (B, T, H, D); the caches are llama's (B, L, H, D)
            zeros = torch.zeros(int(qv.shape[0]), int(length), int(qv.shape[2]),
                                int(qv.shape[3]), dtype=qv.dtype)
            kc, vc = Const(zeros, f"{n.name}_k_cache"), Const(zeros.clone(), f"{n.name}_v_cache")
            sym = _SymKey(f"{n.name}_start_pos")
            lw.ops.append(VOp("et_vk.select_as_symint.default", [start_pos, 0, 0], sym,
                              OpSpec(dtypes=spec.dtypes), n))
            lw.ops.append(VOp("sdpa_with_kv_cache.default",
                              [q, k, v, kc, vc, sym, 1, None, 0.0, False, scale], n, spec, n))
            continue
        if t is apply_rotary_emb:
            lw.ops.append(VOp("et_vk.apply_rotary_emb.default", _schema_args(n), n, spec, n))
            continue
        if t is aten.convolution.default:
            args = _schema_args(n)
            user = _single_user(n)
            if user is not None and \
                    user.target is aten._native_batch_norm_legit_no_training.default:
                get0 = [u for u in user.users if u.args[1] == 0]
                if len(get0) == 1 and len(user.users) == 1:
                    bias = _fold_batch_norm(lw, n, user)
                    if bias is not None:
                        lw.alias[get0[0]] = n
                        skip.add(user)
                        args[2] = bias
                        user = _single_user(get0[0])
            if user is not None and user.target in _CLAMPS and val(user).dtype == val(n).dtype:
                if user.target is aten.relu.default:
                    lo, hi = 0.0, sys.float_info.max
                else:
                    lo = user.args[1] if len(user.args) > 1 else -1.0
                    hi = user.args[2] if len(user.args) > 2 else 1.0
                lw.alias[user] = n
                skip.add(user)
                lw.ops.append(VOp("et_vk.conv_with_clamp.default", args + [lo, hi], n, spec, n))
                continue
            lw.ops.append(VOp(op_name(t), args, n, spec, n))
            continue
        lw.ops.append(VOp(op_name(t), _schema_args(n), n, spec, n))
    for n in g.nodes:
        if n.op == "placeholder" and n not in lw.consts and n.users:
            lw.inputs.append(n)
        elif n.op == "output":
            lw.outputs = [a for a in n.args[0]] if isinstance(n.args[0], (list, tuple)) \
                else [n.args[0]]
    # resolve aliases in args, then drop ops whose results nothing reads
    for op in lw.ops:
        op.args = [_map(a, lw.resolve) for a in op.args]
    lw.outputs = [lw.resolve(o) for o in lw.outputs]
    _insert_prepacks(lw)
    for op in lw.ops:
        h = op.node.meta.get("debug_handle", 0) if op.node is not None else 0
        op.debug_handle = h if isinstance(h, int) else 0
    return lw


def _map(a: Any, fn) -> Any:
    """a with fn applied to every Node in it (lists become plain lists)."""
    if isinstance(a, tuple):
        return tuple(_map(x, fn) for x in a)
    if isinstance(a, list):
        return [_map(x, fn) for x in a]
    return fn(a) if isinstance(a, Node) else a


def _insert_prepacks(lw: Lowered) -> None:
    """Constants read by ops that do not pack their own weights go through
    et_vk.prepack.default (one per constant, before the first op)."""
    order = [n for n in lw.graph.nodes if n.op == "placeholder" and n in lw.consts]
    needs: Dict[Node, List[Tuple[VOp, int]]] = {}
    for op in lw.ops:
        for i, a in enumerate(op.args):
            if not (isinstance(a, Node) and a in lw.consts and a.op == "placeholder"):
                continue
            primary = 1 if op.name == "aten.embedding.default" else 0
            if not op.spec.prepacks or i == primary:
                needs.setdefault(a, []).append((op, i))
    front: List[VOp] = []
    for c in order:
        if c not in needs:
            continue
        key = _PrepackKey(c)
        front.append(VOp("et_vk.prepack.default", [c], key, OpSpec(), None))
        for op, i in needs[c]:
            op.args[i] = key
    lw.ops[:0] = front


class _SymKey:
    """A symbolic integer the payload computes (et_vk.select_as_symint)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.meta: Dict[str, Any] = {"val": None}

    def __repr__(self) -> str:
        return self.name


class _PrepackKey:
    """The GPU tensor a prepack op produces from a constant."""

    def __init__(self, const: Node) -> None:
        self.const = const
        self.meta = {"val": const.meta.get("val")}
        self.name = f"prepack_{const.name}"

    def __repr__(self) -> str:
        return self.name


# --------------------------------------------------------------------------- #
# Layouts
# --------------------------------------------------------------------------- #


def _bounds(v: torch.Tensor) -> List[int]:
    return [upper_bound(s) for s in v.shape]


def _start_value(v: torch.SymInt) -> int:
    """The value of a symbolic int at the shapes a delegate is allocated
    for: sizes (backed symbols) at their upper bound, data-dependent values
    (unbacked symbols: positions read from a tensor) at their lower bound,
    so that a slice [start, start + T) of a table covers T rows."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    expr = v.node.expr
    if expr.is_number:
        return int(expr)
    unbacked = free_unbacked_symbols(expr)
    ranges = v.node.shape_env.var_to_range
    at = {}
    for sym in expr.free_symbols:
        r = ranges.get(sym)
        if r is None:
            return upper_bound(v)
        at[sym] = r.lower if sym in unbacked else r.upper
    try:
        value = int(expr.subs(at))
    except (TypeError, ValueError):
        return upper_bound(v)
    return max(-2**31, min(2**31 - 1, value))


def _pick(cand: frozenset) -> Tuple[str, str]:
    """Texture before buffer, then width, height, channels packed."""
    for st in ("T", "B"):
        for lay in ("W", "H", "C"):
            if (st, lay) in cand:
                return st, lay
    return "T", "W"


def tag_layouts(lw: Lowered, limits: Tuple[int, int, int],
                buffer_limit: int = 128 * 1024 * 1024, force_fp16: bool = False) -> None:
    """Chooses each tensor's storage and layout; inserts clone transitions.

    As in ExecuTorch's TagMemoryMetaPass, an op's tensors (its non-constant
    tensor arguments and its outputs) share one representation, chosen from
    those the op accepts and every one of its tensors fits (a convolution's
    weights excepted): first narrowed by what the consumers further down
    need, then by what the argument already has; texture before buffer.
    Ops run in graph order; an argument stored otherwise gets a copy."""
    producers: Dict[Any, VOp] = {}
    users: Dict[Any, List[Tuple[VOp, int]]] = {}
    for op in lw.ops:
        producers[op.out] = op
        for i, a in enumerate(op.args):
            for x in (a if isinstance(a, (list, tuple)) else [a]):
                if _is_tensor(lw, x):
                    users.setdefault(x, []).append((op, i))

    req_cache: Dict[int, frozenset] = {}

    def requirement(op: VOp) -> frozenset:
        """The pairs op accepts for all its tensors (an empty set: not a tensor op)."""
        if id(op) in req_cache:
            return req_cache[id(op)]
        if op.name in _UNTAGGED:
            r: frozenset = frozenset()
        else:
            shapes = _out_shapes(op.out)
            conv = op.name in ("aten.convolution.default", "et_vk.conv_with_clamp.default")
            for a in op.args:
                for x in (a if isinstance(a, (list, tuple)) else [a]):
                    if _is_tensor(lw, x) or (not conv and isinstance(x, Node) and x in lw.consts):
                        shapes += _out_shapes(x)
            r = fit_pairs(pairs_of(op.spec, op.node), shapes, limits, buffer_limit)
        req_cache[id(op)] = r
        return r

    def downstream(src: Any, cand: frozenset) -> frozenset:
        queue, budget = [src], 64
        while queue and len(cand) > 1:
            budget -= 1
            if budget <= 0:
                break
            x = queue.pop(0)
            for op, _ in users.get(x, []):
                if len(cand) <= 1:
                    break
                req = requirement(op)
                if not req or not (req & cand):
                    continue
                cand = cand & req
                queue.append(op.out)
        return cand

    cache: Dict[Tuple[Any, Tuple[str, str]], Any] = {}
    new_ops: List[VOp] = []
    for op in lw.ops:
        req = requirement(op)
        if not req:
            new_ops.append(op)
            continue
        tensor_args = [(i, a) for i, a in enumerate(op.args) if _is_tensor(lw, a) or
                       (isinstance(a, (list, tuple)) and a and all(_is_tensor(lw, x) for x in a))]
        cand = req
        if force_fp16 and any(st == "T" for st, _ in cand):
            # float16 tensors go to textures where the op allows (as ExecuTorch)
            cand = frozenset(p for p in cand if p[0] == "T")
        for _, a in tensor_args:
            first = a[0] if isinstance(a, (list, tuple)) else a
            if len(cand) > 1:
                cand = downstream(first, cand)
            if len(cand) > 1:
                have = lw.repr.get(first)
                if have is not None and have in cand:
                    cand = frozenset({have})
                elif first in producers and requirement(producers[first]) & cand:
                    cand = cand & requirement(producers[first])
        if len(cand) > 1:
            cand = downstream(op.out, cand)
        chosen = _pick(cand)
        for i, a in tensor_args:
            items = list(a) if isinstance(a, (list, tuple)) else [a]
            fixed = []
            for x in items:
                have = lw.repr.get(x)
                if have is None:
                    lw.repr[x] = chosen
                    fixed.append(x)
                elif have == chosen:
                    fixed.append(x)
                else:
                    key = (x, chosen)
                    if key not in cache:
                        t = _Transition(x, chosen[1])
                        lw.repr[t] = chosen
                        new_ops.append(VOp("aten.clone.default", [x, None], t, OpSpec(), None))
                        cache[key] = t
                    fixed.append(cache[key])
            op.args[i] = type(a)(fixed) if isinstance(a, (list, tuple)) else fixed[0]
        lw.repr[op.out] = chosen
        for j, pair in enumerate(op.spec.extra_outs, start=1):
            lw.repr[(op.out, j)] = pair
        new_ops.append(op)
    lw.ops = new_ops
    for key, (st, lay) in lw.repr.items():
        lw.layout[key] = lay
        lw.storage[key] = vs.TEXTURE_3D if st == "T" else vs.BUFFER


_UNTAGGED = ("sym_size.int", "et_vk.prepack.default", "et_vk.select_as_symint.default")


def _out_shapes(key: Any) -> List[List[int]]:
    v = key.meta.get("val") if hasattr(key, "meta") else None
    if isinstance(v, torch.Tensor):
        return [_bounds(v)]
    if isinstance(v, (list, tuple)):
        return [_bounds(t) for t in v if isinstance(t, torch.Tensor)]
    return []


class _Transition:
    """A copy of a tensor in another layout (an aten.clone.default)."""

    def __init__(self, src: Any, layout: str) -> None:
        self.src = src
        self.meta = {"val": src.meta.get("val")}
        self.name = f"{getattr(src, 'name', 'x')}_{layout}"

    def __repr__(self) -> str:
        return self.name


def _is_tensor(lw: Lowered, a: Any) -> bool:
    if isinstance(a, Node):
        return a not in lw.consts and isinstance(a.meta.get("val"), (torch.Tensor, list, tuple)) \
            and not isinstance(a.meta.get("val"), torch.SymInt)
    return isinstance(a, (_PrepackKey, _Transition))


# --------------------------------------------------------------------------- #
# Emission
# --------------------------------------------------------------------------- #

_VK_DTYPE = {torch.bool: vs.BOOL, torch.uint8: vs.UINT8, torch.int8: vs.INT8,
             torch.int32: vs.INT32, torch.float16: vs.FLOAT16, torch.float32: vs.FLOAT32,
             torch.float64: vs.FLOAT64, torch.int64: vs.INT64}


class Emitter:
    def __init__(self, lw: Lowered, force_fp16: bool = False,
                 downcast_64_bit: bool = True) -> None:
        self.lw = lw
        self.force_fp16 = force_fp16
        self.downcast = downcast_64_bit
        self.g = vs.VkGraph()
        self.ids: Dict[Any, int] = {}
        self.scalars: Dict[Any, int] = {}
        self.named_data: Dict[str, bytes] = {}
        self.tensor_ids: List[Tuple[int, Any]] = []   # (value id, key) of planned tensors
        self.debug_map: Dict[int, List[int]] = {}

    def effective(self, dtype: torch.dtype) -> torch.dtype:
        if self.downcast and dtype in (torch.float64, torch.int64):
            return self.staging(dtype)
        if self.force_fp16 and dtype == torch.float32:
            return torch.float16
        return dtype

    def staging(self, dtype: torch.dtype) -> torch.dtype:
        if not self.downcast:
            return dtype
        return {torch.float64: torch.float32, torch.int64: torch.int32}.get(dtype, dtype)

    def add(self, v: vs.Value) -> int:
        self.g.values.append(v)
        return len(self.g.values) - 1

    def const_tensor(self, data: torch.Tensor) -> int:
        dt = self.effective(data.dtype)
        t = data.detach()
        if t.dtype != dt:
            if dt.is_floating_point:
                info = torch.finfo(dt)
                t = t.clamp(min=info.min, max=info.max)
            t = t.to(dt)
        t = t.contiguous()
        raw = t.numpy().tobytes() if t.dtype != torch.bfloat16 else \
            t.view(torch.int16).numpy().tobytes()
        if raw:
            key = hashlib.sha256(raw).hexdigest()
            self.named_data.setdefault(key, raw)
            self.g.constants.append(vs.VkBytes(vs.NAMED_DATA_OFFSET, len(raw), key))
        else:
            self.g.constants.append(vs.VkBytes(0, 0))
        cid = len(self.g.constants) - 1
        return self.add(vs.VkTensor(_VK_DTYPE[dt], list(t.shape), cid, -1, vs.DEFAULT_STORAGE,
                                    vs.DEFAULT_LAYOUT, _VK_DTYPE[dt]))

    def tensor(self, v: torch.Tensor, key: Any) -> int:
        layout = self.lw.layout.get(key)
        storage = self.lw.storage.get(key, vs.TEXTURE_3D) if layout is not None \
            else vs.DEFAULT_STORAGE
        mem = {"W": vs.WIDTH_PACKED, "H": vs.HEIGHT_PACKED, "C": vs.CHANNELS_PACKED}.get(
            layout or "", vs.DEFAULT_LAYOUT)
        vid = self.add(vs.VkTensor(_VK_DTYPE[self.effective(v.dtype)], _bounds(v), -1, -1,
                                   storage, mem, _VK_DTYPE[self.staging(v.dtype)]))
        self.tensor_ids.append((vid, key))
        return vid

    def value_of_key(self, key: Any) -> int:
        if key in self.ids:
            return self.ids[key]
        if isinstance(key, _SymKey):
            vid = self.add(vs.SymInt(0))
        elif isinstance(key, Node) and key in self.lw.consts:
            vid = self.const_tensor(self.lw.consts[key].data)
        else:
            v = key.meta.get("val")
            if isinstance(v, torch.Tensor):
                vid = self.tensor(v, key)
            elif isinstance(v, (list, tuple)):
                items = [self.tensor(t, (key, j)) for j, t in enumerate(v)]
                for j in range(len(items)):
                    self.lw.layout.setdefault((key, j), self.lw.layout.get(key, "W"))
                    self.lw.storage.setdefault((key, j), self.lw.storage.get(key, vs.TEXTURE_3D))
                vid = self.add(vs.ValueList(items))
                # the items were created before the layout copy: fix them up
                for j, item in enumerate(items):
                    t = self.g.values[item]
                    lay = self.lw.layout.get(key)
                    if lay is not None:
                        lay = self.lw.layout.get((key, j), lay)
                        t.memory_layout = {"W": vs.WIDTH_PACKED, "H": vs.HEIGHT_PACKED,
                                           "C": vs.CHANNELS_PACKED}[lay]
                        t.storage_type = self.lw.storage.get((key, j), self.lw.storage.get(
                            key, vs.TEXTURE_3D))
            elif isinstance(v, torch.SymInt):
                # an int from outside the delegate (the first execute sets
                # it): at init, the value that fits the allocated shapes
                vid = self.add(vs.SymInt(_start_value(v)))
            elif isinstance(v, int):
                vid = self.add(vs.SymInt(v))
            else:
                raise ExportError(f"vulkan: cannot make a value for {key}")
        self.ids[key] = vid
        return vid

    def scalar(self, s: Any) -> int:
        # by type as well: 0, 0.0 and False are one dict key but three values
        key = (type(s).__name__, s)
        if key in self.scalars:
            return self.scalars[key]
        if isinstance(s, bool):
            vid = self.add(vs.Bool(s))
        elif isinstance(s, int):
            vid = self.add(vs.Int(s))
        else:
            vid = self.add(vs.Double(float(s)))
        self.scalars[key] = vid
        return vid

    def arg(self, a: Any) -> int:
        if isinstance(a, Const):
            if id(a) not in self.ids:
                self.ids[id(a)] = self.const_tensor(a.data)
            return self.ids[id(a)]
        if isinstance(a, _SymKey):
            return self.value_of_key(a)
        if isinstance(a, (Node, _PrepackKey, _Transition)):
            if isinstance(a, Node) and a.op == "call_function" and a.target is operator.getitem:
                src = self.value_of_key(self.lw.resolve(a.args[0]))
                return self.g.values[src].items[a.args[1]]
            return self.value_of_key(a)
        if a is None or isinstance(a, (torch.dtype, torch.device, torch.layout,
                                       torch.memory_format)):
            return self.add(vs.Null())
        if isinstance(a, (bool, int, float)):
            return self.scalar(a)
        if isinstance(a, str):
            return self.add(vs.String(a))
        if isinstance(a, (list, tuple)):
            return self.scalar_list(list(a))
        raise ExportError(f"vulkan: cannot make a value for argument {a!r}")

    def scalar_list(self, items: List[Any]) -> int:
        if items and not any(isinstance(x, (bool, int, float)) for x in items):
            return self.add(vs.ValueList([self.arg(x) for x in items]))
        first = len(self.g.values)
        if not items:
            self.add(vs.IntList([]))
        all_bool = all(isinstance(x, bool) for x in items)
        all_int = all(isinstance(x, int) for x in items)
        all_float = all(isinstance(x, float) for x in items)
        if all_bool:
            self.add(vs.BoolList(list(items)))
        if all_int:
            self.add(vs.IntList([int(x) for x in items]))
        elif all_float:
            self.add(vs.DoubleList(list(items)))
        elif all(isinstance(x, int) or isinstance(x, Node) for x in items):
            return self.add(vs.ValueList([self.arg(x) for x in items]))
        else:
            raise ExportError(f"vulkan: cannot make a value for list {items!r}")
        return first


def emit(lw: Lowered, force_fp16: bool = False, downcast_64_bit: bool = True) -> Emitter:
    em = Emitter(lw, force_fp16, downcast_64_bit)
    ep = lw.ep
    # placeholders first, in graph order (constants that ops read, then inputs)
    read = set()
    for op in lw.ops:
        for a in op.args:
            for x in (a if isinstance(a, (list, tuple)) else [a]):
                read.add(x.const if isinstance(x, _PrepackKey) else x)
    prepacks = {op.out.const: op for op in lw.ops if isinstance(op.out, _PrepackKey)}

    def call(op: VOp) -> None:
        args = [em.arg(a) for a in op.args]
        args.append(em.value_of_key(op.out))
        node_id = len(em.g.chain)
        em.g.chain.append(vs.OperatorCall(node_id, op.name, args))
        if op.debug_handle:
            em.debug_map[node_id] = [op.debug_handle]

    # as in the graph ExecuTorch builds: a prepack follows its placeholder
    for n in lw.graph.nodes:
        if n.op != "placeholder":
            continue
        if n in lw.consts:
            if n in read:
                em.value_of_key(n)
            for extra in lw.after.get(n, []):
                em.arg(extra)
            if n in prepacks:
                call(prepacks[n])
        elif n.users:
            em.g.input_ids.append(em.value_of_key(n))
    for op in lw.ops:
        if not isinstance(op.out, _PrepackKey):
            call(op)
    for o in lw.outputs:
        em.g.output_ids.append(em.arg(o))
    return em


def plan_memory(em: Emitter) -> None:
    """Shares memory objects between tensors whose lifetimes do not overlap."""
    g = em.g
    n_ops = len(g.chain)
    first: Dict[int, int] = {}
    last: Dict[int, int] = {}
    planned = {vid for vid, _ in em.tensor_ids}
    prepacked = {op.args[-1] for op in g.chain if op.name == "et_vk.prepack.default"}
    planned -= prepacked

    def touch(vid: int, i: int) -> None:
        v = g.values[vid]
        if isinstance(v, vs.ValueList):
            for x in v.items:
                touch(x, i)
            return
        if vid in planned:
            first[vid] = min(first.get(vid, i), i)
            last[vid] = max(last.get(vid, i), i)

    for vid in g.input_ids:
        touch(vid, -1)
    for i, op in enumerate(g.chain):
        for a in op.args:
            touch(a, i)
    for vid in g.output_ids:
        touch(vid, n_ops)

    def nbytes(vid: int) -> int:
        t = g.values[vid]
        size = {vs.BOOL: 1, vs.UINT8: 1, vs.INT8: 1, vs.FLOAT16: 2}.get(t.datatype, 4)
        return size * math.prod(t.dims)

    objects: List[List[Tuple[int, int]]] = []
    for vid in sorted(first, key=lambda v: (-nbytes(v), v)):
        span = (first[vid], last[vid])
        for k, spans in enumerate(objects):
            if all(span[1] < s[0] or s[1] < span[0] for s in spans):
                spans.append(span)
                g.values[vid].mem_obj_id = k
                break
        else:
            objects.append([span])
            g.values[vid].mem_obj_id = len(objects) - 1
