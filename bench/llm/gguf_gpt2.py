"""Writes a nanoGPT-layout GPT model as a GGUF file (architecture "gpt2", f32)
for the llama.cpp rows of the LLM benchmark, with the `gguf` package.

GGUF names the tensors of llama.cpp's GPT-2 graph; nanoGPT's modules map one
to one (its Linear weights are already (out, in), the layout GGUF keeps as
PyTorch arrays). The head is tied to the token embedding, so no `output`
tensor is written: llama.cpp then uses `token_embd` as the output matrix.
The vocabulary is the byte-level BPE one of the committed tokenizer (vocab.json
and merges.txt), padded to the model's size, so token ids mean the same in
every row.

usage (from bench_llm.py): write_gpt2_gguf(model, tokenizer_dir, path)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict


def _tensors(model: Any) -> Dict[str, Any]:
    """GGUF tensor name -> float32 numpy array."""
    sd = {k: v.detach().float().contiguous().numpy() for k, v in model.state_dict().items()}
    out = {
        "token_embd.weight": sd["transformer.wte.weight"],      # (vocab, n_embd)
        "position_embd.weight": sd["transformer.wpe.weight"],   # (block_size, n_embd)
        "output_norm.weight": sd["transformer.ln_f.weight"],
        "output_norm.bias": sd["transformer.ln_f.bias"],
    }
    for i in range(model.config.n_layer):
        h = f"transformer.h.{i}."
        b = f"blk.{i}."
        pairs = {"attn_norm": "ln_1", "attn_qkv": "attn.c_attn", "attn_output": "attn.c_proj",
                 "ffn_norm": "ln_2", "ffn_up": "mlp.c_fc", "ffn_down": "mlp.c_proj"}
        for gg, ours in pairs.items():
            out[b + gg + ".weight"] = sd[h + ours + ".weight"]
            out[b + gg + ".bias"] = sd[h + ours + ".bias"]
    return out


def write_gpt2_gguf(model: Any, tokenizer_dir: Path, path: Path) -> None:
    """Writes ``model`` (a nanoGPT GPT with biases and a tied head) to ``path``."""
    import gguf

    cfg = model.config
    if not cfg.bias:
        raise ValueError("llama.cpp's GPT-2 graph needs the biases (bias=True)")
    vocab = json.loads((Path(tokenizer_dir) / "vocab.json").read_text(encoding="utf-8"))
    if len(vocab) > cfg.vocab_size:
        raise ValueError(f"vocab.json has {len(vocab)} tokens, the model only {cfg.vocab_size}")
    # A tokenizer smaller than the model's vocabulary (the committed one has
    # 4096 tokens, GPT-2's embedding 50257 rows) gets unique placeholders,
    # marked unused, for the ids it never produces.
    tokens = [f"<|unused_{i}|>" for i in range(cfg.vocab_size)]
    for tok, idx in vocab.items():
        tokens[idx] = tok
    merges = [ln for ln in (Path(tokenizer_dir) / "merges.txt").read_text(encoding="utf-8")
              .splitlines() if ln and not ln.startswith("#version")]
    eot = vocab.get("<|endoftext|>", cfg.vocab_size - 1)
    types = [gguf.TokenType.NORMAL if i < len(vocab) else gguf.TokenType.UNUSED
             for i in range(len(tokens))]
    types[eot] = gguf.TokenType.CONTROL

    w = gguf.GGUFWriter(str(path), "gpt2")
    w.add_name("GPT-2 shaped benchmark model (random weights)")
    w.add_context_length(cfg.block_size)
    w.add_embedding_length(cfg.n_embd)
    w.add_feed_forward_length(4 * cfg.n_embd)
    w.add_block_count(cfg.n_layer)
    w.add_head_count(cfg.n_head)
    w.add_layer_norm_eps(1e-5)  # torch.nn.functional.layer_norm's default, as model.py uses
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)
    for name, arr in _tensors(model).items():
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
