"""Graph transforms for quantized models, before export to edge."""

from .duplicate_dynamic_quant_chain import DuplicateDynamicQuantChainPass

__all__ = ["DuplicateDynamicQuantChainPass"]
