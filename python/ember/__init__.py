"""ember: export PyTorch models to ExecuTorch-compatible `.pte` programs.

    import torch
    from ember import to_edge, ExecutorchBackendConfig

    ep = torch.export.export(model, example_inputs)
    prog = to_edge(ep).to_executorch(ExecutorchBackendConfig())
    with open("model.pte", "wb") as f:
        prog.write_to_file(f)
"""

import logging as _logging


def _quiet_import_noise() -> None:
    """torchao logs a warning for each optional CUDA extension a CPU-only
    torch cannot load, and torch's pytree a deprecation for each enum torchao
    registers; neither concerns ember's users. Those two loggers are raised
    to ERROR unless the application has set their levels itself."""
    for name in ("torchao", "torch.utils._pytree"):
        logger = _logging.getLogger(name)
        if logger.level == _logging.NOTSET:
            logger.setLevel(_logging.ERROR)


_quiet_import_noise()

# Out variants of the quantized_decomposed ops (pt2e-quantized models).
from . import quantized_ops as _quantized_ops  # noqa: E402,F401
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
