"""ember-llm, the C text generator: its tokenizer against the `tokenizers`
library, its greedy output against PyTorch eager (both export kinds), its
sampler settings, --stats, and its one-line errors.

The tokenizer is a byte-level BPE trained here with `tokenizers` and saved in
GPT-2's file format; the model is a small random GPT from
examples/nanogpt/model.py (block_size 16, so 100 new tokens slide the window
and refill the KV cache many times). The end token's output row is zeroed, so
greedy generation never stops early.

Uses $EMBER_LLM, else build/ember-llm, else ember-llm on the environment's PATH;
skipped when none is built.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Iterator, List, Optional

import pytest
import torch

from conftest import ROOT

tokenizers = pytest.importorskip("tokenizers")

NANOGPT_DIR = os.path.join(ROOT, "examples", "nanogpt")
BLOCK = 16
NEW = 100
EOT = "<|endoftext|>"


def _find_exe() -> Optional[str]:
    env = os.environ.get("EMBER_LLM")
    if env:
        return env if os.path.isabs(env) else os.path.join(ROOT, env)
    built = os.path.join(ROOT, "build", "ember-llm")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("ember-llm", path=os.path.dirname(sys.executable))


EXE = _find_exe()
pytestmark = pytest.mark.skipif(EXE is None or not os.access(EXE, os.X_OK),
                                reason="ember-llm is not built")

# Everything the tokenizer must get right: contractions, letters and numbers
# of many scripts, emoji (with modifiers, ZWJ sequences, flags), CJK, runs of
# spaces, tabs and newlines, CRLF, the end token inside text, trailing spaces.
TEXT = (
    "Hello, world! It's a test: don't, won't, I'm, you're, we've, they'll, she'd. 'Tis O'Neil's.\n"
    "Numbers 0 7 42 1234567 3.14159 1,000,000 -12e5 and ½ ² ٣٤ Ⅻ 四\n"
    "Unicode: café naïve résumé — “quotes” «guillemets» ñ ß Ω Ж Ελληνικά עברית\n"
    "CJK: 日本語のテキスト、中文文本，한국어 텍스트。\n"
    "Emoji: 😀 👍🏽 👨‍👩‍👧 🇯🇵 ❤️ 🤖🤖\n"
    "Whitespace:   three spaces,\ttab,\t\ttwo tabs,  \n\n\n  blank lines\r\n"
    "\u00a0no-break\u3000ideographic\u2028line sep\x85next\x0cform feed\n"
    "trailing spaces   \n"
    f"{EOT}after the end token{EOT}\n"
    "   "
)

CORPUS_MODULES = ("json", "argparse", "collections", "textwrap", "unittest", "logging", "typing")


# ---------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory) -> str:
    """A byte-level BPE (vocab.json + merges.txt) trained on English docstrings
    and some non-English lines."""
    import importlib
    import pydoc

    from tokenizers import ByteLevelBPETokenizer

    docs = [pydoc.getdoc(importlib.import_module(m)) for m in CORPUS_MODULES]
    extra = "Café naïve – “quotes” 日本語のテキスト 😀 123,456.78 don't we'll I'm\n" * 5
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(docs + [extra], vocab_size=600, min_frequency=2, special_tokens=[EOT],
                            show_progress=False)
    out = tmp_path_factory.mktemp("tokenizer")
    tok.save_model(str(out))
    return str(out)


def _reference(directory: str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tk = Tokenizer(models.BPE.from_file(os.path.join(directory, "vocab.json"),
                                        os.path.join(directory, "merges.txt")))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([EOT])
    return tk


@pytest.fixture(scope="module")
def ref_tok(tok_dir):
    return _reference(tok_dir)


def _nanogpt():
    if not os.path.exists(os.path.join(NANOGPT_DIR, "model.py")):
        pytest.skip("examples/nanogpt/model.py is missing")
    if NANOGPT_DIR not in sys.path:
        sys.path.insert(0, NANOGPT_DIR)
    import model  # examples/nanogpt/model.py

    return model


@pytest.fixture(scope="module")
def gpt(ref_tok):
    model = _nanogpt()
    torch.manual_seed(0)
    cfg = model.GPTConfig(block_size=BLOCK, vocab_size=ref_tok.get_vocab_size(), n_layer=2,
                          n_head=2, n_embd=32, bias=True)
    m = model.GPT(cfg).eval()
    with torch.no_grad():
        # Weights larger than GPT-2's init, so that greedy text does not settle
        # into repeating one token.
        for p in m.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.3)
        m.lm_head.weight[ref_tok.token_to_id(EOT)] = 0.0  # its logit stays 0, below the best
    return m


@pytest.fixture(scope="module")
def seq_pte(gpt, tmp_path_factory) -> str:
    """Export (a): tokens [1, T], T in 1..block_size -> logits [1, 1, vocab]."""
    from torch.export import Dim

    from ember import to_edge

    with torch.no_grad():
        ep = torch.export.export(gpt, (torch.zeros(1, 4, dtype=torch.long),),
                                 dynamic_shapes=({1: Dim("T", min=1, max=BLOCK)},))
    path = tmp_path_factory.mktemp("seq") / "seq.pte"
    path.write_bytes(to_edge(ep).to_executorch().buffer)
    return str(path)


@pytest.fixture(scope="module")
def kv_module():
    _nanogpt()
    if not os.path.exists(os.path.join(NANOGPT_DIR, "kv_cache.py")):
        pytest.skip("examples/nanogpt/kv_cache.py is missing")
    import kv_cache  # examples/nanogpt/kv_cache.py

    return kv_cache


@pytest.fixture(scope="module")
def kv_pte(gpt, kv_module, tmp_path_factory) -> str:
    """Export (b): tokens [1, T] and start position [1], KV cache in mutable buffers."""
    path = tmp_path_factory.mktemp("kv") / "kv.pte"
    path.write_bytes(kv_module.export_kv(gpt).buffer)
    return str(path)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def run(*args: str, stdin: Optional[bytes] = None) -> subprocess.CompletedProcess:
    return subprocess.run([EXE, *args], input=stdin if stdin is not None else b"",
                          capture_output=True, timeout=60)


def encode(tok_dir: str, text: str) -> List[int]:
    res = run("--tokenizer", tok_dir, "--encode", "-", stdin=text.encode())
    assert res.returncode == 0, res.stderr.decode()
    return [int(x) for x in res.stdout.split()]


def generate_ids(model: str, tok_dir: str, prompt: str, *flags: str) -> List[int]:
    res = run("--model", model, "--tokenizer", tok_dir, "--prompt", prompt, "--ids", *flags)
    assert res.returncode == 0, res.stderr.decode()
    return [int(x) for x in res.stdout.split()]


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Eager steps of a tiny model run fastest on one thread (and do not spin
    on a busy machine)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


@torch.no_grad()
@one_thread()
def eager_greedy(m, prompt: List[int], n: int, eot: int, penalty: float = 1.0) -> List[int]:
    """nanoGPT's generate, greedy: each step sees the last block_size tokens."""
    seq = list(prompt)
    out: List[int] = []
    for _ in range(n):
        logits, _ = m(torch.tensor([seq[-BLOCK:]]))
        row = logits[0, -1].clone()
        if penalty != 1.0:
            seen = torch.tensor(sorted(set(seq)))
            v = row[seen]
            row[seen] = torch.where(v > 0, v / penalty, v * penalty)
        t = int(torch.argmax(row))
        if t == eot:
            break
        seq.append(t)
        out.append(t)
    return out


