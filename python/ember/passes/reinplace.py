"""Mutating custom ops run in place again: `auto_functionalized` -> the op itself.

torch.export keeps programs functional. A custom op that writes into its
arguments (`Tensor(a!) k_cache`) is traced as

    res = auto_functionalized_v2(op, ..., _all_bases=[b_k_cache, ...])
    out, new_k_cache = res[0], res[1]

meaning "clone each mutated base, run op on the clones, return the clones",
and a buffer so updated is returned as a BUFFER_MUTATION output that the
lowering copies back into the buffer (`write_back.py`). For a KV cache that
is a copy of the whole cache per call. This pass calls the op directly
instead, on each base, in place, when that is safe, and on a clone of it
otherwise:

- in place when the base holds the current value of a mutable buffer (the
  buffer's placeholder, or the new value of an earlier call that was itself
  made in place) and nothing reads the old value after the call: every other
  user of the base, and of every reshape of it (a `view_copy` may become a
  view sharing its bytes), comes before the call. The call's new value is the
  buffer itself then, so the write-back of that buffer disappears;
- otherwise (a user input, a constant, a value read again later) the base is
  cloned first (`_clone_dim_order`) and the op mutates the clone, which is
  exactly the functional meaning.

Arguments that are views of a base (a slice of a buffer) are refused with an
error naming the op: writes through a copy of the view would be lost.
"""

from __future__ import annotations

import operator
from typing import Dict, List, Optional, Set, Tuple

import torch
from torch._ops import OpOverload
from torch.export.graph_signature import ExportGraphSignature, InputKind
from torch.fx import GraphModule, Node

from .. import dialect
from ..errors import ExportError, source_location
from ..graph_utils import call_before, fake_mode_of, inherit_meta, subgraphs

_HOPS = (torch.ops.higher_order.auto_functionalized,
         torch.ops.higher_order.auto_functionalized_v2)


def is_auto_functionalized(node: Node) -> bool:
    return node.op == "call_function" and node.target in _HOPS


def _mutable_args(op: OpOverload) -> List[Tuple[str, torch.Type]]:
    return [(a.name, a.type) for a in op._schema.arguments
            if a.alias_info is not None and a.alias_info.is_write]


def _error(node: Node, op: OpOverload, msg: str) -> ExportError:
    return ExportError(f"{dialect.op_display_name(op)} {msg}; it comes from "
                       f"{source_location(node)}")


def _split_kwargs(node: Node) -> Tuple[OpOverload, Dict[str, object], List[Optional[Node]],
                                       Dict[str, int]]:
    """(op, its own arguments, the mutated bases, argument name -> base index)."""
    op = node.args[0]
    if not isinstance(op, OpOverload):
        raise ExportError(f"auto-functionalized call of {op!r} is not an operator overload; "
                          f"it comes from {source_location(node)}")
    kwargs = dict(node.kwargs)
    mutable = _mutable_args(op)
    arg_base: Dict[str, int] = {}
    if node.target is torch.ops.higher_order.auto_functionalized:
        kwargs.pop("_only_clone_these_tensors", None)
        bases: List[Optional[Node]] = []
        for name, _ in mutable:
            if isinstance(kwargs.get(name), (list, tuple)):
                raise _error(node, op, "mutates a list of tensors, which ember cannot run in place")
            arg_base[name] = len(bases)
            bases.append(kwargs.get(name))
        return op, kwargs, bases, arg_base

    from torch._higher_order_ops.auto_functionalize import (
        AliasViewInfo,
        NotView,
        read_view_information_from_args,
    )

    bases = list(kwargs.pop("_all_bases", []))
    infos = read_view_information_from_args([n for n, _ in mutable], [t for _, t in mutable],
                                            kwargs, bases)
    for name, info in infos.items():
        if info is None:
            continue  # an optional tensor passed as None
        if isinstance(info, list):
            raise _error(node, op, "mutates a list of tensors, which ember cannot run in place")
        if not isinstance(info, (NotView, AliasViewInfo)):
            raise _error(node, op, f"mutates a view (slice or strided part) of a tensor through "
                         f"argument {name!r}; pass the whole tensor instead")
        arg_base[name] = info.base_index
        kwargs[name] = bases[info.base_index]
    return op, kwargs, bases, arg_base


