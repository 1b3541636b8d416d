"""The SentencePiece reader in C (extension/llm/tokenizers/sentencepiece.h)
against the `sentencepiece` library.

Models are trained here with `sentencepiece.SentencePieceTrainer`, in the
configurations of the families that ship a tokenizer.model (Llama 2 / Mistral
BPE, Gemma BPE with user-defined symbols, T5-style Unigram with the nmt_nfkc
charsmap, Unigram with nmt_nfkc_cf and byte fallback, ...), from committed
text: tests/fixtures/llm/corpus.jsonl and the repository's docs/*.md and
README.md. For every model: the ids of every line (and of invalid UTF-8, NUL
bytes, long texts), the normalized text, the decode of every encoding and of
random id sequences (lone byte pieces included), and every piece's spelling,
type and score must equal the library's. The models the C test builds byte
by byte (hand-made charsmap, unused and control pieces, WORD and CHAR
models, ...) are compared the same way, and corrupted model files must load
in C exactly when they load in the library.

Uses the harness mode of the C test executable: $EMBER_BUILD_DIR (default
build/) /tests/llm/test_sentencepiece; skipped when it is not built.
"""

from __future__ import annotations

import glob
import io
import json
import os
import random
import struct
import subprocess
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from conftest import ROOT

spm = pytest.importorskip("sentencepiece")

_BUILD = os.environ.get("EMBER_BUILD_DIR", os.path.join(ROOT, "build"))
BUILD_DIR = _BUILD if os.path.isabs(_BUILD) else os.path.join(ROOT, _BUILD)
EXE = os.path.join(BUILD_DIR, "tests", "llm", "test_sentencepiece")
pytestmark = pytest.mark.skipif(
    not os.access(EXE, os.X_OK),
    reason=f"{EXE} is not built (build the target ctest_llm_test_sentencepiece, "
    "or point EMBER_BUILD_DIR at a build directory that has it)")

CORPUS = os.path.join(ROOT, "tests", "fixtures", "llm", "corpus.jsonl")
DOCS = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [os.path.join(ROOT, "README.md")]

SPECIALS = ["<start_of_turn>", "<end_of_turn>"]

# Trainer settings of the families people deploy, and of the other options
# the reader implements. Every model: 1000 pieces at most.
CONFIGS: Dict[str, dict] = {
    # Llama 2, Mistral: BPE, byte fallback, digits split, no normalization.
    "llama2_bpe": dict(model_type="bpe", byte_fallback=True, split_digits=True,
                       normalization_rule_name="identity", add_dummy_prefix=True,
                       remove_extra_whitespaces=False, allow_whitespace_only_pieces=True),
    # Gemma: the same without the dummy prefix, with user-defined symbols
    # (turn markers, runs of spaces, raw or escaped, and of newlines).
    "gemma_bpe": dict(model_type="bpe", byte_fallback=True, split_digits=True,
                      normalization_rule_name="identity", add_dummy_prefix=False,
                      remove_extra_whitespaces=False, allow_whitespace_only_pieces=True,
                      user_defined_symbols=SPECIALS + ["  ", "    ", "\u2581\u2581\u2581",
                                                       "\n\n", "\t\t"]),
    # T5 and friends: Unigram with the default nmt_nfkc charsmap.
    "t5_unigram": dict(model_type="unigram"),
    # Unigram, case-folding NFKC, byte fallback.
    "unigram_nfkc_cf_bytes": dict(model_type="unigram", normalization_rule_name="nmt_nfkc_cf",
                                  byte_fallback=True),
    # Unigram without normalization, byte fallback, user-defined symbols.
    "unigram_identity_bytes": dict(model_type="unigram", normalization_rule_name="identity",
                                   byte_fallback=True, user_defined_symbols=SPECIALS),
    # The space marks the end of a word instead of its start.
    "unigram_ws_suffix": dict(model_type="unigram", normalization_rule_name="identity",
                              treat_whitespace_as_suffix=True),
    # BPE with the default charsmap and whitespace removal.
    "bpe_nfkc": dict(model_type="bpe", byte_fallback=True),
    "char": dict(model_type="char"),
    "word": dict(model_type="word", user_defined_symbols=SPECIALS),
    # A denormalizer: decode maps "A" to "aa" and "▁" to "_".
    "unigram_denorm": dict(model_type="unigram", denormalization_rule_tsv="DENORM_TSV"),
}

# Inputs that are not lines of the corpus: invalid UTF-8, NUL bytes, spaces
# around special tokens, a long text.
EXTRA: List[bytes] = [
    b"", b" ", b"  ", b"\t", b"\n", b"\x00", b"a\x00b",
    b"ab\xffc\xc3", b"\xe3\x81", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\x80", b"\xef\xbf\xbd",
    b"\xf4\x90\x80\x80", b"\x80\x80\x80", b"caf\xc3\xa9 \xc3",
    "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n".encode(),
    "  <start_of_turn>  two  spaces  <end_of_turn>  ".encode(),
    "\u2581leading lower block \u2581\u2581 and \u2581".encode(),
    "1234567890 ١٢٣ ０１２".encode(),
]


