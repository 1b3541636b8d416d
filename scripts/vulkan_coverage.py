#!/usr/bin/env python3
"""Operator coverage of ember's Vulkan partitioner against ExecuTorch's Vulkan op registry.

Lists every operator either registry knows (ember.backends.vulkan.ops.OPS;
executorch/backends/vulkan/op_registry.py's vulkan_supported_ops, when the
executorch package is installed) with the dtypes and memory layouts ember
accepts, and writes the table into docs/vulkan.md between its
`<!-- BEGIN coverage -->` and `<!-- END coverage -->` markers.

usage: .venv/bin/python scripts/vulkan_coverage.py [--markdown docs/vulkan.md | --print]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

BEGIN, END = "<!-- BEGIN coverage -->", "<!-- END coverage -->"
DT = {torch.float32: "f32", torch.float16: "f16", torch.int32: "i32", torch.int64: "i64",
      torch.bool: "bool", torch.int8: "i8"}
# ember's names for ops whose ExecuTorch counterpart is named otherwise
SAME_AS = {"ember_vulkan::sdpa_with_kv_cache.default": "llama::sdpa_with_kv_cache.default",
           "ember_vulkan::apply_rotary_emb.default": "et_vk::apply_rotary_emb.default",
           "ember_dim_order::_clone_dim_order.default": "dim_order_ops::_clone_dim_order.default",
           "ember_dim_order::_to_dim_order_copy.default":
               "dim_order_ops::_to_dim_order_copy.default"}


# ops outside ember's registry that its preprocess makes of a pattern
FUSED = {"et_vk::linear_q4gsw.default":
         "fused from torchao's dequantize_affine + linear (4-bit, symmetric)"}


def key_of(op: Any) -> Optional[str]:
    """namespace::name.overload for a torch op, an edge op or a registry string."""
    if isinstance(op, str):
        return op if "." in op.split("::")[-1] else op + ".default"
    inner = op if isinstance(op, torch._ops.OpOverload) else getattr(op, "_op", op)
    schema = getattr(inner, "_schema", None)
    if schema is None:
        return None  # python builtins (operator.getitem, operator.add, ...)
    return f"{schema.name}.{inner._overloadname}"


def ember_ops() -> Dict[str, Any]:
    import ember.dialect  # noqa: F401  (registers ember's dim-order ops)
    from ember.backends.vulkan.ops import OPS, dim_order_ops

    out = {}
    for op, spec in list(OPS.items()) + list(dim_order_ops().items()):
        k = key_of(op)
        if k is not None:
            out[SAME_AS.get(k, k)] = spec
    return out


def executorch_ops() -> Optional[set]:
    try:
        from executorch.backends.vulkan.op_registry import vulkan_supported_ops
    except Exception:  # noqa: BLE001 - the package is optional
        return None
    return {k for k in (key_of(op) for op in vulkan_supported_ops) if k is not None}


def table() -> str:
    from ember.backends.vulkan.ops import EMBER_ONLY, WIDER_THAN_EXECUTORCH

    ours = ember_ops()
    theirs = executorch_ops()
    extra = {key_of(o) for o in EMBER_ONLY}
    wider = {key_of(o) for o in WIDER_THAN_EXECUTORCH}
    names = sorted(set(ours) | (theirs or set()))
    rows: List[str] = ["| operator | ExecuTorch | ember | dtypes | layouts | >4-d | note |",
                       "|---|---|---|---|---|---|---|"]
    for n in names:
        spec = ours.get(n)
        et = "?" if theirs is None else ("yes" if n in theirs else "-")
        if spec is None:
            note = FUSED.get(n)
            rows.append(f"| `{n}` | {et} | - | | | | {note} |" if note else
                        f"| `{n}` | {et} | - | | | | |")
            continue
        dts = " ".join(DT[d] for d in DT if d in spec.dtypes)
        lays = "per args" if spec.layouts_for is not None else "".join(
            x for x in "WHC" if x in spec.layouts)
        lays += "" if spec.buffer_ok else " (texture)"
        note = ("ember only" if n in extra else "wider than ExecuTorch" if n in wider else
                "ExecuTorch's llama op; caches owned by the delegate"
                if n.startswith("llama::") else
                "fused from llama's rope subgraph" if n.startswith("et_vk::apply_rotary") else "")
        rows.append(f"| `{n}` | {et} | yes | {dts} | {lays} | {'yes' if spec.highdim else ''} "
                    f"| {note} |")
    both = len([n for n in names if n in ours and theirs is not None and n in theirs])
    head = (f"{len(ours)} operators in ember's registry, "
            + ("" if theirs is None else f"{len(theirs)} in ExecuTorch's, {both} in both.")
            + "\n\n")
    return head + "\n".join(rows) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", default=os.path.join(ROOT, "docs", "vulkan.md"))
    ap.add_argument("--print", action="store_true", help="print the table instead")
    a = ap.parse_args()
    text = table()
    if a.print:
        print(text)
        return
    with open(a.markdown) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{a.markdown} has no {BEGIN} ... {END} markers")
    before, rest = doc.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    with open(a.markdown, "w") as f:
        f.write(before + BEGIN + "\n" + text + END + after)
    print(f"vulkan_coverage: wrote {a.markdown}")


if __name__ == "__main__":
    main()
