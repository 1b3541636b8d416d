"""ember: export PyTorch models to ExecuTorch-compatible `.pte` programs.

    import torch
    from ember import to_edge, ExecutorchBackendConfig

    ep = torch.export.export(model, example_inputs)
    prog = to_edge(ep).to_executorch(ExecutorchBackendConfig())
    with open("model.pte", "wb") as f:
        prog.write_to_file(f)
"""

# Out variants of the quantized_decomposed ops (pt2e-quantized models).
from . import quantized_ops as _quantized_ops  # noqa: F401
from .config import ExecutorchBackendConfig
from .edge import EdgeCompileConfig
from .errors import ExportError, IRValidityError
from .kernel_library import KernelLibrary
from .memory_planning import MemoryPlan, MemoryPlanningPass
from .program import (
    EdgeProgramManager,
    ExecutorchProgramManager,
    to_edge,
    to_edge_transform_and_lower,
)

__all__ = [
    "to_edge",
    "to_edge_transform_and_lower",
    "EdgeCompileConfig",
    "ExecutorchBackendConfig",
    "EdgeProgramManager",
    "ExecutorchProgramManager",
    "MemoryPlanningPass",
    "MemoryPlan",
    "ExportError",
    "IRValidityError",
    "KernelLibrary",
]

__version__ = "0.1.0"
