"""ember's tokenizers (extension/llm/tokenizer.h) against the reference
libraries, on tokenizers trained here from committed text (no downloads):

- Hugging Face `tokenizers` in the configurations real families ship:
  Qwen 2 (NFC, Split with Qwen's pattern, ByteLevel), Llama 3 (Split with
  Llama 3's pattern), GPT-4o / Phi-4-mini (the o200k pattern), SmolLM2
  (Digits, ByteLevel with its own regex), Llama 2 (Prepend and Replace
  normalizers, byte fallback, Replace/ByteFallback/Fuse/Strip decoders),
  Gemma (Replace normalizer, byte fallback), Metaspace (prepend "first"),
  a Unigram model (NFKC, Metaspace), WordPiece (NFD, Lowercase,
  StripAccents, Whitespace) and WordLevel models over every Split
  behaviour, inverted or not, Punctuation and WhitespaceSplit;
- `tiktoken` with Llama 3's pattern and special tokens, its ranks taken
  from a trained byte-level BPE.

For every line of tests/fixtures/llm/corpus.jsonl: identical ids (encode
without added special tokens, special tokens written in the text parsed),
and identical text from decode, whole and streamed, for those ids and for
random id sequences. ember is driven through the harness mode of
tests/c/llm/test_tokenizers, and again through the Python bindings
(ember.llm.runtime.Tokenizer).
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("EMBER_BUILD_DIR", ROOT / "build"))
HARNESS = BUILD / "tests" / "llm" / "test_tokenizers"
CORPUS = ROOT / "tests" / "fixtures" / "llm" / "corpus.jsonl"

pytestmark = pytest.mark.skipif(not HARNESS.exists(), reason=f"{HARNESS} is not built")

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
                  r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")
O200K_PATTERN = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
])


def corpus() -> List[str]:
    # split on "\n" only: the lines hold U+0085 and U+2028, which splitlines() breaks at
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").split("\n") if line]


TRAINING = ROOT / "tests" / "fixtures" / "llm" / "training.txt"


def training_text() -> List[str]:
    """Committed text, a line each: the corpus and a frozen copy of the
    README and docs (frozen so that editing the docs does not change the
    tokenizers, and with them the models, that tests train here)."""
    return corpus() + TRAINING.read_text(encoding="utf-8").splitlines()


SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>",
            "<start_of_turn>", "<end_of_turn>", "<|user|>", "<|assistant|>", "<|end|>"]


def byte_level(tok: Tokenizer, pre, normalizer=None, vocab: int = 3000) -> Tokenizer:
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(training_text(), trainer)
    return tok


def with_byte_tokens(tok: Tokenizer) -> Tokenizer:
    """Adds <0x00>..<0xFF> to a BPE model's vocabulary, as Llama 2's and
    Gemma's converted tokenizers have them."""
    doc = json.loads(tok.to_str())
    vocab = doc["model"]["vocab"]
    next_id = max(max(vocab.values()), max(t["id"] for t in doc["added_tokens"])) + 1
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = next_id + b
    return Tokenizer.from_str(json.dumps(doc))


def metaspace_bpe(normalizer, pre, decoder, byte_fallback: bool) -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=byte_fallback, fuse_unk=True))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre
    tok.decoder = decoder
    trainer = trainers.BpeTrainer(vocab_size=2500, special_tokens=["<unk>", "<s>", "</s>"] + SPECIALS[5:7],
                                  show_progress=False)
    tok.train_from_iterator(training_text(), trainer)
    return with_byte_tokens(tok) if byte_fallback else tok


def make_qwen2() -> Tokenizer:
    return byte_level(Tokenizer(models.BPE()), pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), normalizers.NFC())


def make_llama3() -> Tokenizer:
    return byte_level(Tokenizer(models.BPE()), pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]))


def make_o200k() -> Tokenizer:
    return byte_level(Tokenizer(models.BPE()), pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(O200K_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]))


def make_smollm2() -> Tokenizer:
    return byte_level(Tokenizer(models.BPE()), pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]))