def one_error_line(res: subprocess.CompletedProcess, rc: int, *needles: str) -> str:
    err = res.stderr.decode()
    assert res.returncode == rc, (res.returncode, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ember-llm: error: "), err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


PROMPT = "The café 😀 is"  # 9 tokens with the trained tokenizer: 9 + 100 > 16


# ---------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------

def _pieces() -> List[str]:
    lines = TEXT.splitlines(keepends=True)
    return [TEXT, *lines, "", " ", "  ", "\n", "a", "'s", "''s", " 's", "x   y", "x \n y",
            "😀😀", EOT, EOT + EOT, "<|endoftext|", "1 2  3   4", "\t\t\n\n\r\n"]


def test_encode_matches_tokenizers(tok_dir, ref_tok) -> None:
    for text in _pieces():
        assert encode(tok_dir, text) == ref_tok.encode(text).ids, repr(text)
    # The same through the command line instead of stdin.
    res = run("--tokenizer", tok_dir, "--encode", "It's 2024: naïve 😀  ok")
    assert [int(x) for x in res.stdout.split()] == ref_tok.encode("It's 2024: naïve 😀  ok").ids


def test_decode_round_trips(tok_dir, ref_tok) -> None:
    for text in _pieces():
        ids = ref_tok.encode(text).ids
        res = run("--tokenizer", tok_dir, "--decode", " ".join(map(str, ids)))
        assert res.returncode == 0, res.stderr.decode()
        assert res.stdout == text.encode(), repr(text)


def test_committed_tokenizer_matches_tokenizers() -> None:
    directory = os.path.join(NANOGPT_DIR, "tokenizer")
    if not os.path.exists(os.path.join(directory, "vocab.json")):
        pytest.skip("examples/nanogpt/tokenizer is not there yet")
    ref = _reference(directory)
    for text in (TEXT, PROMPT):
        ids = encode(directory, text)
        assert ids == ref.encode(text).ids
        res = run("--tokenizer", directory, "--decode", " ".join(map(str, ids)))
        assert res.stdout == text.encode()


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------

def test_greedy_seq_matches_eager(seq_pte, tok_dir, ref_tok, gpt) -> None:
    prompt_ids = ref_tok.encode(PROMPT).ids
    expected = eager_greedy(gpt, prompt_ids, NEW, ref_tok.token_to_id(EOT))
    assert len(expected) == NEW and len(prompt_ids) + NEW > BLOCK  # the window slides
    got = generate_ids(seq_pte, tok_dir, PROMPT, "--temperature", "0",
                       "--max-new-tokens", str(NEW))
    assert got == expected

    # The text streamed is the prompt and the decoded tokens.
    res = run("--model", seq_pte, "--tokenizer", tok_dir, "--prompt", PROMPT,
              "--temperature", "0", "--max-new-tokens", str(NEW))
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.decode("utf-8", "replace") == PROMPT + ref_tok.decode(expected) + "\n"


def test_greedy_kv_matches_eager(kv_pte, kv_module, tok_dir, ref_tok, gpt) -> None:
    prompt_ids = ref_tok.encode(PROMPT).ids
    expected = eager_greedy(gpt, prompt_ids, NEW, ref_tok.token_to_id(EOT))
    with one_thread():
        assert kv_module.generate_kv(kv_module.KVCacheGPT(gpt).eval(), prompt_ids, NEW) == expected
    got = generate_ids(kv_pte, tok_dir, PROMPT, "--temperature", "0",
                       "--max-new-tokens", str(NEW))
    assert got == expected


@torch.no_grad()
@one_thread()
def _eager_kv_keep(kv_module, gpt, prompt: List[int], n: int, keep: int) -> List[int]:
    """The runner's documented refill: prefill, decode one by one, and when the
    cache is full prefill the last `keep` tokens at position 0."""
    m = kv_module.KVCacheGPT(gpt).eval()
    seq = list(prompt)
    logits = m(torch.tensor([seq]), torch.tensor([0]))
    pos = len(seq)
    out: List[int] = []
    for step in range(n):
        if step > 0:
            if pos < BLOCK:
                logits = m(torch.tensor([seq[-1:]]), torch.tensor([pos]))
                pos += 1
            else:
                logits = m(torch.tensor([seq[-keep:]]), torch.tensor([0]))
                pos = keep
        t = int(logits[0, -1].argmax())
        seq.append(t)
        out.append(t)
    return out


def test_kv_keep_refills_as_documented(kv_pte, kv_module, tok_dir, ref_tok, gpt) -> None:
    prompt_ids = ref_tok.encode(PROMPT).ids
    expected = _eager_kv_keep(kv_module, gpt, prompt_ids, 60, keep=BLOCK // 2)
    got = generate_ids(kv_pte, tok_dir, PROMPT, "--temperature", "0", "--max-new-tokens", "60",
                       "--kv-keep", str(BLOCK // 2))
    assert got == expected
    res = run("--model", kv_pte, "--tokenizer", tok_dir, "--prompt", PROMPT,
              "--kv-keep", str(BLOCK + 1))
    one_error_line(res, 2, "--kv-keep")


def test_stops_at_end_token(seq_pte, tok_dir, ref_tok, gpt, tmp_path) -> None:
    """A tokenizer whose "<|endoftext|>" sits at the id that greedy generation
    reaches after a few tokens: generation stops right before it."""
    prompt_ids = ref_tok.encode(PROMPT).ids
    expected = eager_greedy(gpt, prompt_ids, NEW, ref_tok.token_to_id(EOT))
    k = next(i for i in range(3, NEW) if expected[i] not in expected[:i]
             and expected[i] not in prompt_ids)
    stop = expected[k]
    vocab = json.loads((open(os.path.join(tok_dir, "vocab.json"), encoding="utf-8").read()))
    by_id = {i: s for s, i in vocab.items()}
    eot_id = vocab[EOT]
    vocab[EOT], vocab[by_id[stop]] = stop, eot_id
    d = tmp_path / "tok"
    d.mkdir()
    (d / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    shutil.copy(os.path.join(tok_dir, "merges.txt"), d / "merges.txt")
    assert encode(str(d), PROMPT) == prompt_ids
    got = generate_ids(seq_pte, str(d), PROMPT, "--temperature", "0", "--max-new-tokens", str(NEW))
    assert got == expected[:k]


def test_max_new_tokens(seq_pte, tok_dir) -> None:
    assert len(generate_ids(seq_pte, tok_dir, PROMPT, "--max-new-tokens", "5", "--seed", "1")) == 5
    assert generate_ids(seq_pte, tok_dir, PROMPT, "--max-new-tokens", "0") == []


def test_sampler_settings(seq_pte, tok_dir, ref_tok, gpt) -> None:
    greedy = generate_ids(seq_pte, tok_dir, PROMPT, "--temperature", "0", "--max-new-tokens", "40")
    sample = ["--temperature", "1.0", "--max-new-tokens", "40"]
    a = generate_ids(seq_pte, tok_dir, PROMPT, *sample, "--seed", "7")
    b = generate_ids(seq_pte, tok_dir, PROMPT, *sample, "--seed", "7")
    c = generate_ids(seq_pte, tok_dir, PROMPT, *sample, "--seed", "8")
    assert a == b  # a seed reproduces its tokens
    assert a != c and a != greedy
    # top-k 1, or a top-p small enough to keep one token, is greedy at any temperature.
    assert generate_ids(seq_pte, tok_dir, PROMPT, *sample, "--top-k", "1", "--seed", "3") == greedy
    assert generate_ids(seq_pte, tok_dir, PROMPT, *sample, "--top-p", "1e-6", "--seed", "3") == greedy
    # All settings at once.
    assert generate_ids(seq_pte, tok_dir, PROMPT, *sample, "--top-k", "5", "--top-p", "0.9",
                        "--repetition-penalty", "1.2", "--seed", "5")

    # The repetition penalty, greedy: as Hugging Face applies it, in eager.
    expected = eager_greedy(gpt, ref_tok.encode(PROMPT).ids, 40, ref_tok.token_to_id(EOT), 1.5)
    got = generate_ids(seq_pte, tok_dir, PROMPT, "--temperature", "0", "--max-new-tokens", "40",
                       "--repetition-penalty", "1.5")
    assert got == expected and got != greedy


def test_prompt_from_stdin(seq_pte, tok_dir) -> None:
    args = ("--model", seq_pte, "--tokenizer", tok_dir, "--temperature", "0",
            "--max-new-tokens", "12")
    res = run(*args, stdin=(PROMPT + "\nignored second line\n").encode())
    assert res.returncode == 0, res.stderr.decode()
    direct = run(*args, "--prompt", PROMPT)
    assert res.stdout == b"Enter model prompt: " + direct.stdout
    assert direct.stdout.startswith(PROMPT.encode())


def test_stats(kv_pte, tok_dir) -> None:
    res = run("--model", kv_pte, "--tokenizer", tok_dir, "--prompt", PROMPT, "--temperature", "0",
              "--max-new-tokens", "30", "--stats")
    assert res.returncode == 0, res.stderr.decode()
    err = res.stderr.decode()
    num = r"([0-9]+(?:\.[0-9]+)?)"
    for pattern in (rf"load: +{num} ms", rf"prompt tokens: +9\b", rf"prefill: +{num} ms \({num} tok/s\)",
                    rf"time to first token: +{num} ms", r"generated tokens: +30\b",
                    rf"decode: +{num} ms for 29 steps \({num} tok/s\)", rf"peak RSS: +{num} MiB"):
        assert re.search(pattern, err), (pattern, err)
    rss = float(re.search(rf"peak RSS: +{num} MiB", err).group(1))
    assert 0 < rss < 1024


# ---------------------------------------------------------------------------
# Errors: one line each
# ---------------------------------------------------------------------------

def test_errors_model(seq_pte, tok_dir, tmp_path) -> None:
    base = ("--tokenizer", tok_dir, "--prompt", PROMPT)
    missing = str(tmp_path / "missing.pte")
    one_error_line(run("--model", missing, *base), 1, "missing.pte")

    garbage = tmp_path / "garbage.pte"
    garbage.write_bytes(b"not a program at all" * 10)
    one_error_line(run("--model", str(garbage), *base), 1, "garbage.pte")

    data = open(seq_pte, "rb").read()
    truncated = tmp_path / "truncated.pte"
    truncated.write_bytes(data[: len(data) // 2])
    one_error_line(run("--model", str(truncated), *base), 1, "truncated.pte")

    flipped = bytearray(data)
    flipped[4:8] = b"XXXX"  # the file identifier
    bad = tmp_path / "flipped.pte"
    bad.write_bytes(bytes(flipped))
    one_error_line(run("--model", str(bad), *base), 1, "flipped.pte")

    # A valid program that is not a language model.
    mlp = os.path.join(ROOT, "tests", "fixtures", "mlp.pte")
    if os.path.exists(mlp):
        one_error_line(run("--model", mlp, *base), 1, "input 0 must be tokens")


def test_errors_tokenizer(seq_pte, tok_dir, tmp_path) -> None:
    base = ("--model", seq_pte, "--prompt", PROMPT)
    one_error_line(run("--tokenizer", str(tmp_path / "nowhere"), *base), 1, "nowhere")

    def variant(name: str, vocab: Optional[bytes], merges: Optional[bytes]) -> str:
        d = tmp_path / name
        d.mkdir()
        if vocab is not None:
            (d / "vocab.json").write_bytes(vocab)
        if merges is not None:
            (d / "merges.txt").write_bytes(merges)
        return str(d)

    vocab = open(os.path.join(tok_dir, "vocab.json"), "rb").read()
    merges = open(os.path.join(tok_dir, "merges.txt"), "rb").read()
    one_error_line(run("--tokenizer", variant("no_merges", vocab, None), *base), 1, "merges.txt")
    one_error_line(run("--tokenizer", variant("bad_json", b"<html>", merges), *base), 1,
                   "vocab.json:1:1")
    one_error_line(run("--tokenizer", variant("cut_json", vocab[: len(vocab) // 2], merges), *base),
                   1, "vocab.json")
    one_error_line(run("--tokenizer", variant("bad_merge", vocab, merges + b"zq xw\n"), *base), 1,
                   "merges.txt:")
    # More tokens than the model has logits: they do not belong together.
    more = json.loads(vocab)
    more["zzzzzz"] = len(more)
    one_error_line(run("--tokenizer", variant("bigger", json.dumps(more).encode(), merges), *base),
                   1, "do not belong together")
    # --encode needs only the tokenizer, and fails the same way.
    one_error_line(run("--tokenizer", variant("bad_json2", b"{\"a\": }", merges), "--encode", "x"),
                   1, "vocab.json:1:7")


def test_errors_prompt(seq_pte, tok_dir) -> None:
    base = ("--model", seq_pte, "--tokenizer", tok_dir)
    long_prompt = "one two three four five six seven eight nine ten eleven twelve thirteen " * 2
    line = one_error_line(run(*base, "--prompt", long_prompt), 1, f"at most {BLOCK}")
    assert "the prompt is" in line
    res = run(*base, stdin=b"")
    one_error_line(res, 1, "no prompt")
    assert res.stdout == b"Enter model prompt: "
    one_error_line(run(*base, stdin=b"\n"), 1, "the prompt is empty")
    one_error_line(run(*base, "--prompt", ""), 1, "the prompt is empty")


def test_usage(seq_pte, tok_dir) -> None:
    res = run("--help")
    assert res.returncode == 0 and b"usage: ember-llm" in res.stdout
    for flag in ("--model", "--tokenizer", "--prompt", "--max-new-tokens", "--temperature",
                 "--top-k", "--top-p", "--repetition-penalty", "--seed", "--stats"):
        assert flag.encode() in res.stdout, flag
    base = ("--model", seq_pte, "--tokenizer", tok_dir, "--prompt", "hi")
    one_error_line(run(*base, "--bogus"), 2, "--bogus")
    one_error_line(run(*base, "--temperature", "-1"), 2, "--temperature")
    one_error_line(run(*base, "--top-p", "0"), 2, "--top-p")
    one_error_line(run(*base, "--top-k", "x"), 2, "--top-k")
    one_error_line(run(*base, "--seed", "-3"), 2, "--seed")
    one_error_line(run(*base, "--max-new-tokens"), 2, "--max-new-tokens")
    one_error_line(run("--model", seq_pte, "--prompt", "hi"), 2, "--tokenizer")
    one_error_line(run("--tokenizer", tok_dir, "--prompt", "hi"), 2, "--model")


def test_ember_llm_is_on_the_venv_path() -> None:
    bindir = os.path.dirname(sys.executable)
    exe = shutil.which("ember-llm", path=bindir)
    if exe is None:
        pytest.skip(f"ember-llm is not installed in {bindir} (pip install -e . puts it there)")
    res = subprocess.run([exe, "--help"], capture_output=True, timeout=60)
    assert res.returncode == 0 and b"usage: ember-llm" in res.stdout
