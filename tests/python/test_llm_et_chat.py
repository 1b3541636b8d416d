"""ember-llm --chat on ExecuTorch's own LLM exports: a Llama 3-architecture
and a Qwen 3-architecture model written by ExecuTorch's export path
(`_export_llama`: KV cache, custom SDPA, dynamic shapes, XNNPACK), float32
and 8da4w, with random weights and tokenizers trained here from committed
text:

- Llama 3 (3.1's layout: grouped-query attention, rope theta 500,000 with
  the llama3 frequency scaling, Meta's interleaved rotary layout), a tiktoken
  tokenizer.model with Llama 3's pattern and 256 special tokens, and Llama
  3.1's chat template;
- Qwen 3 (q/k RMSNorm per head before the rotation, head_dim x heads wider
  than the model, tied embeddings, Hugging Face's rotary layout), a
  byte-level tokenizer.json with Qwen's pattern and NFC, and Qwen 3's chat
  template.

A three-turn conversation through `ember-llm --chat` (greedy) must print
the same replies as the reference, turn by turn, each turn rendered over the
whole conversation so far by transformers' apply_chat_template and encoded
by the reference tokenizer (tiktoken, tokenizers):

- float32: transformers' LlamaForCausalLM / Qwen3ForCausalLM built from the
  same config and weights, `generate` greedy;
- 8da4w (int8 dynamic activations, 4-bit weights in groups of 32): the
  reference is ExecuTorch's runtime greedy on the same file, since the
  quantized arithmetic is the file's, not transformers'; it keeps its cache
  across turns and runs each turn's new tokens, as ember-llm does.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest
import torch

from conftest import ROOT

pytest.importorskip("tokenizers")
pytest.importorskip("tiktoken")
transformers = pytest.importorskip("transformers")

from test_llm_tokenizers import (LLAMA3_PATTERN, LLAMA3_SPECIALS, SPECIALS,  # noqa: E402
                                 _bytelevel_bytes, make_llama3, make_qwen2)

TEMPLATES = Path(ROOT) / "tests" / "fixtures" / "llm" / "chat_templates"
CONTEXT = 512
NEW = 16
USERS = ["Hello! What is ember?", "How do I export a model to a .pte file?",
         "Thanks. And on a phone?"]


def _exe() -> str:
    env = os.environ.get("EMBER_LLM")
    if env:
        return env
    built = os.path.join(os.environ.get("EMBER_BUILD_DIR", os.path.join(ROOT, "build")), "ember-llm")
    return built if os.access(built, os.X_OK) else (shutil.which("ember-llm") or "")


EXE = _exe()
pytestmark = pytest.mark.skipif(not EXE, reason="ember-llm is not built")


sys.path.insert(0, os.path.join(ROOT, "bench", "llm"))
from et_llm_export import checkpoint_from_hf  # noqa: E402  (imports nothing of executorch)


def _et_export():
    try:
        from et_llm_export import export_executorch_checkpoint, load_runtime_ops

        load_runtime_ops()
    except Exception as e:  # noqa: BLE001 - executorch without its LLM export path
        pytest.skip(f"ExecuTorch's LLM export is not available: {e}")
    return export_executorch_checkpoint


class Family:
    """One model family: its tokenizer directory, reference encode/decode, the
    transformers model and ExecuTorch's params and checkpoint for it."""

    def __init__(self, name: str, tok_dir: Path, encode: Callable[[str], List[int]],
                 decode: Callable[[List[int]], str], hf_tok, stop: List[int], hf_model,
                 params: Dict, state: Dict, metadata: Dict) -> None:
        self.name, self.tok_dir, self.encode, self.decode = name, tok_dir, encode, decode
        self.hf_tok, self.stop, self.hf_model = hf_tok, stop, hf_model
        self.params, self.state, self.metadata = params, state, metadata

    def render(self, messages: List[dict]) -> str:
        return self.hf_tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def _randomize(model: torch.nn.Module, seed: int) -> None:
    """Matrices N(0, 0.2), norm weights 1 + N(0, 0.1): logits far apart
    enough that greedy choices are not near ties."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
            else:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))


def _fast_tokenizer(tok, template: str, bos: str, eos: str):
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos)
    fast.chat_template = template
    return fast


def make_llama3_family(tmp: Path) -> Family:
    import tiktoken
    from transformers import LlamaConfig, LlamaForCausalLM

    hf = make_llama3()
    vocab = hf.get_vocab(with_added_tokens=False)
    ordered = sorted((idx, tok) for tok, idx in vocab.items() if tok not in SPECIALS)
    ranks = {bytes(_bytelevel_bytes(tok)): r for r, (_, tok) in enumerate(ordered)}
    specials = {s: len(ranks) + i for i, s in enumerate(LLAMA3_SPECIALS)}
    enc = tiktoken.Encoding(name="llama3_chat", pat_str=LLAMA3_PATTERN, mergeable_ranks=ranks,
                            special_tokens=specials)
    template = (TEMPLATES / "llama3_1.jinja").read_text()
    tok_dir = tmp / "llama3_tokenizer"
    tok_dir.mkdir()
    (tok_dir / "tokenizer.model").write_text(
        "".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items()))
    (tok_dir / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "chat_template": template}))

    layers, heads, kv_heads = 2, 4, 2
    cfg = LlamaConfig(vocab_size=enc.n_vocab, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=kv_heads, rms_norm_eps=1e-5,
                      max_position_embeddings=CONTEXT, tie_word_embeddings=False,
                      bos_token_id=specials["<|begin_of_text|>"],
                      eos_token_id=specials["<|eot_id|>"],
                      rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192})
    model = LlamaForCausalLM(cfg).eval()
    _randomize(model, 11)
    params = dict(dim=64, n_layers=layers, n_heads=heads, n_kv_heads=kv_heads, hidden_dim=128,
                  vocab_size=enc.n_vocab, norm_eps=1e-5, rope_freq_base=500000.0,
                  use_scaled_rope=True, rope_scale_factor=8)
    stop = [specials[s] for s in ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>")]
    # the template writes <|begin_of_text|> for the bos_token: a fast tokenizer
    # over the trained vocabulary renders it (tiktoken encodes)
    fast = _fast_tokenizer(hf, template, "<|begin_of_text|>", "<|eot_id|>")
    return Family("llama3", tok_dir, lambda s: enc.encode(s, allowed_special="all"), enc.decode,
                  fast, stop, model, params,
                  checkpoint_from_hf(model.state_dict(), layers, heads, kv_heads, permute=True),
                  {"get_bos_id": specials["<|begin_of_text|>"], "get_eos_ids": stop})


def make_qwen3_family(tmp: Path) -> Family:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    hf = make_qwen2()
    template = (TEMPLATES / "qwen3.jinja").read_text()
    tok_dir = tmp / "qwen3_tokenizer"
    tok_dir.mkdir()
    hf.save(str(tok_dir / "tokenizer.json"))
    (tok_dir / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": None, "eos_token": "<|im_end|>", "chat_template": template}))
    fast = _fast_tokenizer(hf, template, None, "<|im_end|>")
    vocab = hf.get_vocab_size(with_added_tokens=True)

    layers, heads, kv_heads, head_dim = 2, 4, 2, 32
    cfg = Qwen3Config(vocab_size=vocab, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=kv_heads, head_dim=head_dim, rms_norm_eps=1e-6,
                      max_position_embeddings=CONTEXT, tie_word_embeddings=True,
                      rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                      eos_token_id=hf.token_to_id("<|im_end|>"))
    model = Qwen3ForCausalLM(cfg).eval()
    _randomize(model, 12)
    model.tie_weights()
    params = dict(dim=64, n_layers=layers, n_heads=heads, n_kv_heads=kv_heads, head_dim=head_dim,
                  hidden_dim=128, vocab_size=vocab, norm_eps=1e-6, rope_freq_base=1000000.0,
                  use_hf_rope=True, use_qk_norm=True, qk_norm_before_rope=True)
    stop = [hf.token_to_id(s) for s in ("<|im_end|>", "<|endoftext|>")]
    return Family("qwen3", tok_dir, lambda s: hf.encode(s, add_special_tokens=False).ids,
                  lambda ids: hf.decode(ids, skip_special_tokens=False), fast, stop, model, params,
                  checkpoint_from_hf(model.state_dict(), layers, heads, kv_heads, permute=False),
                  {"get_eos_ids": stop})


MAKERS = {"llama3": make_llama3_family, "qwen3": make_qwen3_family}


@pytest.fixture(scope="module", params=sorted(MAKERS))
def family(request, tmp_path_factory) -> Family:
    return MAKERS[request.param](tmp_path_factory.mktemp(request.param))


@pytest.fixture(scope="module")
def exports(family, tmp_path_factory) -> Dict[str, Path]:
    export = _et_export()
    out = tmp_path_factory.mktemp(f"{family.name}_pte")
    paths = {}
    for quant in ("fp32", "8da4w"):
        path = out / f"{family.name}_{quant}.pte"
        export(family.params, family.state, path, context=CONTEXT, metadata=family.metadata,
               qmode=None if quant == "fp32" else "8da4w", group_size=32)
        paths[quant] = path
    return paths


def ember_chat(pte: Path, tok_dir: Path) -> str:
    res = subprocess.run([EXE, "--model", str(pte), "--tokenizer", str(tok_dir), "--chat",
                          "--temperature", "0", "--max-new-tokens", str(NEW)],
                         input="".join(u + "\n" for u in USERS).encode(), capture_output=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr.decode()
    assert "error" not in res.stderr.decode()
    return res.stdout.decode()


def reference_chat(fam: Family, next_tokens: Callable[[List[int]], List[int]]) -> Tuple[str, List]:
    """The conversation as the reference holds it: each turn rendered whole,
    encoded, generated greedily up to NEW tokens or a stop token; the reply
    text goes back into the messages. Returns what ember-llm prints (each
    reply and a newline) and the generated ids per turn."""
    messages: List[dict] = []
    printed, turns = "", []
    for user in USERS:
        messages.append({"role": "user", "content": user})
        prompt = fam.encode(fam.render(messages))
        assert len(prompt) + NEW <= CONTEXT
        ids = next_tokens(prompt)
        turns.append(ids)
        reply = fam.decode(ids)
        printed += reply + "\n"
        messages.append({"role": "assistant", "content": reply})
    return printed, turns


def transformers_greedy(fam: Family) -> Callable[[List[int]], List[int]]:
    def run(prompt: List[int]) -> List[int]:
        with torch.no_grad():
            out = fam.hf_model.generate(torch.tensor([prompt]), max_new_tokens=NEW, do_sample=False,
                                        eos_token_id=fam.stop, pad_token_id=fam.stop[0])
        ids = out[0, len(prompt):].tolist()
        for k, t in enumerate(ids):
            if t in fam.stop:
                return ids[:k]
        return ids
    return run


def executorch_greedy(pte: Path, stop: List[int]) -> Callable[[List[int]], List[int]]:
    """Greedy decoding in ExecuTorch's runtime that keeps its cache across
    turns as a chat does: each turn runs only the tokens after the longest
    prefix the cache already holds. With dynamic int8 activations a value
    computed in another chunking can round the other way, so the reference
    runs the same chunks as ember-llm."""
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(str(pte)).load_method("forward")
    cache: List[int] = []  # the tokens whose keys and values the method holds

    def run(prompt: List[int]) -> List[int]:
        k = 0
        while k < min(len(cache), len(prompt) - 1) and cache[k] == prompt[k]:
            k += 1
        del cache[k:]
        pending, ids = list(prompt[k:]), []
        for _ in range(NEW):
            logits = method.execute([torch.tensor([pending]), torch.tensor([len(cache)])])[0]
            cache.extend(pending)
            t = int(logits.reshape(-1, logits.shape[-1])[-1].argmax())
            if t in stop:
                break
            ids.append(t)
            pending = [t]
        return ids
    return run


def test_float32_chat_matches_transformers(family, exports) -> None:
    want, turns = reference_chat(family, transformers_greedy(family))
    assert sum(len(t) for t in turns) >= 2 * NEW, turns  # replies long enough to compare
    got = ember_chat(exports["fp32"], family.tok_dir)
    assert got == want, f"{family.name}: ember {got!r}\ntransformers {want!r}"


def test_8da4w_chat_matches_executorch(family, exports) -> None:
    want, turns = reference_chat(family, executorch_greedy(exports["8da4w"], family.stop))
    assert sum(len(t) for t in turns) >= 2 * NEW, turns
    got = ember_chat(exports["8da4w"], family.tok_dir)
    assert got == want, f"{family.name}: ember {got!r}\nexecutorch {want!r}"
