"""VulkanPartitioner: the subgraphs the Vulkan payload can run.

Each call_function node is checked against ops.py (its operator, the dtypes
of its tensors, their rank, the op's own argument checks, and whether every
non-constant tensor fits a texture or buffer under the device limits the
compile options give); torch's capability-based partitioner groups the nodes
that pass into connected, acyclic subgraphs, one VulkanBackend delegate
each, and the weights only a delegate reads move into it. A transposed
weight that feeds a matrix product goes with it (the payload reads it as a
linear's weight). `reasons` tells, after partition(), why each node left
outside stayed there.

Compile options (all optional):
    texture_limits          (x, y, z) largest 3-d texture extents, default (16384, 16384, 2048)
    small_texture_limits    True: (2048, 2048, 2048), what the Vulkan spec guarantees
    buffer_limit            most elements of a buffer-backed tensor, default 128 Mi
    force_fp16              store float32 tensors as float16 on the GPU (constants converted)
    require_dynamic_shapes  only ops that can resize at run time
    skip_bool_tensors       leave ops with bool tensors on the portable path
    storage_type_override   a storage type (0 buffer, 1 3-d texture, 2 2-d texture), passed
                            on as ExecuTorch passes it (its preprocess does not use it)
    memory_layout_override  a memory layout (0 width, 1 height, 2 channels packed), the same
    skip_tag_memory_metadata  tag no storage types or layouts (every tensor DEFAULT, no
                            transition copies)
    skip_memory_planning    no shared memory objects (every tensor its own, mem_obj_id -1)
    downcast_64_bit         int64 / float64 tensors stored as int32 / float32 (default True)

nn_module_blocklist / nn_module_allowlist (constructor arguments, as
ExecuTorch's): nodes whose nn_module_stack names a module type containing one
of the strings are left out / are the only ones delegated.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import torch
from torch.export import ExportedProgram
from torch.fx import Node

from ...backend.backend_details import CompileSpec
from ...backend.partitioner import (TAG, DelegationSpec, Partitioner, PartitionResult,
                                    tag_constant_data)
from ...errors import ExportError
from ...tensor_spec import upper_bound
from . import q4
from .kv_cache import own_kv_caches
from .ops import (DEFAULT_BUFFER_LIMIT, DEFAULT_TEXTURE_LIMITS, KEEP_WHOLE, SMALL_TEXTURE_LIMITS,
                  fit_pairs, out_tensors, pairs_of, spec_of, val)
from .rope import apply_rotary_emb, find_rope

aten = torch.ops.aten

OPTIONS = ("texture_limits", "small_texture_limits", "buffer_limit", "force_fp16",
           "require_dynamic_shapes", "skip_bool_tensors", "storage_type_override",
           "memory_layout_override", "skip_tag_memory_metadata", "skip_memory_planning",
           "downcast_64_bit")
# The values each override may take (VkStorageType, VkMemoryLayout's float layouts).
_OVERRIDES = {"storage_type_override": (0, 1, 2), "memory_layout_override": (0, 1, 2)}
_SUPPORTED_DTYPES = {torch.float32, torch.float16, torch.int32, torch.int64, torch.bool,
                     torch.int8, torch.uint8}


def check_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """The compile options, validated; raises ExportError naming a bad one."""
    for k, v in options.items():
        if k not in OPTIONS:
            raise ExportError(f"VulkanPartitioner: unknown compile option {k!r}; "
                              f"the options are {', '.join(OPTIONS)}")
        if k == "texture_limits":
            if not (isinstance(v, (tuple, list)) and len(v) == 3 and
                    all(isinstance(x, int) and not isinstance(x, bool) and 0 < x < 2 ** 31
                        for x in v)):
                raise ExportError(f"VulkanPartitioner: texture_limits must be 3 positive ints "
                                  f"(x, y, z), got {v!r}")
        elif k in _OVERRIDES:
            if isinstance(v, bool) or not isinstance(v, int) or int(v) not in _OVERRIDES[k]:
                raise ExportError(f"VulkanPartitioner: {k} must be one of "
                                  f"{', '.join(map(str, _OVERRIDES[k]))}, got {v!r}")
        elif k == "buffer_limit":
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ExportError(f"VulkanPartitioner: buffer_limit must be a positive int, "
                                  f"got {v!r}")
        elif not isinstance(v, bool):
            raise ExportError(f"VulkanPartitioner: {k} must be True or False, got {v!r}")
    return dict(options)


def compile_specs(options: Dict[str, Any]) -> List[CompileSpec]:
    """The options the backend reads, encoded as ExecuTorch's VulkanPartitioner does."""
    specs = []
    for k, v in options.items():
        if k in _OVERRIDES:
            specs.append(CompileSpec(k, int(v).to_bytes(4, "little")))
        elif isinstance(v, bool):
            specs.append(CompileSpec(k, v.to_bytes(1, "little")))
        elif k == "texture_limits":
            for axis, x in zip("xyz", v):
                specs.append(CompileSpec(f"texture_limits_{axis}", int(x).to_bytes(4, "little")))
    return specs


