"""VulkanBackend, ahead of time: an edge subgraph into a Vulkan delegate payload.

builder.py lowers the subgraph (ExecuTorch's rewrites: linear, folded batch
norm, convolution with clamp, prepacked constants), chooses each tensor's
storage and layout, emits the VkGraph and plans its memory; schema.py writes
the bytes. Every weight goes to the program's named data under the sha256
of its bytes (as ExecuTorch's Vulkan and XNNPACK delegates store them), so
the payload's own constant section stays empty.
"""

from __future__ import annotations

from typing import Any, Dict, List

from torch.export import ExportedProgram

from ...backend.backend_details import BackendDetails, CompileSpec, PreprocessResult
from ...errors import ExportError
from . import schema as vs
from .builder import emit, lower, plan_memory, tag_layouts
from .ops import DEFAULT_TEXTURE_LIMITS, SMALL_TEXTURE_LIMITS


def parse_compile_specs(specs: List[CompileSpec]) -> Dict[str, Any]:
    """The options a payload is built with, from the delegate's compile specs."""
    out: Dict[str, Any] = {}
    for s in specs:
        if s.key in ("texture_limits_x", "texture_limits_y", "texture_limits_z",
                     "storage_type_override", "memory_layout_override"):
            out[s.key] = int.from_bytes(s.value, "little")
        elif s.key in ("force_fp16", "small_texture_limits", "require_dynamic_shapes",
                       "skip_bool_tensors", "skip_tag_memory_metadata", "skip_memory_planning",
                       "downcast_64_bit"):
            out[s.key] = bool.from_bytes(s.value, "little")
    return out


class VulkanBackend(BackendDetails):
    """The payload ExecuTorch's and ember's VulkanBackend read (schema.py)."""

    @staticmethod
    def preprocess(edge_program: ExportedProgram,
                   compile_specs: List[CompileSpec]) -> PreprocessResult:
        opts = parse_compile_specs(compile_specs)
        base = SMALL_TEXTURE_LIMITS if opts.get("small_texture_limits") else DEFAULT_TEXTURE_LIMITS
        limits = tuple(opts.get(f"texture_limits_{a}", base[i]) for i, a in enumerate("xyz"))
        lw = lower(edge_program)
        fp16 = bool(opts.get("force_fp16", False))
        # storage_type_override / memory_layout_override change nothing here, as
        # in ExecuTorch's preprocess (the runtime stores every tensor in a buffer)
        if not opts.get("skip_tag_memory_metadata", False):
            tag_layouts(lw, limits, force_fp16=fp16)  # type: ignore[arg-type]
        em = emit(lw, force_fp16=fp16, downcast_64_bit=opts.get("downcast_64_bit", True))
        if not opts.get("skip_memory_planning", False):
            plan_memory(em)
        if not em.g.chain:
            raise ExportError("vulkan: the delegated subgraph computes nothing")
        return PreprocessResult(processed_bytes=vs.serialize_payload(em.g),
                                debug_handle_map=dict(em.debug_map),
                                named_data=dict(em.named_data))
