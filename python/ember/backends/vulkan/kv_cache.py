"""Attention with a KV cache that the Vulkan delegate owns.

ember's KV-cache export (examples/nanogpt/kv_cache.py) calls the fused
`ember::sdpa_with_kv_cache(q, k, v, k_cache, v_cache, start_pos)`, whose
caches are mutable buffers of the program. ExecuTorch's Vulkan runtime keeps
a cache on the GPU instead: its `sdpa_with_kv_cache.default` (llama's op)
takes the caches as constant tensors, allocates them once and updates them in
place, so the state never crosses to the CPU.

`own_kv_caches` rewrites a program for that: each such call becomes
`ember_vulkan::sdpa_with_kv_cache(q, k, v, start_pos, cache_len, scale)`,
and the cache buffers, with the outputs that wrote them back, leave the
program. builder.py lowers the call to ExecuTorch's form: the caches become
zero constants of shape (B, cache_len, H, D) (llama's layout; the runtime
never exposes them), start_pos goes through `et_vk.select_as_symint.default`,
then `sdpa_with_kv_cache.default(q, k, v, k_cache, v_cache, start_pos,
seq_len = 1, attn_mask = None, dropout_p = 0.0, is_causal = False, scale)`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import OutputKind
from torch.fx import Node

from ...graph_utils import copy_graph_module, rebuild_program, resync_signature

_LIB: Optional[torch.library.Library] = None


def _register() -> None:
    global _LIB
    if _LIB is not None:
        return
    lib = torch.library.Library("ember_vulkan", "DEF")
    lib.define("sdpa_with_kv_cache(Tensor q, Tensor k, Tensor v, Tensor start_pos, int cache_len, "
               "float? scale=None) -> Tensor")

    def _impl(q, k, v, start_pos, cache_len, scale=None):
        raise RuntimeError("ember_vulkan::sdpa_with_kv_cache runs only inside the Vulkan "
                           "delegate, which owns its caches")

    def _fake(q, k, v, start_pos, cache_len, scale=None):
        return torch.empty_like(q)

    lib.impl("sdpa_with_kv_cache", _impl, "CompositeExplicitAutograd")
    torch.library.register_fake("ember_vulkan::sdpa_with_kv_cache", _fake, lib=lib)
    _LIB = lib


_register()
sdpa_with_kv_cache = torch.ops.ember_vulkan.sdpa_with_kv_cache.default


def _ember_sdpa() -> Any:
    ns = getattr(torch.ops, "ember", None)
    packet = getattr(ns, "sdpa_with_kv_cache", None) if ns is not None else None
    return packet.default if packet is not None else None


def is_kv_sdpa(node: Node) -> bool:
    """An auto-functionalized ember::sdpa_with_kv_cache call."""
    op = _ember_sdpa()
    return (op is not None and node.op == "call_function" and
            node.target in (torch.ops.higher_order.auto_functionalized,
                            torch.ops.higher_order.auto_functionalized_v2)
            and node.args and node.args[0] is op)


def _cache_nodes(node: Node) -> List[Node]:
    kw = node.kwargs
    if "_all_bases" in kw:   # auto_functionalized_v2: the caches are the bases
        return list(kw["_all_bases"])
    return [kw["k_cache"], kw["v_cache"]]


def own_kv_caches(ep: ExportedProgram, keep: Any = None) -> ExportedProgram:
    """ep with every float ember::sdpa_with_kv_cache call owning its caches
    (see the module docstring); `keep(node)` may veto a call. Returns ep
    unchanged when there is none."""
    calls = [n for n in ep.graph.nodes if is_kv_sdpa(n) and (keep is None or keep(n))]
    if not calls:
        return ep
    gm = copy_graph_module(ep.graph_module)
    calls = [n for n in gm.graph.nodes if is_kv_sdpa(n) and (keep is None or keep(n))]
    sig = ep.graph_signature
    dropped_buffers: set = set()
    dropped_outputs: set = set()
    for call in calls:
        kw = call.kwargs
        caches = _cache_nodes(call)
        length = int(caches[0].meta["val"].shape[2])
        with gm.graph.inserting_before(call):
            new = gm.graph.call_function(sdpa_with_kv_cache,
                                         (kw["q"], kw["k"], kw["v"], kw["start_pos"], length,
                                          kw.get("scale")))
        new.meta = dict(call.meta)
        users = list(call.users)
        for u in users:
            idx = u.args[1]
            if idx == 0:
                new.meta["val"] = u.meta["val"]
                u.replace_all_uses_with(new)
            else:
                dropped_outputs.add(u.name)
        out = gm.graph.output_node()
        outs = [o for o in out.args[0] if not (isinstance(o, Node) and o.name in dropped_outputs)]
        out.args = (tuple(outs),)
        for u in users:
            gm.graph.erase_node(u)
        gm.graph.erase_node(call)
        for c in caches:
            if not c.users:
                dropped_buffers.add(c.name)
                gm.graph.erase_node(c)
    gm.graph.lint()
    # the output specs lose the mutations of dropped caches
    kept_specs = [s for s in sig.output_specs
                  if not (s.kind == OutputKind.BUFFER_MUTATION and s.arg.name in dropped_outputs)]
    sig2 = type(sig)(input_specs=list(sig.input_specs), output_specs=kept_specs)
    new_sig = resync_signature(gm, sig2, {})
    targets = {s.target for s in sig.input_specs if getattr(s.arg, "name", None) in dropped_buffers}
    state_dict: Dict[str, Any] = {k: v for k, v in ep.state_dict.items() if k not in targets}
    constants = {k: v for k, v in ep.constants.items() if k not in targets}
    return rebuild_program(ep, gm, new_sig, constants, state_dict)
