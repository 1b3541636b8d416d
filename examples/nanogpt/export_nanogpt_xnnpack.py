# export_nanogpt_xnnpack.py
#
# The second export script of ExecuTorch's LLM manual: nanoGPT delegated to
# the XNNPACK backend. Only its import lines differ from the manual's; they
# point at ember (docs/porting.md lists the mapping). The program it writes
# carries XnnpackBackend payloads in ExecuTorch's format, so it runs in
# ember (ember-run, ember-llm) and in ExecuTorch's runtime alike.
# GPT.from_pretrained reads GPT-2 weights only from the local directory named
# by EMBER_GPT2_DIR; nothing is downloaded.
#
# As in export_nanogpt.py, torch 2.13 has no export_for_training any more
# (torch.export.export returns the same training-IR program), so both trace
# steps call torch.export.export.

# Load partitioner for Xnnpack backend
from ember.backends.xnnpack import XnnpackPartitioner

# Model to be delegated to specific backend should use specific edge compile config
from ember.backends.xnnpack import get_xnnpack_edge_compile_config
from ember import EdgeCompileConfig, to_edge_transform_and_lower

import torch
from torch.export import export
from torch.nn.attention import sdpa_kernel, SDPBackend

from model import GPT

# Load the nanoGPT model.
model = GPT.from_pretrained('gpt2')

# Example inputs: only their shapes and dtypes matter to export.
example_inputs = (
        torch.randint(0, 100, (1, model.config.block_size - 1), dtype=torch.long),
    )

# The token dimension (dim 1 of input 0) may be anything up to
# block_size - 1 at run time.
dynamic_shape = (
    {1: torch.export.Dim("token_dim", max=model.config.block_size - 1)},
)

# Trace with the math attention backend and without autograd.
with torch.nn.attention.sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
    m = export(model, example_inputs, dynamic_shapes=dynamic_shape).module()
    traced_model = export(m, example_inputs, dynamic_shapes=dynamic_shape)

# The XNNPACK flow's edge configuration, then the partitioner delegates every
# subgraph the XNNPACK payload can express.
edge_config = get_xnnpack_edge_compile_config()
edge_manager = to_edge_transform_and_lower(traced_model, partitioner = [XnnpackPartitioner()], compile_config = edge_config)
et_program = edge_manager.to_executorch()

# Save the Xnnpack-delegated program to a file.
with open("nanogpt.pte", "wb") as file:
    file.write(et_program.buffer)
