"""Configuration of to_executorch (names follow ExecuTorch's; to_edge's,
EdgeCompileConfig, lives with it in `edge`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Dict, List, Optional, Sequence, Union

from .memory_planning import MemoryPlanningPass


@dataclass
class ExecutorchBackendConfig:
    # Extra torch.fx passes run on each method's graph before the lowering passes.
    passes: List[Callable] = field(default_factory=list)
    # One planner for all methods, or {method name: planner}.
    memory_planning_pass: Union[MemoryPlanningPass, Dict[str, MemoryPlanningPass]] = field(
        default_factory=MemoryPlanningPass)
    # One FrameList per instruction in Chain.stacktrace, from node.meta["stack_trace"].
    emit_stacktrace: bool = False
    # Delegate payloads go to segments (True) or inline in the flatbuffer (False).
    extract_delegate_segments: bool = True
    # Alignment of each segment in the file (a power of two).
    segment_alignment: int = 128
    # Alignment of each tensor inside the constant segment (default 16).
    constant_tensor_alignment: Optional[int] = None
    # Accepted for compatibility: delegate payloads start at segment_alignment.
    delegate_alignment: Optional[int] = None
    # Reshapes of planned memory become views (elided when static,
    # executorch_prim::et_view when dynamic) instead of view_copy kernels.
    remove_view_copy: bool = True
    # Write mutable buffers' fully qualified names into the program.
    emit_mutable_buffer_names: bool = False
    # Store the starting contents of mutated buffers in the program's mutable-data
    # segment: True for all, False for none, or a collection of buffer names.
    # (The reference exporter stores none unless a pass asks for it.)
    init_mutable_buffers: Union[bool, Collection[str]] = True
    # Compute ops whose inputs are all constants at export time (e.g. the
    # transpose of a Linear weight) and store their results as constants.
    fold_constants: bool = False
    # Rewrite embedding(dequantize_per_channel[_group](constant table), indices), as
    # pt2e quantization leaves an embedding, into one quantized_decomposed
    # embedding_byte / embedding_4bit / embedding_2bit lookup that dequantizes only
    # the rows it reads (passes.quantized_embedding). The reference exporter does
    # this under do_quant_fusion_and_const_prop; ember does it by default.
    fuse_quantized_embeddings: bool = True
    # Constant tensors (weights, buffers that are never written) kept outside the
    # program, in `.ptd` data files: True puts every one in
    # "_default_external_constant.ptd"; a function of the placeholder node puts
    # each in "<its result>.ptd", or in the program when it returns None. The
    # program names them (EXTERNAL tensors, by fully qualified name); see
    # ExecutorchProgramManager.data_files / write_tensor_data_to_file. Weights
    # of delegates go to a data file when the backend tags them (for XNNPACK:
    # ember.passes.external_constants.delegate_external_constants_pass_unlifted).
    # Data files align their segments to segment_alignment too.
    external_constants: Union[bool, Callable[[Any], Optional[str]]] = False
    # When set, every kernel the program calls must be in this collection
    # (names like "aten::add.out"); export fails naming missing ones and their source.
    available_kernels: Optional[Collection[str]] = None
    # Check at export that every operator left outside delegates has a kernel in
    # libember's registry (ember.runtime.has_kernel); export fails listing each
    # missing one with its source line. Turn off when targeting a runtime built
    # with extra (custom) kernels. Skipped, with a warning, when ember.runtime's
    # extension is not built. `available_kernels`, when set, replaces the registry.
    check_kernels: bool = True
    # Kernel libraries the target runtime registers beside libember's kernels
    # (custom operators): description files (.yaml / .json, see
    # ember.kernel_library) or KernelLibrary objects. Their kernels count as
    # present in the check above; each description must match the schema torch
    # registers for its operator.
    kernel_libraries: Sequence[Any] = ()
    # Accepted for API compatibility; ember always plans dynamic tensors at their upper bound.
    sym_shape_eval_pass: Any = None
    dynamic_memory_planning_mode: Any = None
    do_quant_fusion_and_const_prop: bool = False

    def planner_for(self, method: str) -> MemoryPlanningPass:
        p = self.memory_planning_pass
        if isinstance(p, dict):
            return p.get(method) or MemoryPlanningPass()
        return p
