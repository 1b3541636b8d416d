"""nanoGPT for ember's Vulkan GPU delegate: the "seq" export (dynamic token
dimension up to block_size, math attention) lowered by ExecuTorch's own
VulkanPartitioner. The program runs in ember's VulkanBackend (ember-run,
ember-llm, ember.runtime) on any Vulkan device, Mesa's lavapipe included;
the few ops the partitioner leaves outside (scalar_tensor, mul.Scalar and
the causal mask's any) run on the portable kernels.

usage: python examples/nanogpt/export_nanogpt_vulkan.py [--checkpoint ckpt.pt] [--out FILE]
then:  ember-llm --model nanogpt_vulkan.pte --tokenizer examples/nanogpt/tokenizer \\
                 --prompt "It is a truth universally acknowledged" --temperature 0
"""

import argparse
import logging
import os
import sys
import warnings

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from model import GPT  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=os.path.join(HERE, "ckpt.pt"))
    ap.add_argument("--out", default="nanogpt_vulkan.pte")
    a = ap.parse_args()

    from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
    from executorch.exir import to_edge_transform_and_lower

    logging.disable(logging.INFO)
    warnings.filterwarnings("ignore")  # the exporter's deprecation notices
    model = GPT.from_checkpoint(a.checkpoint).eval()
    block = model.config.block_size
    example = (torch.randint(0, 100, (1, block), dtype=torch.long),)
    dynamic_shape = ({1: torch.export.Dim("token_dim", max=block)},)
    with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
        ep = torch.export.export(model, example, dynamic_shapes=dynamic_shape)
    program = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner({})]).to_executorch()
    with open(a.out, "wb") as f:
        f.write(program.buffer)
    print(f"export: wrote {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
