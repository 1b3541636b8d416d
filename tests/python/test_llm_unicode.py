"""The C Unicode layer (extension/llm/text/unicode.h) against Python 3.11's
unicodedata and str methods (Unicode 14.0.0, the version of the tables), and
against the `tokenizers` library where it defines the behaviour (Oniguruma's
\\s and \\w, the Lowercase normalizer).

Checked over every code point: general category, simple lower / upper case
mappings, simple case folding, canonical combining class, White_Space and the
word set. Checked over tests/fixtures/llm/corpus.jsonl, every code point on
its own and generated strings (bases, combining marks of many classes in
random order, Hangul jamo and syllables, compatibility characters, singletons
and composition exclusions): NFC, NFD, NFKC and NFKD against
unicodedata.normalize, and the lowercase against per-character str.lower()
and tokenizers' Lowercase.

The C side runs through the test executable's harness modes:
  $EMBER_BUILD_DIR/tests/llm/test_unicode --props | --nfc | --nfd | --nfkc | --nfkd | --lower
($EMBER_BUILD_DIR defaults to build/); the tests are skipped when it is missing.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import unicodedata
from typing import List, Sequence

import pytest

from conftest import ROOT

BUILD_DIR = os.environ.get("EMBER_BUILD_DIR", os.path.join(ROOT, "build"))
if not os.path.isabs(BUILD_DIR):
    BUILD_DIR = os.path.join(ROOT, BUILD_DIR)
EXE = os.path.join(BUILD_DIR, "tests", "llm", "test_unicode")
pytestmark = [
    pytest.mark.skipif(
        not os.access(EXE, os.X_OK),
        reason=f"{EXE} is not built (build target ctest_llm_test_unicode, or set EMBER_BUILD_DIR)"),
    pytest.mark.skipif(unicodedata.unidata_version != "14.0.0",
                       reason="the tables are Unicode 14.0.0; this Python has "
                              f"{unicodedata.unidata_version}"),
]

CORPUS = os.path.join(ROOT, "tests", "fixtures", "llm", "corpus.jsonl")
MAX_CP = 0x10FFFF
WHITE_SPACE = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
               0x2028, 0x2029, 0x202F, 0x205F, 0x3000}
# PropList.txt 14.0.0: the Other_Alphabetic code points outside marks.
OTHER_ALPHABETIC_SYMBOLS = [*range(0x24B6, 0x24EA), *range(0x1F130, 0x1F14A),
                            *range(0x1F150, 0x1F16A), *range(0x1F170, 0x1F18A)]


def _surrogate(c: int) -> bool:
    return 0xD800 <= c <= 0xDFFF


@pytest.fixture(scope="module")
def props() -> List[List[str]]:
    proc = subprocess.run([EXE, "--props"], cwd=ROOT, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode("ascii").splitlines()
    assert len(lines) == MAX_CP + 1
    return [line.split() for line in lines]


def _run(mode: str, texts: Sequence[bytes]) -> List[bytes]:
    data = b"".join(f"{len(t)}\n".encode() + t + b"\n" for t in texts)
    proc = subprocess.run([EXE, mode], cwd=ROOT, input=data, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    out, i = [], 0
    buf = proc.stdout
    while i < len(buf):
        nl = buf.index(b"\n", i)
        n = int(buf[i:nl])
        out.append(buf[nl + 1:nl + 1 + n])
        i = nl + 1 + n + 1
    assert len(out) == len(texts)
    return out


def _corpus() -> List[str]:
    with open(CORPUS, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _generated(count: int = 1500, seed: int = 7) -> List[str]:
    """Strings built to stress ordering and composition."""
    rng = random.Random(seed)
    marks = [c for c in range(0x300, 0x370)] + [0x0327, 0x0328, 0x05B0, 0x05BC, 0x0591, 0x093C,
                                                0x094D, 0x0E38, 0x0F71, 0x0F72, 0x1DCE, 0x20D0,
                                                0x302A, 0x3099, 0x309A, 0x1D165, 0x1D16D]
    bases = list("aeiouyAEIOUYcnszCNSZwxk ") + [chr(c) for c in (
        0x00C5, 0x0391, 0x03B1, 0x03C9, 0x0415, 0x0435, 0x0418, 0x0627, 0x0648, 0x0915, 0x0B47,
        0x0BC6, 0x0DD9, 0x1025, 0x1B05, 0x304B, 0x30AB, 0x30CF, 0x1100, 0x1161, 0x11A8, 0xAC00,
        0xAC01, 0xD7A3, 0x1112, 0x1175, 0x11C2, 0x212B, 0x2126, 0x0958, 0x0344, 0xFB01, 0x2460,
        0xFF8A, 0xFF9F, 0x3300, 0x1E9B, 0x01C4, 0x00BD, 0x2075, 0x0F73, 0x0F75, 0x0F81, 0x1F80,
        0x1FBE, 0x0130, 0x03A3, 0xFDFA, 0x1D15E, 0x2ADC, 0x0F77, 0x00A0, 0x2000, 0xF900, 0x2F800)]
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.45:
                parts.append(rng.choice(bases))
            elif r < 0.9:
                parts.append(chr(rng.choice(marks)))
            else:
                parts.append(chr(rng.randint(0xAC00, 0xD7A3)))
        out.append("".join(parts))
    return out


def _every_code_point_lines() -> List[str]:
    """Every code point but surrogates, 64 per line, each followed by a space
    and a combining acute so that composition with it is exercised."""
    cps = [c for c in range(MAX_CP + 1) if not _surrogate(c)]
    return ["".join(chr(c) + "\u0301 " for c in cps[i:i + 64]) for i in range(0, len(cps), 64)]


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

def test_categories_match_unicodedata(props) -> None:
    bad = [c for c in range(MAX_CP + 1) if props[c][0] != unicodedata.category(chr(c))]
    assert not bad, [f"U+{c:04X}: {props[c][0]} vs {unicodedata.category(chr(c))}"
                     for c in bad[:10]]


def test_simple_case_mappings(props) -> None:
    bad = []
    for c in range(MAX_CP + 1):
        if _surrogate(c):
            continue
        ch = chr(c)
        lower, upper, fold = (int(x, 16) for x in props[c][1:4])
        if len(ch.lower()) == 1 and lower != ord(ch.lower()):
            bad.append(f"lower U+{c:04X}")
        if len(ch.upper()) == 1 and upper != ord(ch.upper()):
            bad.append(f"upper U+{c:04X}")
        if len(ch.casefold()) == 1 and fold != ord(ch.casefold()):
            bad.append(f"fold U+{c:04X}")
        # Where the full mapping has several code points, the simple one is
        # the first of the full lowercase (U+0130), a titlecase letter, or none.
        if len(ch.upper()) > 1 and upper != c and chr(upper) != ch.title():
            bad.append(f"special upper U+{c:04X}")
        if len(ch.casefold()) > 1 and fold != c and fold != lower:
            bad.append(f"special fold U+{c:04X}")
    assert not bad, bad[:10]
    assert int(props[0x130][1], 16) == 0x69 and int(props[0x130][3], 16) == 0x130
    assert int(props[0x1E9E][3], 16) == 0xDF and int(props[0xDF][3], 16) == 0xDF
    assert int(props[0x1FB3][2], 16) == 0x1FBC


def test_combining_classes(props) -> None:
    bad = [c for c in range(MAX_CP + 1)
           if not _surrogate(c) and int(props[c][4]) != unicodedata.combining(chr(c))]
    assert not bad, [f"U+{c:04X}" for c in bad[:10]]


def test_white_space_and_word(props) -> None:
    ws = {c for c in range(MAX_CP + 1) if props[c][5] == "1"}
    assert ws == WHITE_SPACE
    word = {c for c in range(MAX_CP + 1) if props[c][6] == "1"}
    want = {c for c in range(MAX_CP + 1)
            if not _surrogate(c) and (unicodedata.category(chr(c))[0] in "LM"
                                      or unicodedata.category(chr(c)) in ("Nl", "Nd", "Pc"))}
    want |= set(OTHER_ALPHABETIC_SYMBOLS)
    assert word == want


def test_classes_match_oniguruma(props) -> None:
    """\\s and the word set of Oniguruma (the [\\w] of a class), as the
    tokenizers library runs them, for every code point Unicode 14 assigns."""
    tokenizers = pytest.importorskip("tokenizers")
    pre = tokenizers.pre_tokenizers
    cps = [c for c in range(MAX_CP + 1)
           if not _surrogate(c) and unicodedata.category(chr(c)) != "Cn"]
    text = "".join(chr(c) for c in cps)
    for pattern, column in ((r"\s", 5), (r"[\w]", 6)):
        kept = set()
        removed = pre.Split(tokenizers.Regex(pattern), behavior="removed")
        for piece, _ in removed.pre_tokenize_str(text):
            kept.update(ord(ch) for ch in piece)
        onig = set(cps) - kept
        ours = {c for c in cps if props[c][column] == "1"}
        assert ours == onig, (pattern, sorted(hex(c) for c in ours ^ onig)[:10])


# ---------------------------------------------------------------------------
# Normalization and lowercase
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def texts() -> List[str]:
    return _corpus() + _generated() + _every_code_point_lines()


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_normalization_matches_unicodedata(form: str, texts: List[str]) -> None:
    got = _run("--" + form.lower(), [t.encode("utf-8") for t in texts])
    bad = []
    for t, g in zip(texts, got):
        want = unicodedata.normalize(form, t).encode("utf-8")
        if g != want:
            bad.append(f"{t!r}: {g!r} vs {want!r}")
    assert not bad, f"{len(bad)} of {len(texts)} differ: {bad[:3]}"


def test_normalization_passes_invalid_bytes_through() -> None:
    inputs = [b"a\xffe\xcc\x81", b"e\xff\xcc\x81", b"\xe2\x82 caf\xc3\xa9", b"\xc0\xaf\xef\xac\x81"]
    for form in ("nfc", "nfd", "nfkc", "nfkd"):
        got = _run("--" + form, inputs)
        for raw, g in zip(inputs, got):
            # Each valid stretch is normalized on its own; invalid bytes stay.
            parts = raw.decode("utf-8", "surrogateescape")
            want, run = [], []
            for ch in parts + "\udc00":
                if 0xDC80 <= ord(ch) <= 0xDCFF or ch == "\udc00":
                    want.append(unicodedata.normalize(form.upper(), "".join(run)))
                    run = []
                    if ch != "\udc00":
                        want.append(ch)
                else:
                    run.append(ch)
            assert g == "".join(want).encode("utf-8", "surrogateescape"), (form, raw, g)


def test_lowercase_is_per_character(texts: List[str]) -> None:
    got = _run("--lower", [t.encode("utf-8") for t in texts])
    bad = []
    for t, g in zip(texts, got):
        want = "".join(ch.lower() for ch in t).encode("utf-8")
        if g != want:
            bad.append(f"{t!r}: {g!r} vs {want!r}")
    assert not bad, f"{len(bad)} of {len(texts)} differ: {bad[:3]}"
    # Python's str.lower() applies the final-sigma rule; the per-character
    # mapping (and Hugging Face's Lowercase) does not.
    assert _run("--lower", ["ΟΔΟΣ".encode()]) == ["οδοσ".encode()]
    assert "ΟΔΟΣ".lower() == "οδος"


def test_lowercase_matches_tokenizers() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    lower = tokenizers.normalizers.Lowercase()
    sample = _corpus() + _generated()
    got = _run("--lower", [t.encode("utf-8") for t in sample])
    bad = [t for t, g in zip(sample, got) if g != lower.normalize_str(t).encode("utf-8")]
    assert not bad, bad[:3]