def texture_limits_of(options: Dict[str, Any]) -> Tuple[int, int, int]:
    if "texture_limits" in options:
        return tuple(options["texture_limits"])  # type: ignore[return-value]
    return SMALL_TEXTURE_LIMITS if options.get("small_texture_limits") else DEFAULT_TEXTURE_LIMITS


def _shape(t: torch.Tensor) -> List[int]:
    return [upper_bound(s) for s in t.shape]


def _from_module(node: Node, names: set) -> bool:
    """Whether a module type in node's nn_module_stack contains one of names."""
    stack = node.meta.get("nn_module_stack") or {}
    return any(name in str(typename) for _, typename in stack.values() for name in names)


class VulkanSupport:
    """Per-node decision: None if the node can run in the Vulkan payload, else why not."""

    def __init__(self, ep: ExportedProgram, options: Dict[str, Any],
                 blocklist: Optional[set] = None, allowlist: Optional[set] = None,
                 module_blocklist: Optional[set] = None,
                 module_allowlist: Optional[set] = None) -> None:
        self.ep = ep
        self.module_blocklist = module_blocklist
        self.module_allowlist = module_allowlist
        self.blocklist = blocklist or set()
        self.allowlist = allowlist
        self.limits = texture_limits_of(options)
        self.buffer_limit = options.get("buffer_limit", DEFAULT_BUFFER_LIMIT)
        self.dynamic = bool(options.get("require_dynamic_shapes", False))
        self.skip_bool = bool(options.get("skip_bool_tensors", False))
        sig = ep.graph_signature
        self.constants = (set(sig.inputs_to_parameters) | set(sig.inputs_to_buffers)
                          | set(sig.inputs_to_lifted_tensor_constants))
        # nodes of llama's rope subgraph, which preprocess fuses (rope.py)
        self.rope: Set[Node] = set()
        if apply_rotary_emb not in self.blocklist and (
                self.allowlist is None or apply_rotary_emb in self.allowlist):
            for m in find_rope(ep.graph):
                self.rope |= m.nodes

    def is_const(self, a: Any) -> bool:
        return isinstance(a, Node) and a.op == "placeholder" and a.name in self.constants

    def reason(self, node: Node) -> Optional[str]:
        if node.op != "call_function":
            return "not an operator call"
        if self.module_allowlist is not None and not _from_module(node, self.module_allowlist):
            return "its nn.Module is not in the nn_module allowlist"
        if self.module_blocklist is not None and _from_module(node, self.module_blocklist):
            return "its nn.Module is in the nn_module blocklist"
        t = node.target
        if node in self.rope:
            return None
        if t is q4.dequantize_affine() and t is not None:
            m = q4.match(node, lambda c: q4.constant_of(self.ep, c))
            if m is None:
                return ("not the 4-bit groupwise weight of a linear (int8 in [-8, 7], groups "
                        "along K, K a multiple of 4, no zero points)")
            why = self.reason(m.product)
            return None if why is None else f"the linear it feeds stays out ({why})"
        if t in (aten.permute_copy.default, aten.t_copy.default) and len(node.users) == 1:
            user = next(iter(node.users))
            if user.target in (aten.mm.default, aten.addmm.default) and user.args[-1] is node:
                why = self.reason(user)
                return None if why is None else f"the matrix product it feeds stays out ({why})"
        if t in self.blocklist:
            return "op is in the operator blocklist"
        if self.allowlist is not None and t not in self.allowlist and \
                isinstance(t, torch._ops.OpOverload) and t is not aten.sym_size.int:
            return "op is not in the operator allowlist"
        spec = spec_of(t)
        if spec is None:
            return "no Vulkan implementation"
        ins = [a for a in node.all_input_nodes if isinstance(val(a), torch.Tensor)]
        outs = out_tensors(node)
        every = [val(a) for a in ins] + outs
        for v in every:
            if v.dtype not in _SUPPORTED_DTYPES:
                return f"dtype {v.dtype} is not supported"
        if self.skip_bool and any(v.dtype == torch.bool for v in every):
            return "bool tensors are skipped (skip_bool_tensors)"
        if t is not aten.sym_size.int and t.__class__.__name__ != "builtin_function_or_method":
            for v in [val(a) for a in ins]:
                if v.dtype not in spec.dtypes:
                    return f"input dtype {v.dtype} is not supported by this op"
            out_ok = spec.out_dtypes or spec.dtypes
            for v in outs:
                if v.dtype not in out_ok:
                    return f"output dtype {v.dtype} is not supported by this op"
        if not spec.highdim and any(v.dim() > 4 for v in every):
            return "tensors of more than 4 dims are not supported by this op"
        if self.dynamic and not spec.resize:
            return "the op cannot resize (require_dynamic_shapes)"
        if spec.check is not None:
            why = spec.check(node)
            if why is not None:
                return why
        # one representation for all the op's tensors (a convolution's weights
        # excepted), as the payload's layout tagging chooses it
        conv = t is aten.convolution.default
        shapes = [_shape(val(a)) for a in ins if not (conv and self.is_const(a))]
        shapes += [_shape(v) for v in outs]
        if not fit_pairs(pairs_of(spec, node), shapes, self.limits, self.buffer_limit):
            return (f"its tensors {shapes} fit no texture {self.limits} or buffer the op "
                    "takes")
        return None


