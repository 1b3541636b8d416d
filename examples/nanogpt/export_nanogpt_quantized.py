# export_nanogpt_quantized.py
#
# The LLM manual's quantized export of nanoGPT: 8-bit dynamic quantization of
# the linear layers with the XNNPACK quantizer (pt2e: prepare, calibrate,
# convert), then the XNNPACK partitioner. Only its import lines differ from
# the manual's; they point at ember (docs/porting.md lists the mapping). The
# program carries quantized XnnpackBackend payloads in ExecuTorch's format,
# so it runs in ember (ember-run, ember-llm) and in ExecuTorch's runtime alike.
# GPT.from_pretrained reads GPT-2 weights only from the local directory named
# by EMBER_GPT2_DIR; nothing is downloaded.
#
# torch 2.13 has no export_for_training any more (torch.export.export returns
# the same training-IR program), so every trace step calls torch.export.export;
# pt2e's prepare/convert come from torchao, where they live now.

# Quantization: the XNNPACK quantizer and the pass that gives each dynamically
# quantized linear layer a quantize chain of its own
from ember.backends.transforms.duplicate_dynamic_quant_chain import (
    DuplicateDynamicQuantChainPass,
)
from ember.backends.xnnpack.quantizer.xnnpack_quantizer import (
    get_symmetric_quantization_config,
    XNNPACKQuantizer,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

# Lowering to the XNNPACK backend
from ember.backends.xnnpack import XnnpackPartitioner
from ember.backends.xnnpack import get_xnnpack_edge_compile_config
from ember import to_edge_transform_and_lower

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

# Per-channel int8 weights; activations quantized at run time (dynamic), so
# calibration only has to run the model once.
xnnpack_quant_config = get_symmetric_quantization_config(
    is_per_channel=True, is_dynamic=True
)
xnnpack_quantizer = XNNPACKQuantizer()
xnnpack_quantizer.set_global(xnnpack_quant_config)

with torch.nn.attention.sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
    m = export(model, example_inputs, dynamic_shapes=dynamic_shape).module()

    # Insert observers where the quantizer annotated the graph, calibrate with
    # the example, then replace the observers with quantize/dequantize pairs.
    m = prepare_pt2e(m, xnnpack_quantizer)
    m(*example_inputs)
    m = convert_pt2e(m, fold_quantize=False)
    DuplicateDynamicQuantChainPass()(m)

    traced_model = export(m, example_inputs, dynamic_shapes=dynamic_shape)

# Lower every quantized linear layer (and what else the payload can state) to
# the XNNPACK backend.
edge_config = get_xnnpack_edge_compile_config()
edge_manager = to_edge_transform_and_lower(traced_model, partitioner = [XnnpackPartitioner()], compile_config = edge_config)
et_program = edge_manager.to_executorch()

# Save the quantized, delegated program to a file.
with open("nanogpt.pte", "wb") as file:
    file.write(et_program.buffer)
