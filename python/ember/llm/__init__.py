"""Language-model support: custom operators (fused attention with a KV cache).

- `ember.llm.custom_ops` (imported here): ember::sdpa_with_kv_cache;
- `ember.llm.llama_ops` (import it to use them): ExecuTorch's llama::custom_sdpa,
  sdpa_with_kv_cache, update_cache and update_cache_with_indices, from the
  executorch package's own library when it is installed, else defined by ember.
"""

from . import custom_ops  # noqa: F401  (registers the ember:: ops with torch)