# ---------------------------------------------------------------------------
# Corpus and training
# ---------------------------------------------------------------------------

def _corpus_lines() -> List[str]:
    with open(CORPUS, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _doc_lines() -> List[str]:
    lines: List[str] = []
    for path in DOCS:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                lines += f.read().splitlines()
    return lines


def _inputs() -> List[bytes]:
    texts = _corpus_lines() + _doc_lines()
    long_text = "\n".join(_corpus_lines())
    return [t.encode("utf-8") for t in texts] + EXTRA + [long_text.encode("utf-8")]


def _train(path: str, tmp: str, **options) -> None:
    sentences = [s for s in _corpus_lines() + _doc_lines() if s.strip()]
    if options.get("denormalization_rule_tsv") == "DENORM_TSV":
        tsv = os.path.join(tmp, "denorm.tsv")
        with open(tsv, "w", encoding="utf-8") as f:
            f.write("41\t61 61\n2581\t5F\n")
        options["denormalization_rule_tsv"] = tsv
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=model,
                                   vocab_size=1000 if options.get("model_type") != "char" else 400,
                                   hard_vocab_limit=False, num_threads=2, minloglevel=2,
                                   **options)
    with open(path, "wb") as f:
        f.write(model.getvalue())


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Dict[str, str]:
    out = tmp_path_factory.mktemp("sentencepiece")
    paths = {}
    for name, options in CONFIGS.items():
        path = os.path.join(str(out), name + ".model")
        _train(path, str(out), **dict(options))
        paths[name] = path
    return paths


@pytest.fixture(scope="module")
def built_models(tmp_path_factory) -> Dict[str, str]:
    """The models the C test builds byte by byte."""
    out = str(tmp_path_factory.mktemp("sentencepiece-built"))
    subprocess.run([EXE, "--dump-models", out], check=True)
    return {os.path.basename(p)[:-len(".model")]: p
            for p in sorted(glob.glob(os.path.join(out, "*.model")))}


# ---------------------------------------------------------------------------
# Harness
# ---------------------------------------------------------------------------

def _json_line(b: bytes) -> str:
    # Bytes that are not UTF-8 travel as lone surrogates (surrogateescape).
    return json.dumps(b.decode("utf-8", "surrogateescape"))


def _harness(mode: str, model: str, lines: Sequence[str], tmp: str) -> List[str]:
    path = os.path.join(tmp, "harness-input.txt")
    with open(path, "w", encoding="ascii") as f:
        f.write("".join(line + "\n" for line in lines))
    r = subprocess.run([EXE, mode, model, path], capture_output=True)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")
    out = r.stdout.decode("ascii").split("\n")
    assert out[-1] == ""
    assert len(out) - 1 == len(lines), (len(out) - 1, len(lines))
    return out[:-1]


def _c_encode(model: str, inputs: Sequence[bytes], tmp: str) -> List[str]:
    return _harness("--encode", model, [_json_line(b) for b in inputs], tmp)


def _c_texts(mode: str, model: str, lines: Sequence[str], tmp: str) -> List[bytes]:
    out = []
    for line in _harness(mode, model, lines, tmp):
        assert not line.startswith("ERROR"), line
        out.append(json.loads(line).encode("utf-8", "surrogateescape"))
    return out


def _ids_line(ids: Sequence[int]) -> str:
    return " ".join(map(str, ids))


def _random_ids(sp, n: int, seed: int) -> List[List[int]]:
    """Id sequences of all kinds: uniform, byte pieces that start or continue
    UTF-8 characters (lone, cut short, overlong, surrogates), control and
    unknown pieces, pieces that start with "▁"."""
    rnd = random.Random(seed)
    size = sp.vocab_size()
    byte_ids = [i for i in range(size) if sp.is_byte(i)]
    special = [i for i in range(size) if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i)]
    spaced = [i for i in range(size) if sp.id_to_piece(i).startswith("\u2581")]
    interesting = [b for b in byte_ids
                   if int(sp.id_to_piece(b)[3:5], 16) in (0x41, 0x80, 0xBF, 0xC3, 0xE3, 0xED,
                                                        0xF0, 0xF4, 0xFF, 0xA9, 0x9F)]
    seqs = []
    for _ in range(n):
        seq = []
        for _ in range(rnd.randrange(16)):
            r = rnd.random()
            if interesting and r < 0.4:
                seq.append(rnd.choice(interesting))
            elif special and r < 0.5:
                seq.append(rnd.choice(special))
            elif spaced and r < 0.7:
                seq.append(rnd.choice(spaced))
            else:
                seq.append(rnd.randrange(size))
        seqs.append(seq)
    return seqs


