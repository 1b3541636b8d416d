# export_nanogpt.py
#
# ExecuTorch's LLM manual exports nanoGPT with a short script; this is that
# script with its imports pointed at ember, to show that such scripts port
# unchanged otherwise. GPT.from_pretrained reads GPT-2 weights only from the
# local directory named by EMBER_GPT2_DIR; nothing is downloaded.
#
# The manual traces twice: torch.export.export_for_training, then
# torch.export.export on the resulting module. torch 2.13 has no
# export_for_training any more (torch.export.export now returns the same
# training-IR program), so both steps call torch.export.export here.

import torch

from ember import EdgeCompileConfig, to_edge
from torch.nn.attention import sdpa_kernel, SDPBackend
from torch.export import export

from model import GPT

# GPT-2 124M.
model = GPT.from_pretrained('gpt2')

# A full-length example input; only its shape and dtype matter to export.
example_inputs = (torch.randint(0, 100, (1, model.config.block_size), dtype=torch.long), )

# The token dimension (dim 1 of input 0) may be anything up to block_size at run time.
dynamic_shape = (
    {1: torch.export.Dim("token_dim", max=model.config.block_size)},
)

# Trace with the math attention backend (it decomposes into plain ops) and
# without autograd.
with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
    m = export(model, example_inputs, dynamic_shapes=dynamic_shape).module()
    traced_model = export(m, example_inputs, dynamic_shapes=dynamic_shape)

# Edge dialect, then the executable program.
edge_config = EdgeCompileConfig(_check_ir_validity=False)
edge_manager = to_edge(traced_model, compile_config=edge_config)
et_program = edge_manager.to_executorch()

with open("nanogpt.pte", "wb") as file:
    file.write(et_program.buffer)
