"""Graph passes of the execution lowering (to_executorch).

- write_back: copy_ mutated buffers/inputs back (`aten::copy_`)
- spec_prop: a TensorSpec per tensor value
- views: reshapes as storage-sharing views (executorch_prim::et_view)
- out_variants: functional ops -> `.out` ops writing planned memory
- constant_folding: ops on constants computed at export time (optional)
"""

from .out_variants import out_variant, to_out_variants
from .spec_prop import propagate_specs
from .views import replace_view_copy_with_view
from .write_back import insert_write_back

__all__ = ["out_variant", "to_out_variants", "propagate_specs", "replace_view_copy_with_view",
           "insert_write_back"]