class VulkanPartitioner(Partitioner):
    """Delegates every subgraph VulkanBackend can run (see the module docstring)."""

    def __init__(self, compile_options: Optional[Dict[str, Any]] = None,
                 operator_blocklist: Optional[List[Any]] = None,
                 operator_allowlist: Optional[List[Any]] = None,
                 nn_module_blocklist: Optional[List[str]] = None,
                 nn_module_allowlist: Optional[List[str]] = None) -> None:
        """compile_options: see the module docstring. operator_blocklist: ops
        (OpOverloads) never delegated; operator_allowlist: if given, the only
        ops delegated (as ExecuTorch's VulkanPartitioner takes them);
        nn_module_blocklist / nn_module_allowlist: module type names (parts
        of them) whose nodes are never / the only ones delegated."""
        self.options = check_options(dict(compile_options or {}))
        self.spec = DelegationSpec("VulkanBackend", compile_specs(self.options))
        self.reasons: Dict[str, str] = {}
        self.blocklist = set(operator_blocklist or [])
        self.allowlist = None if operator_allowlist is None else set(operator_allowlist)
        self.module_blocklist = None if nn_module_blocklist is None else set(nn_module_blocklist)
        self.module_allowlist = None if nn_module_allowlist is None else set(nn_module_allowlist)

    def _support(self, ep: ExportedProgram) -> "VulkanSupport":
        return VulkanSupport(ep, self.options, self.blocklist, self.allowlist,
                             self.module_blocklist, self.module_allowlist)

    def ops_to_not_decompose(
        self, ep: ExportedProgram
    ) -> Tuple[List[torch._ops.OpOverload], Optional[Callable[[Node], bool]]]:
        support = self._support(ep)

        def keep(node: Node) -> bool:
            return support.reason(node) is None

        dq = q4.dequantize_affine()  # kept whole where it is a 4-bit linear's weight
        return list(KEEP_WHOLE) + ([dq] if dq is not None else []), keep

    def decisions(self, ep: ExportedProgram) -> Dict[str, Optional[str]]:
        """node name -> None (delegated) or why not, for every call_function node."""
        support = self._support(ep)
        return {n.name: support.reason(n) for n in ep.graph.nodes if n.op == "call_function"}

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
        from torch.fx.passes.operator_support import OperatorSupportBase

        # attention with a KV cache keeps its caches on the GPU (kv_cache.py)
        ep = own_kv_caches(exported_program, keep=lambda n: val(n.kwargs["q"]).dtype in
                           (torch.float32, torch.float16))
        support = self._support(ep)
        reasons = self.reasons
        reasons.clear()
        from .kv_cache import sdpa_with_kv_cache

        for n in ep.graph.nodes:
            if n.op == "call_function" and n.target is sdpa_with_kv_cache:
                why = support.reason(n)
                if why is not None:
                    raise ExportError(f"VulkanPartitioner: attention with a KV cache ({n.name}) "
                                      f"cannot run in the Vulkan delegate: {why}; export it "
                                      "for the portable or xnnpack backend instead")

        class _Support(OperatorSupportBase):
            def is_node_supported(self, submodules, node: Node) -> bool:  # noqa: ARG002
                if node.op != "call_function":
                    return False
                why = support.reason(node)
                if why is not None:
                    reasons[node.name] = why
                return why is None

        parts = CapabilityBasedPartitioner(ep.graph_module, _Support(),
                                           allows_single_node_partition=True).propose_partitions()
        tags: Dict[str, DelegationSpec] = {}
        for p in parts:
            # nothing but getitems and symbolic sizes computes nothing on the GPU
            if all(n.target.__class__.__name__ == "builtin_function_or_method" or
                   n.target is aten.sym_size.int for n in p.nodes):
                continue
            tag = f"vulkan_{p.id}"
            for n in p.nodes:
                n.meta[TAG] = tag
            tags[tag] = self.spec
        tag_constant_data(ep)
        return PartitionResult(ep, tags)


__all__ = ["VulkanPartitioner", "VulkanSupport", "check_options", "compile_specs", "OPTIONS"]