def _has_denormalizer(path: str) -> bool:
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    return proto.HasField("denormalizer_spec") and bool(proto.denormalizer_spec.precompiled_charsmap)


def _check_encode(model: str, inputs: Sequence[bytes], tmp: str) -> int:
    sp = spm.SentencePieceProcessor(model_file=model)
    got = _c_encode(model, inputs, tmp)
    want = [_ids_line(sp.encode(b)) for b in inputs]
    bad = [(b, w, g) for b, w, g in zip(inputs, want, got) if w != g]
    assert not bad, f"{len(bad)} of {len(inputs)} texts differ, first: {bad[0]!r}"
    return len(inputs)


def _check_decode(model: str, seqs: Sequence[Sequence[int]], tmp: str) -> int:
    sp = spm.SentencePieceProcessor(model_file=model)
    lines = [_ids_line(s) for s in seqs]
    want = [sp.decode(list(s)).encode("utf-8", "surrogatepass") for s in seqs]
    modes = ["--decode"] if _has_denormalizer(model) else ["--decode", "--stream"]
    for mode in modes:
        got = _c_texts(mode, model, lines, tmp)
        bad = [(s, w, g) for s, w, g in zip(seqs, want, got) if w != g]
        assert not bad, f"{mode}: {len(bad)} of {len(seqs)} differ, first: {bad[0]!r}"
    return len(seqs)


# ---------------------------------------------------------------------------
# Trained models
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["llama2_bpe", "gemma_bpe", "t5_unigram", "unigram_nfkc_cf_bytes"])
def test_bindings_match(models, name):
    """The Python bindings (ember.llm.runtime.Tokenizer) give the library's
    ids (special=False: the library reads "<s>" in text as text) and text
    too."""
    try:
        from ember.llm.runtime import Tokenizer
    except ImportError as e:  # the package was built without ember._llm
        pytest.skip(f"ember.llm.runtime: {e}")
    sp = spm.SentencePieceProcessor(model_file=models[name])
    ours = Tokenizer(models[name])
    for text in _corpus_lines():
        assert ours.encode(text, special=False) == sp.encode(text), text
    for ids in _random_ids(sp, 300, 5):
        assert ours.decode(ids) == sp.decode(ids), ids


@pytest.mark.parametrize("name", list(CONFIGS))
def test_encode_matches(models, name, tmp_path):
    inputs = _inputs()
    assert _check_encode(models[name], inputs, str(tmp_path)) > 2000


@pytest.mark.parametrize("name", list(CONFIGS))
def test_normalize_matches(models, name, tmp_path):
    sp = spm.SentencePieceProcessor(model_file=models[name])
    inputs = _inputs()
    got = _c_texts("--normalize", models[name], [_json_line(b) for b in inputs], str(tmp_path))
    bad = [(b, g) for b, g in zip(inputs, got) if sp.normalize(b) != g]
    assert not bad, f"{len(bad)} differ, first: {bad[0]!r}"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_decode_matches(models, name, tmp_path):
    sp = spm.SentencePieceProcessor(model_file=models[name])
    seqs = [sp.encode(b) for b in _inputs()] + _random_ids(sp, 2000, seed=len(name))
    _check_decode(models[name], seqs, str(tmp_path))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_vocabulary_matches(models, name):
    sp = spm.SentencePieceProcessor(model_file=models[name])
    r = subprocess.run([EXE, "--pieces", models[name]], capture_output=True, check=True)
    lines = r.stdout.decode("ascii").splitlines()
    header = lines[0].split()
    assert header[0:2] == ["vocab", str(sp.vocab_size())]
    assert dict(zip(header[4::2], map(int, header[5::2]))) == {
        "bos": sp.bos_id(), "eos": sp.eos_id(), "unk": sp.unk_id(), "pad": sp.pad_id()}
    assert len(lines) == sp.vocab_size() + 1
    for i, line in enumerate(lines[1:]):
        kind, bits, piece = line.split(" ", 2)
        assert json.loads(piece) == sp.id_to_piece(i), i
        assert bits == "%08x" % struct.unpack("<I", struct.pack("<f", sp.get_score(i)))[0], i
        want = (2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 5 if sp.is_unused(i)
                else 6 if sp.is_byte(i) else None)
        if want is None:
            assert int(kind) in (1, 4), (i, kind)  # NORMAL or USER_DEFINED
        else:
            assert int(kind) == want, (i, kind)
    if name == "gemma_bpe":
        kinds = {json.loads(l.split(" ", 2)[2]): int(l.split()[0]) for l in lines[1:]}
        assert all(kinds[s] == 4 for s in SPECIALS)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_long_text_matches(models, name, tmp_path):
    """One encode of about 400 KB: running scores grow large (the library
    rebases them), and BPE queues grow long."""
    text = "\n".join(_corpus_lines() + _doc_lines())
    while len(text) < 400_000:
        text = text + "\n" + text
    data = text.encode("utf-8")
    _check_encode(models[name], [data], str(tmp_path))
    sp = spm.SentencePieceProcessor(model_file=models[name])
    _check_decode(models[name], [sp.encode(data)], str(tmp_path))


