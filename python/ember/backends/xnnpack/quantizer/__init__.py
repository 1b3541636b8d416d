"""Quantization for the XNNPACK backend (pt2e, with torchao's prepare/convert).

ExecuTorch's `executorch.backends.xnnpack.quantizer.xnnpack_quantizer` names
are here, and in `ember.backends.xnnpack.quantizer.xnnpack_quantizer`.
"""

from torchao.quantization.pt2e.quantizer import QuantizationConfig

from ...transforms.duplicate_dynamic_quant_chain import DuplicateDynamicQuantChainPass
from .config import get_symmetric_quantization_config, get_weight_only_quantization_config
from .xnnpack_quantizer import XNNPACKQuantizer

__all__ = ["XNNPACKQuantizer", "DuplicateDynamicQuantChainPass", "get_symmetric_quantization_config",
           "get_weight_only_quantization_config", "QuantizationConfig"]
