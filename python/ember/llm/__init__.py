"""Language-model support: custom operators (fused attention with a KV cache)."""

from . import custom_ops  # noqa: F401  (registers the ember:: ops with torch)
