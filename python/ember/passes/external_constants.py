"""Tags a model's weights for a `.ptd` data file, for the delegates that read them.

ExecuTorch's way, with the same name: tag the weights of the *unlifted*
module (`torch.export.export(...).module()`, where weights are `get_attr`
nodes), export that module again (torch.export carries `meta["custom"]` to
the weight placeholders), then lower. A backend that honours the tag
(ember's XNNPACK backend does) sends those weights to "<tag>.ptd" instead of
the program's named data:

    mod = torch.export.export(model, args).module()
    delegate_external_constants_pass_unlifted(mod, gen_tag_fn=lambda node: "model")
    edge = to_edge_transform_and_lower(torch.export.export(mod, args),
                                       partitioner=[XnnpackPartitioner()])
    et = edge.to_executorch(ExecutorchBackendConfig(external_constants=lambda n: "model"))
    et.write_tensor_data_to_file(outdir)          # model.ptd

(`external_constants` does the same for the constants no delegate took.)
"""

from __future__ import annotations

from typing import Callable, Optional

import torch
from torch.fx import GraphModule, Node

TAG_KEY = "delegate_constant_tag"


def delegate_external_constants_pass_unlifted(
        module: torch.nn.Module,
        gen_tag_fn: Optional[Callable[[Node], Optional[str]]] = None) -> bool:
    """Puts `gen_tag_fn(node)` into `node.meta["custom"]["delegate_constant_tag"]`
    of every `get_attr` node of every graph module in `module`; returns whether
    anything was tagged. A function returning None leaves that weight in the
    program. Without gen_tag_fn nothing is tagged (as in ExecuTorch)."""
    tagged = False
    if gen_tag_fn is None:
        return tagged
    for m in module.modules():
        if not isinstance(m, GraphModule):
            continue
        for node in m.graph.nodes:
            if node.op != "get_attr":
                continue
            tag = gen_tag_fn(node)
            custom = node.meta.setdefault("custom", {})
            if tag is None:
                custom.pop(TAG_KEY, None)
            else:
                custom[TAG_KEY] = str(tag)
                tagged = True
    return tagged