def make_gpt2_prefix() -> Tokenizer:
    return byte_level(Tokenizer(models.BPE()), pre_tokenizers.ByteLevel(add_prefix_space=True))


def make_llama2() -> Tokenizer:
    return metaspace_bpe(
        normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]), None,
        decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                           decoders.Strip(" ", 1, 0)]), byte_fallback=True)


def make_gemma() -> Tokenizer:
    return metaspace_bpe(
        normalizers.Replace(" ", "▁"), None,
        decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]),
        byte_fallback=True)


def make_metaspace() -> Tokenizer:
    return metaspace_bpe(None, pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first"),
                         decoders.Metaspace(replacement="▁", prepend_scheme="first"), byte_fallback=False)


def make_unigram() -> Tokenizer:
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(vocab_size=1500, special_tokens=["<unk>", "<s>", "</s>"],
                                      unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(training_text(), trainer)
    return tok


def make_wordpiece() -> Tokenizer:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase(),
                                           normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(vocab_size=2000, special_tokens=["[UNK]", "[CLS]", "[SEP]"],
                                        show_progress=False)
    tok.train_from_iterator(training_text(), trainer)
    return tok


def make_wordlevel(pre) -> Callable[[], Tokenizer]:
    def make() -> Tokenizer:
        tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
        tok.pre_tokenizer = pre
        trainer = trainers.WordLevelTrainer(vocab_size=3000, special_tokens=["[UNK]"],
                                            show_progress=False)
        tok.train_from_iterator(training_text(), trainer)
        return tok
    return make


FAMILIES: Dict[str, Callable[[], Tokenizer]] = {
    "qwen2": make_qwen2,
    "llama3": make_llama3,
    "o200k": make_o200k,
    "smollm2": make_smollm2,
    "gpt2_prefix_space": make_gpt2_prefix,
    "llama2": make_llama2,
    "gemma": make_gemma,
    "metaspace": make_metaspace,
    "unigram": make_unigram,
    "wordpiece": make_wordpiece,
    "punctuation": make_wordlevel(pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])),
    "bert": make_wordlevel(pre_tokenizers.BertPreTokenizer()),
}
for behavior in ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]:
    for invert in (False, True):
        FAMILIES[f"split_{behavior}{'_inverted' if invert else ''}"] = make_wordlevel(
            pre_tokenizers.Split(Regex(r"\s+|[,.;:!?]"), behavior=behavior, invert=invert))
    FAMILIES[f"split_string_{behavior}"] = make_wordlevel(
        pre_tokenizers.Split(" ", behavior=behavior))


