"""Rotary embeddings: llama's rope pattern as one `et_vk.apply_rotary_emb` call.

Llama's `apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)` rotates the (even,
odd) pairs of the head dim of q `[B, S, Hq, D]` and k `[B, S, Hk, D]` by the
angles of each position (`freqs_*`: `[S, D/2]`). After export it is some
twenty view, select, multiply and stack nodes; ExecuTorch's Vulkan flow
finds that subgraph and runs it as one operator,
`et_vk.apply_rotary_emb(xq, xk, freqs_cos, freqs_sin) -> (xq_out, xk_out)`.

ember does the same: `find_rope` matches the pattern (exported once from
`RopePattern` through ember's edge lowering, literals ignored) in an edge
graph and checks the shapes; the partitioner takes every node of a match,
and `fuse_rope` (in preprocess) replaces each match with a call of
`ember_vulkan::apply_rotary_emb`, which the payload names
`et_vk.apply_rotary_emb.default`.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import List, Optional, Set, Tuple

import torch
from torch.fx import Graph, Node

_LIB: Optional[torch.library.Library] = None


def rotate_pairs(xq: torch.Tensor, xk: torch.Tensor, freqs_cos: torch.Tensor,
                 freqs_sin: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Llama's rotary embeddings: x [B, S, H, D] with (even, odd) pairs of D
    rotated by the angles whose cosines and sines freqs_* [S, D/2] hold."""
    def pairs(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        real, imag = x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
        return real, imag

    q_re, q_im = pairs(xq)
    k_re, k_im = pairs(xk)
    shape = [1, q_re.shape[1]] + [1] * (q_re.dim() - 3) + [q_re.shape[-1]]
    cos, sin = freqs_cos.view(shape), freqs_sin.view(shape)
    q = torch.stack([q_re * cos - q_im * sin, q_re * sin + q_im * cos], dim=-1).flatten(3)
    k = torch.stack([k_re * cos - k_im * sin, k_re * sin + k_im * cos], dim=-1).flatten(3)
    return q.type_as(xq), k.type_as(xk)


def _register() -> None:
    global _LIB
    if _LIB is not None:
        return
    lib = torch.library.Library("ember_vulkan", "FRAGMENT")
    lib.define("apply_rotary_emb(Tensor xq, Tensor xk, Tensor freqs_cos, Tensor freqs_sin) "
               "-> (Tensor, Tensor)")
    lib.impl("apply_rotary_emb", rotate_pairs, "CompositeExplicitAutograd")
    _LIB = lib


_register()
apply_rotary_emb = torch.ops.ember_vulkan.apply_rotary_emb.default


class RopePattern(torch.nn.Module):
    def forward(self, xq: torch.Tensor, xk: torch.Tensor, freqs_cos: torch.Tensor,
                freqs_sin: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return rotate_pairs(xq, xk, freqs_cos, freqs_sin)


@functools.lru_cache(maxsize=1)
def _pattern() -> Graph:
    from ...edge import EdgeCompileConfig, convert_to_edge

    args = (torch.randn(1, 1, 4, 32), torch.randn(1, 1, 2, 32), torch.randn(1, 16),
            torch.randn(1, 16))
    ep = torch.export.export(RopePattern(), args, strict=True)
    return convert_to_edge(ep, EdgeCompileConfig()).graph


@dataclass
class RopeMatch:
    inputs: List[Node]     # xq, xk, freqs_cos, freqs_sin
    outputs: List[Node]    # xq_out, xk_out
    nodes: Set[Node]       # every node the call replaces


def _val(n: Node) -> Optional[torch.Tensor]:
    v = n.meta.get("val")
    return v if isinstance(v, torch.Tensor) else None


def _shapes_fit(inputs: List[Node], outputs: List[Node]) -> bool:
    vals = [_val(n) for n in inputs + outputs]
    if any(v is None for v in vals):
        return False
    xq, xk, cos, sin, q_out, k_out = vals
    if xq.dim() != 4 or xk.dim() != 4 or cos.dim() != 2 or sin.dim() != 2:
        return False
    if q_out.shape != xq.shape or k_out.shape != xk.shape or cos.shape != sin.shape:
        return False
    if xq.dtype not in (torch.float32, torch.float16) or \
            len({xq.dtype, xk.dtype, cos.dtype, sin.dtype, q_out.dtype, k_out.dtype}) != 1:
        return False
    s, d = xq.shape[1], xq.shape[3]
    return xk.shape[1] == s and xk.shape[3] == d and cos.shape[0] == s and \
        cos.shape[1] * 2 == d


def find_rope(graph: Graph) -> List[RopeMatch]:
    """The rope subgraphs of graph whose shapes the fused op runs."""
    from torch.fx.passes.utils.matcher_utils import SubgraphMatcher

    pattern = _pattern()
    out = []
    taken: Set[Node] = set()
    matcher = SubgraphMatcher(pattern, ignore_literals=True)
    for m in matcher.match(graph):
        inputs = list(m.placeholder_nodes)
        outputs = list(m.returning_nodes)
        nodes = {n for p, n in m.nodes_map.items() if p.op not in ("placeholder", "output")}
        if len(inputs) != 4 or len(outputs) != 2 or nodes & taken:
            continue
        if not _shapes_fit(inputs, outputs):
            continue
        # only the outputs may be read outside the match
        if any(u not in nodes for n in nodes - set(outputs) for u in n.users):
            continue
        taken |= nodes
        out.append(RopeMatch(inputs, outputs, nodes))
    return out


def fuse_rope(graph: Graph) -> None:
    """Every rope match of graph becomes one apply_rotary_emb call (and two getitems)."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    for m in find_rope(graph):
        first = min(m.outputs, key=order.__getitem__)
        with graph.inserting_before(first):
            call = graph.call_function(apply_rotary_emb, tuple(m.inputs))
            items = [graph.call_function(operator.getitem, (call, j)) for j in range(2)]
        call.meta = dict(m.outputs[0].meta, val=tuple(_val(o) for o in m.outputs))
        for item, o in zip(items, m.outputs):
            item.meta = dict(o.meta)
            o.replace_all_uses_with(item)
        for n in sorted(m.nodes, key=order.__getitem__, reverse=True):
            if not n.users:
                graph.erase_node(n)
