"""ember-llm's chat: the model's chat template (SmolLM2's, in a
tokenizer_config.json beside a byte-level BPE trained here), multi-turn
conversations whose turns run only their new tokens through the program's
KV cache yet reply exactly as eager PyTorch does on the whole rendered
conversation, the end-of-turn token stopping generation, the context
filling up (oldest messages dropped with a note, never an error), and the
one-shot --prompt with and without the template.

The same through the Python bindings (ember.llm.runtime): tokenizer, generation
against eager greedy, chat turns and a message list equal to the CLI's.

The model is a small random nanoGPT (examples/nanogpt) exported with its KV
cache; <|im_end|> and <|endoftext|> get a zero output row, so greedy replies
run their full length, except in the model made to stop at once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import pytest
import torch

from conftest import ROOT

tokenizers = pytest.importorskip("tokenizers")
jinja2 = pytest.importorskip("jinja2")

NANOGPT_DIR = os.path.join(ROOT, "examples", "nanogpt")
TEMPLATE = (Path(ROOT) / "tests" / "fixtures" / "llm" / "chat_templates" / "smollm2.jinja").read_text()
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
BLOCK = 160
NEW = 6


def _exe() -> Optional[str]:
    env = os.environ.get("EMBER_LLM")
    if env:
        return env
    built = os.path.join(os.environ.get("EMBER_BUILD_DIR", os.path.join(ROOT, "build")), "ember-llm")
    return built if os.access(built, os.X_OK) else shutil.which("ember-llm")


EXE = _exe()
pytestmark = pytest.mark.skipif(EXE is None, reason="ember-llm is not built")


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory) -> str:
    """GPT-2's two files, and tokenizer_config.json with SmolLM2's template."""
    import importlib
    import pydoc

    from tokenizers import ByteLevelBPETokenizer

    docs = [pydoc.getdoc(importlib.import_module(m)) for m in ("json", "argparse", "textwrap")]
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(docs, vocab_size=500, min_frequency=2, special_tokens=SPECIALS,
                            show_progress=False)
    out = tmp_path_factory.mktemp("chat_tokenizer")
    tok.save_model(str(out))
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": None, "eos_token": "<|im_end|>", "chat_template": TEMPLATE}))
    return str(out)


def _nanogpt():
    if NANOGPT_DIR not in sys.path:
        sys.path.insert(0, NANOGPT_DIR)
    import kv_cache  # examples/nanogpt/kv_cache.py
    import model  # examples/nanogpt/model.py

    return model, kv_cache


def _ids(tok_dir: str) -> dict:
    vocab = json.loads((Path(tok_dir) / "vocab.json").read_text())
    return {s: vocab[s] for s in SPECIALS}


def _export(m, tmp_path_factory, name: str) -> str:
    _, kv_cache = _nanogpt()
    path = tmp_path_factory.mktemp(name) / f"{name}.pte"
    path.write_bytes(kv_cache.export_kv(m).buffer)
    return str(path)


@pytest.fixture(scope="module")
def gpt(tok_dir):
    model, _ = _nanogpt()
    torch.manual_seed(0)
    vocab = len(json.loads((Path(tok_dir) / "vocab.json").read_text()))
    cfg = model.GPTConfig(block_size=BLOCK, vocab_size=vocab, n_layer=2, n_head=2, n_embd=32,
                          bias=True)
    m = model.GPT(cfg).eval()
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.3)
        for tid in _ids(tok_dir).values():
            m.lm_head.weight[tid] = 0.0  # their logits stay 0, below the best
    return m


@pytest.fixture(scope="module")
def kv_pte(gpt, tmp_path_factory) -> str:
    return _export(gpt, tmp_path_factory, "chat")


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([EXE, *args], input=stdin.encode(), capture_output=True, timeout=120)


def render(messages: List[dict]) -> str:
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(TEMPLATE).render(messages=messages, add_generation_prompt=True,
                                            eos_token="<|im_end|>")


def encode(tok_dir: str, text: str) -> List[int]:
    res = run("--tokenizer", tok_dir, "--encode", "-", stdin=text)
    assert res.returncode == 0, res.stderr.decode()
    return [int(x) for x in res.stdout.split()]


def decode(tok_dir: str, ids: List[int]) -> str:
    res = run("--tokenizer", tok_dir, "--decode", " ".join(map(str, ids)))
    assert res.returncode == 0, res.stderr.decode()
    return res.stdout.decode()


@torch.no_grad()
def eager_greedy(m, prompt: List[int], n: int, stop: List[int]) -> List[int]:
    seq = list(prompt)
    out: List[int] = []
    for _ in range(n):
        logits, _ = m(torch.tensor([seq[-BLOCK:]]))
        t = int(torch.argmax(logits[0, -1]))
        if t in stop:
            break
        seq.append(t)
        out.append(t)
    return out


def chat(pte: str, tok_dir: str, lines: List[str], *flags: str):
    res = run("--model", pte, "--tokenizer", tok_dir, "--chat", "--temperature", "0",
              "--max-new-tokens", str(NEW), "--stats", *flags, stdin="".join(l + "\n" for l in lines))
    assert res.returncode == 0, res.stderr.decode()
    replies = res.stdout.decode().split("\n")[:-1]
    prompt_tokens = [int(x) for x in re.findall(r"prompt tokens:\s+(\d+)", res.stderr.decode())]
    return replies, prompt_tokens, res.stderr.decode()


def test_turns_reuse_the_cache_and_match_eager(gpt, kv_pte, tok_dir) -> None:
    """Each turn runs only its new tokens, and every reply equals eager
    greedy decoding of the whole conversation rendered by jinja2."""
    users = ["Hello there, how are you?", "Tell me about JSON.", "And argparse?"]
    replies, prompt_tokens, _ = chat(kv_pte, tok_dir, users)
    assert len(replies) == 3 and len(prompt_tokens) == 3
    messages: List[dict] = []
    stop = list(_ids(tok_dir).values())
    for k, user in enumerate(users):
        messages.append({"role": "user", "content": user})
        ids = encode(tok_dir, render(messages))
        want = decode(tok_dir, eager_greedy(gpt, ids, NEW, stop))
        assert replies[k] == want, f"turn {k}: ember {replies[k]!r}, eager {want!r}"
        if k == 0:
            assert prompt_tokens[0] == len(ids)
        else:
            assert prompt_tokens[k] < len(ids) // 2, (prompt_tokens, len(ids))
        messages.append({"role": "assistant", "content": replies[k]})


def test_full_context_drops_the_oldest_messages(kv_pte, tok_dir) -> None:
    long = "the quick brown fox jumps over the lazy dog " * 6
    replies, _, err = chat(kv_pte, tok_dir, [f"{long} {k}" for k in range(8)])
    assert len(replies) == 8
    assert "ember-llm: note: the context is full" in err, err
    assert "error" not in err


def test_system_prompt_and_one_shot(kv_pte, tok_dir, gpt) -> None:
    # a system prompt replaces the template's default one
    replies, prompt_tokens, _ = chat(kv_pte, tok_dir, ["Hi"], "--system", "Be brief.")
    ids = encode(tok_dir, render([{"role": "system", "content": "Be brief."},
                                  {"role": "user", "content": "Hi"}]))
    assert prompt_tokens == [len(ids)]
    # --prompt applies the template and prints only the reply, as a chat of
    # one message does; --raw prints the prompt and goes on from it
    plain, _, _ = chat(kv_pte, tok_dir, ["Hi"])
    res = run("--model", kv_pte, "--tokenizer", tok_dir, "--prompt", "Hi", "--temperature", "0",
              "--max-new-tokens", str(NEW))
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.decode() == plain[0] + "\n"
    raw = run("--model", kv_pte, "--tokenizer", tok_dir, "--prompt", "Hi", "--raw",
              "--temperature", "0", "--max-new-tokens", str(NEW))
    assert raw.returncode == 0 and raw.stdout.decode().startswith("Hi"), raw.stderr.decode()


def test_end_of_turn_stops(gpt, tok_dir, tmp_path_factory) -> None:
    """A model whose best token is always <|im_end|>: every reply is empty."""
    import copy

    m = copy.deepcopy(gpt)
    with torch.no_grad():
        # a constant final hidden state e_0, whose logit is largest for <|im_end|>
        m.transformer.ln_f.weight.zero_()
        m.transformer.ln_f.bias.zero_()
        m.transformer.ln_f.bias[0] = 1.0
        m.lm_head.weight[:, 0] = 0.0
        m.lm_head.weight[_ids(tok_dir)["<|im_end|>"], 0] = 5.0
    pte = _export(m, tmp_path_factory, "stops")
    res = run("--model", pte, "--tokenizer", tok_dir, "--chat", "--stats", "--temperature", "0",
              stdin="Hi\nAgain\n")
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.decode() == "\n\n"
    assert re.findall(r"generated tokens:\s+(\d+)", res.stderr.decode()) == ["0", "0"]


def test_bad_template_is_a_clean_error(kv_pte, tok_dir, tmp_path) -> None:
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(Path(tok_dir) / name, tmp_path / name)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{% for x in %}"}))
    res = run("--model", kv_pte, "--tokenizer", str(tmp_path), "--chat", stdin="Hi\n")
    err = res.stderr.decode()
    assert res.returncode == 1 and err.startswith("ember-llm: error: ") and "chat template" in err, err


# ---------------------------------------------------------------------------
# The same through the Python bindings (ember.llm.runtime)
# ---------------------------------------------------------------------------

def _bindings():
    try:
        from ember.llm import runtime as llm_runtime
    except ImportError as e:  # the package was built without ember._llm
        pytest.skip(f"ember.llm.runtime: {e}")
    return llm_runtime


def test_bindings_tokenizer_and_generation(gpt, kv_pte, tok_dir) -> None:
    rt = _bindings()
    tok = rt.Tokenizer(tok_dir)
    text = "Hello <|im_start|>user\nthere<|im_end|>"
    assert tok.encode(text) == encode(tok_dir, text)
    assert tok.decode(tok.encode(text)) == text
    assert tok.format == "gpt2" and tok.chat_template == TEMPLATE
    assert tok.token_id("<|im_end|>") in tok.eos_ids
    assert tok.token_id("no such token") is None
    llm = rt.LLM(kv_pte, tok_dir, threads=1)
    pieces: List[str] = []
    out = llm.generate("Hello", max_new_tokens=NEW, temperature=0,
                       on_token=lambda t, s: pieces.append(s))
    assert out == "".join(pieces) and out
    stop = list(_ids(tok_dir).values())
    assert out == decode(tok_dir, eager_greedy(gpt, llm.encode("Hello"), NEW, stop))


def test_bindings_chat(kv_pte, tok_dir) -> None:
    rt = _bindings()
    llm = rt.LLM(kv_pte, tok_dir, threads=1)
    users = ["Hello there, how are you?", "Tell me about JSON."]
    replies, _, _ = chat(kv_pte, tok_dir, users)
    c = llm.start_chat()
    assert [c.send(u, max_new_tokens=NEW, temperature=0) for u in users] == replies
    assert c.messages == 4
    # a message list: the history, then the reply to its last message
    history = [{"role": "user", "content": users[0]}, {"role": "assistant", "content": replies[0]},
               {"role": "user", "content": users[1]}]
    assert llm.chat(history, max_new_tokens=NEW, temperature=0) == replies[1]
    notes: List[str] = []
    c = llm.start_chat(on_note=notes.append)
    for k in range(8):
        c.send("the quick brown fox jumps over the lazy dog " * 6, max_new_tokens=NEW,
               temperature=0)
    assert any("context is full" in n for n in notes)
    from ember.runtime import EmberError

    with pytest.raises(EmberError):
        rt.Tokenizer("/no/such/tokenizer")