def _aliases(node: Node) -> Set[Node]:
    """node and the reshapes of it that the lowering may turn into views of its bytes."""
    out = {node}
    todo = [node]
    while todo:
        n = todo.pop()
        for u in n.users:
            if (u.op == "call_function" and u.target in (torch.ops.aten.view_copy.default,
                                                         dialect.et_view)
                    and u.args[0] is n and u not in out):
                out.add(u)
                todo.append(u)
    return out


def _read_after(base: Node, call: Node, order: Dict[Node, int]) -> bool:
    """Whether the value of base (or of a view of it) is read after call."""
    group = _aliases(base)
    for n in group:
        for u in n.users:
            if u is call or u in group:
                continue
            if order[u] > order[call]:
                return True
    return False


def _mutable_buffer_placeholders(gm: GraphModule, sig: Optional[ExportGraphSignature]
                                 ) -> Set[Node]:
    if sig is None:
        return set()
    mutated = set(sig.buffers_to_mutate.values())
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return {n for spec, n in zip(sig.input_specs, phs)
            if spec.kind == InputKind.BUFFER and spec.target in mutated}


def _plan(gm: GraphModule, sig: Optional[ExportGraphSignature]) -> Dict[Node, List[bool]]:
    """Per auto-functionalized call: for each base, whether it is mutated in place.

    Decided on the functional graph, before any rewriting: the new value of a
    base mutated in place holds the same buffer, so a later call on it may be
    in place too.
    """
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    holds_buffer = _mutable_buffer_placeholders(gm, sig)
    plan: Dict[Node, List[bool]] = {}
    for node in gm.graph.nodes:
        if not is_auto_functionalized(node):
            continue
        _, _, bases, _ = _split_kwargs(node)
        offset = len(node.meta["val"]) - len(bases)
        decisions = []
        for i, base in enumerate(bases):
            ok = (isinstance(base, Node) and base in holds_buffer
                  and not _read_after(base, node, order))
            decisions.append(ok)
            if ok:
                for u in node.users:
                    if u.target is operator.getitem and u.args[1] == offset + i:
                        holds_buffer.add(u)
        plan[node] = decisions
    return plan


def _clone(gm: GraphModule, before: Node, base: Node) -> Node:
    val = base.meta["val"]
    return call_before(gm, before, dialect.dim_order_ops()["clone"], (base,),
                       {"dim_order": list(range(val.dim()))}, fake_mode=fake_mode_of(gm))


def _rewrite(gm: GraphModule, node: Node, in_place: List[bool]) -> None:
    op, kwargs, bases, arg_base = _split_kwargs(node)
    offset = len(node.meta["val"]) - len(bases)
    new_bases: List[Optional[Node]] = []
    for base, keep in zip(bases, in_place):
        if base is None or keep:
            new_bases.append(base)
        else:
            new_bases.append(_clone(gm, node, base))
    for name, i in arg_base.items():
        kwargs[name] = new_bases[i]

    args: List[object] = []
    kw: Dict[str, object] = {}
    for a in op._schema.arguments:
        if a.name in kwargs:
            v = kwargs[a.name]
        elif a.has_default_value():
            v = a.default_value
        else:
            raise _error(node, op, f"is called without its argument {a.name!r}")
        if a.kwarg_only:
            kw[a.name] = v
        else:
            args.append(v)
    with gm.graph.inserting_before(node):
        call = gm.graph.call_function(op, tuple(args), kw)
    vals = list(node.meta["val"])
    n_ret = len(op._schema.returns)
    call.meta["val"] = vals[0] if n_ret == 1 else (tuple(vals[:offset]) if n_ret else None)
    inherit_meta(call, node)

    for user in list(node.users):
        if user.target is not operator.getitem:
            raise _error(node, op, f"result is used by {user.name} other than by indexing")
        i = user.args[1]
        if i >= offset:
            user.replace_all_uses_with(new_bases[i - offset])
            gm.graph.erase_node(user)
        elif n_ret == 1:
            user.replace_all_uses_with(call)
            gm.graph.erase_node(user)
        else:
            user.args = (call, i)
    gm.graph.erase_node(node)


def reinplace_functionalized(gm: GraphModule, sig: Optional[ExportGraphSignature]) -> int:
    """Replaces every auto-functionalized call in gm (and its control-flow branches,
    where every base is cloned) by the mutating op. Returns how many bases were
    mutated in place."""
    count = 0
    graphs = [(gm, sig)] + [(g, None) for g in subgraphs(gm)]
    for g, s in graphs:
        plan = _plan(g, s)
        for node, in_place in plan.items():
            _rewrite(g, node, in_place)
            count += sum(in_place)
        if plan:
            g.recompile()
    return count
