"""The XNNPACK delegate, ahead of time (the runtime half: src/backends/xnnpack).

    from ember import to_edge_transform_and_lower
    from ember.backends.xnnpack import XnnpackPartitioner

    edge = to_edge_transform_and_lower(torch.export.export(model, args),
                                       partitioner=[XnnpackPartitioner()])
    prog = edge.to_executorch()

The payload is ExecuTorch's format, so the same .pte runs in ExecuTorch's
runtime with XNNPACK, and ExecuTorch's XNNPACK programs run in ember.
Quantized models (pt2e with ember.backends.xnnpack.quantizer, or torchao's
8-bit-activation 4-bit-weight linears) lower to XNNPACK's quantized values:
see docs/quantization.md.
"""

from ...edge import EdgeCompileConfig
from .partitioner import XnnpackPartitioner
from .preprocess import XnnpackBackend


def get_xnnpack_edge_compile_config(skip_dim_order: bool = False) -> EdgeCompileConfig:
    """The edge configuration ExecuTorch's XNNPACK flow uses (IR checks on)."""
    return EdgeCompileConfig(_check_ir_validity=True, _skip_dim_order=skip_dim_order)


__all__ = ["XnnpackPartitioner", "XnnpackBackend", "get_xnnpack_edge_compile_config"]
