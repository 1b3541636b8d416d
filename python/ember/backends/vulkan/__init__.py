"""The Vulkan GPU delegate, ahead of time (the runtime half: src/backends/vulkan).

    from ember import to_edge_transform_and_lower
    from ember.backends.vulkan import VulkanPartitioner

    edge = to_edge_transform_and_lower(torch.export.export(model, args),
                                       partitioner=[VulkanPartitioner({"force_fp16": True})])
    prog = edge.to_executorch()

The payload is ExecuTorch's Vulkan format (backend id "VulkanBackend"):
the same operator names and argument lists, so one runtime runs both
exporters' programs. See docs/vulkan.md.
"""

from .partitioner import OPTIONS, VulkanPartitioner
from .preprocess import VulkanBackend

__all__ = ["VulkanPartitioner", "VulkanBackend", "OPTIONS"]
