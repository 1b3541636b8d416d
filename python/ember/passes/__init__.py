"""Graph passes, each a module of its own, imported from where it is used.

to_edge:
- noop: copies that return their input unchanged go away
- reinplace: mutating custom ops traced functionally (also run by to_executorch)
- debug_handles: a stable number per operator node

to_executorch:
- write_back: copy_ mutated buffers/inputs back (`aten::copy_`)
- spec_prop: a TensorSpec per tensor value
- quantized_embedding: embedding(dequantize(constant table)) -> embedding_byte/4bit/2bit
- views: reshapes as storage-sharing views (executorch_prim::et_view)
- out_variants: functional ops -> `.out` ops writing planned memory
- constant_folding: ops on constants computed at export time (optional)
"""