def test_special_tokens_stay_whole(models, tmp_path):
    """Gemma's turn markers come out as their own ids, wherever they are."""
    sp = spm.SentencePieceProcessor(model_file=models["gemma_bpe"])
    text = "x<start_of_turn>user\nHello<end_of_turn>\n".encode()
    ids = [int(x) for x in _c_encode(models["gemma_bpe"], [text], str(tmp_path))[0].split()]
    assert sp.piece_to_id("<start_of_turn>") in ids and sp.piece_to_id("<end_of_turn>") in ids
    assert ids == sp.encode(text)


# ---------------------------------------------------------------------------
# Models built by the C test
# ---------------------------------------------------------------------------

BUILT_TEXTS = [b"abc", b"bc", b"a", b"ab ab", b"a<mask>b", b"xy", b"xyz", b"xyzxy", b"\xc3\xa9",
               b"<ctrl>", b" ", b"a  ", b"\xffa", b"a\x00a", b"q", b"qq", b"q q", b"<sep>",
               b"a<sep>b", b"  a   b  ", b"c", b"<s>", b"\xe6\x97\xa5", b"hello world",
               b"hello there", b"hi", b"<tag>hi", b"hey", b"a a", b"u", b"au", b"<0x41>",
               b"d", b"abd", b"\xe3\x80\x80a\xe3\x80\x80", b"\xef\xbc\xa1b", b"\xef\xac\x81",
               b"<a>a", b"\xef\xbc", b"a" * 101, b"a" * 103, b"a" * 130]


def test_built_models_match(built_models, tmp_path):
    assert len(built_models) >= 10
    inputs = BUILT_TEXTS + _inputs()[:400]
    for name, path in built_models.items():
        sp = spm.SentencePieceProcessor(model_file=path)
        _check_encode(path, inputs, str(tmp_path))
        seqs = [sp.encode(b) for b in BUILT_TEXTS] + _random_ids(sp, 500, seed=7)
        _check_decode(path, seqs, str(tmp_path))


# ---------------------------------------------------------------------------
# Corrupted files
# ---------------------------------------------------------------------------

def _sp_loads(path: str) -> Optional["spm.SentencePieceProcessor"]:
    try:
        return spm.SentencePieceProcessor(model_file=path)
    except Exception:  # the library raises RuntimeError or OSError
        return None


def _corruptions(data: bytes, n: int, seed: int) -> List[bytes]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        b = bytearray(data)
        for _ in range(rnd.choice((1, 1, 2, 4))):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        if rnd.random() < 0.2:
            b = b[:rnd.randrange(1, len(b))]
        out.append(bytes(b))
    return out


def _check_corruptions(model: str, n: int, seed: int, tmp: str) -> Tuple[int, int]:
    with open(model, "rb") as f:
        data = f.read()
    texts = [t.encode() for t in _corpus_lines()[:40]]
    path = os.path.join(tmp, "corrupt.model")
    lines = [_json_line(t) for t in texts]
    text_path = os.path.join(tmp, "corrupt-texts.jsonl")
    with open(text_path, "w", encoding="ascii") as f:
        f.write("".join(line + "\n" for line in lines))
    loaded = 0
    for k, b in enumerate(_corruptions(data, n, seed)):
        with open(path, "wb") as f:
            f.write(b)
        sp = _sp_loads(path)
        r = subprocess.run([EXE, "--encode", path, text_path], capture_output=True)
        assert r.returncode in (0, 2), r.stderr
        c_loads = r.returncode == 0
        assert c_loads == (sp is not None), (
            f"corruption {k}: library {'loads' if sp else 'refuses'} it, C "
            f"{'loads' if c_loads else 'refuses'}: {r.stderr.decode('utf-8', 'replace')}")
        if sp is None:
            assert r.stderr.startswith(b"error: "), r.stderr
            continue
        loaded += 1
        got = r.stdout.decode("ascii").splitlines()
        assert got == [_ids_line(sp.encode(t)) for t in texts], f"corruption {k}"
    return n, loaded


def test_corrupted_files_load_exactly_when_the_library_loads_them(models, built_models,
                                                                  tmp_path):
    for model, seed in ((models["llama2_bpe"], 1), (models["t5_unigram"], 2),
                        (built_models["charsmap"], 3), (built_models["bpe"], 4)):
        n, loaded = _check_corruptions(model, 150, seed, str(tmp_path))
        assert 0 < loaded < n