def run_harness(mode: str, tokenizer: Path, lines: List[str], special: bool,
                tmp: Path) -> List[str]:
    inp = tmp / f"{mode}.txt"
    inp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    cmd = [str(HARNESS), f"--{mode}", str(tokenizer), str(inp)] + (["--special"] if special else [])
    out = subprocess.run(cmd, capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    return out.stdout.decode("utf-8").split("\n")[:-1]


def check_tokenizer(tok: Tokenizer, path: Path, tmp: Path, special_ids: Optional[List[int]] = None) -> None:
    texts = corpus()
    ember = run_harness("encode", path, [json.dumps(t) for t in texts], True, tmp)
    assert len(ember) == len(texts)
    all_ids = []
    for text, got in zip(texts, ember):
        want = tok.encode(text, add_special_tokens=False).ids
        assert got == " ".join(map(str, want)), f"encode {text!r}: ember {got}, tokenizers {want}"
        all_ids.append(want)
    # decode: the corpus ids, and random sequences over the whole vocabulary
    rng = random.Random(0)
    n = tok.get_vocab_size(with_added_tokens=True)
    all_ids += [[rng.randrange(n) for _ in range(rng.randrange(1, 12))] for _ in range(300)]
    ember = run_harness("decode", path, [" ".join(map(str, ids)) for ids in all_ids], False, tmp)
    assert len(ember) == 2 * len(all_ids)
    for k, ids in enumerate(all_ids):
        whole, streamed = json.loads(ember[2 * k]), json.loads(ember[2 * k + 1])
        want = tok.decode(ids, skip_special_tokens=False)
        assert whole == want, f"decode {ids}: ember {whole!r}, tokenizers {want!r}"
        assert streamed == want, f"streamed decode {ids}: ember {streamed!r}, tokenizers {want!r}"
    check_bindings(path, texts, all_ids, lambda t: tok.encode(t, add_special_tokens=False).ids,
                   lambda ids: tok.decode(ids, skip_special_tokens=False))


def check_bindings(path: Path, texts: List[str], id_seqs: List[List[int]],
                   encode: Callable[[str], List[int]], decode: Callable[[List[int]], str]) -> None:
    """The same through the Python bindings (ember.llm.runtime.Tokenizer)."""
    try:
        from ember.llm.runtime import Tokenizer as EmberTokenizer
    except ImportError:  # the package was built without ember._llm
        return
    ours = EmberTokenizer(str(path))
    for text in texts:
        assert ours.encode(text) == encode(text), f"bindings encode {text!r}"
    for ids in id_seqs:
        assert ours.decode(ids) == decode(ids), f"bindings decode {ids}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_huggingface_parity(family: str, tmp_path: Path) -> None:
    tok = FAMILIES[family]()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    check_tokenizer(tok, path, tmp_path)


LLAMA3_SPECIALS = (["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>",
                    "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
                    "<|python_tag|>", "<|image|>"]
                   + [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - 12)])


def test_tiktoken_parity(tmp_path: Path) -> None:
    """A tiktoken rank file made from a trained byte-level BPE (a token's rank
    is its id, as in Llama 3's file), Llama 3's pattern and special tokens."""
    tiktoken = pytest.importorskip("tiktoken")
    hf = make_llama3()
    # every model token but the trained-in specials, as bytes, ranked in id
    # order (ranks are 0 .. n-1)
    vocab = hf.get_vocab(with_added_tokens=False)
    ordered = sorted((idx, tok) for tok, idx in vocab.items() if tok not in SPECIALS)
    ranks = {bytes(_bytelevel_bytes(tok)): r for r, (_, tok) in enumerate(ordered)}
    path = tmp_path / "tokenizer.model"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items()))
    enc = tiktoken.Encoding(name="llama3_test", pat_str=LLAMA3_PATTERN, mergeable_ranks=ranks,
                            special_tokens={s: len(ranks) + i for i, s in enumerate(LLAMA3_SPECIALS)})
    texts = corpus()
    ember = run_harness("encode", path, [json.dumps(t) for t in texts], True, tmp_path)
    all_ids = []
    for text, got in zip(texts, ember):
        want = enc.encode(text, allowed_special="all")
        assert got == " ".join(map(str, want)), f"encode {text!r}: ember {got}, tiktoken {want}"
        all_ids.append(want)
    rng = random.Random(1)
    n = enc.n_vocab
    all_ids += [[rng.randrange(n) for _ in range(rng.randrange(1, 12))] for _ in range(300)]
    ember = run_harness("decode", path, [" ".join(map(str, ids)) for ids in all_ids], False, tmp_path)
    assert len(ember) == 2 * len(all_ids)
    for k, ids in enumerate(all_ids):
        whole, streamed = json.loads(ember[2 * k]), json.loads(ember[2 * k + 1])
        want = enc.decode(ids)
        assert whole == want and streamed == want, f"decode {ids}: {whole!r} {streamed!r} {want!r}"
    check_bindings(path, texts, all_ids, lambda t: enc.encode(t, allowed_special="all"), enc.decode)


def _bytelevel_bytes(token: str) -> List[int]:
    """The bytes a byte-level token stands for (GPT-2's map, inverted)."""
    table = {}
    n = 0
    for b in range(256):
        if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE:
            table[chr(b)] = b
        else:
            table[chr(256 + n)] = b
            n += 1
    return [table[c] for c in token]
