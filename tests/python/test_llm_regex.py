"""The C regex engine (extension/llm/text/regex.h) against Python's `regex`
module and against the `tokenizers` library (Oniguruma), on the split patterns
of deployed tokenizers (tests/fixtures/llm/regex/patterns.json).

For every pattern, every line of tests/fixtures/llm/corpus.jsonl, generated
stress strings (letters, marks, numbers, punctuation, symbols, spaces and
controls of many scripts, contractions in both cases) and texts with invalid
UTF-8 are split by the find-all loop (after an empty match the next search
starts one character later) on both sides; the match spans must be identical.
Invalid bytes reach the `regex` module as lone surrogates (surrogateescape),
which behave as the engine defines invalid bytes for these patterns.

The C side runs through the test executable's harness mode:
  $EMBER_BUILD_DIR/tests/llm/test_regex --findall PATTERN_FILE INPUT_FILE --flags N
($EMBER_BUILD_DIR defaults to build/); the tests are skipped when it is missing.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import unicodedata
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from conftest import ROOT

regex = pytest.importorskip("regex")

BUILD_DIR = os.environ.get("EMBER_BUILD_DIR", os.path.join(ROOT, "build"))
if not os.path.isabs(BUILD_DIR):
    BUILD_DIR = os.path.join(ROOT, BUILD_DIR)
EXE = os.path.join(BUILD_DIR, "tests", "llm", "test_regex")
pytestmark = pytest.mark.skipif(
    not os.access(EXE, os.X_OK),
    reason=f"{EXE} is not built (build target ctest_llm_test_regex, or set EMBER_BUILD_DIR)")

PATTERNS_JSON = os.path.join(ROOT, "tests", "fixtures", "llm", "regex", "patterns.json")
CORPUS = os.path.join(ROOT, "tests", "fixtures", "llm", "corpus.jsonl")

# Compile flags of regex.h.
FLAG_MULTILINE = 1 << 1
FLAG_DOLLAR_ENDONLY = 1 << 3
FLAVOR_FLAGS = {"oniguruma": FLAG_MULTILINE, "rust": FLAG_DOLLAR_ENDONLY}

Span = Tuple[int, int]


def _load_patterns() -> List[dict]:
    with open(PATTERNS_JSON, encoding="utf-8") as f:
        return json.load(f)["patterns"]


PATTERNS = _load_patterns()


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

def _corpus() -> List[str]:
    with open(CORPUS, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# Characters of every general category and of the classes the patterns name.
ALPHABET = (
    "abcxyzABCXYZ0123456789 !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    "\t\n\r\x0b\x0c\x1c\x85\xa0\u1680\u2003\u2028\u2029\u202f\u3000\u200b\ufeff"
    "éüßÿÀÖØœſǅʰʼΣσςΐΆώЖжԱ\u0301\u0308\u0903\u20dd"
    "日本語中文龥一ぁアーｶ가힣\u3131\u1100\u1161"
    "٣٤०१²³¹¼½¾Ⅻↂ〇"
    "‿—–（）«»“”、。，！？…،۔।"
    "∑√€£¥^˘©®ⓐⒶ🅰😀👍🏽❤\ufe0f\u200d\u200c"
    "\u0378\ue000\U0001f600\U00010400\U0001e900K\u2126"
)

# Multi-character pieces that exercise the contraction alternatives and
# line breaks.
PIECES = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "'ſ", "'x",
          "\r\n", "  ", "   ", "\n\n", " \n", "don't", "WE'LL", "12345", "3.14", "://", "/path"]


def _agrees(ch: str) -> bool:
    """Whether the regex module (a newer Unicode) files ch under the same
    general category as Python's unicodedata (Unicode 14), our tables."""
    cat = unicodedata.category(ch)
    if cat == "Cs":
        return False
    return regex.fullmatch(r"\p{%s}" % cat, ch) is not None


def _stress(count: int = 300, seed: int = 1234) -> List[str]:
    chars = [c for c in ALPHABET if _agrees(c)]
    rng = random.Random(seed)
    out = []
    for i in range(count):
        n = rng.randint(1, 24 if i % 3 else 60)
        parts = []
        for _ in range(n):
            if rng.random() < 0.15:
                parts.append(rng.choice(PIECES))
            else:
                parts.append(rng.choice(chars))
        out.append("".join(parts))
    # Long runs, where backtracking and the leading-repeat skip matter.
    out += [" " * 300 + "x", "\n" * 50 + " " * 50, "a" * 500, "ab" * 200 + " ", "1" * 100,
            "日本" * 100, "x" + " \t" * 100 + "\n", "A" * 200 + "b", "'s" * 100]
    return out


def _invalid_utf8() -> List[bytes]:
    return [b"ab\xff\xfe cd", b"\xe2\x82 x", b"\xc0\xaf'\xed\xa0\x80s", b"  \xff  \n\xf0\x9f\x98",
            b"It's \x80\x81 2024!!\xf5", b"\xe6\x97\xa5\xe6\x9c \xe6\x97\xa5\xe6\x9c\xac",
            b"'\xffll \x85\xa0"]


# ---------------------------------------------------------------------------
# Both sides
# ---------------------------------------------------------------------------

def _byte_offsets(text: str) -> List[int]:
    offs = [0]
    for ch in text:
        offs.append(offs[-1] + len(ch.encode("utf-8", "surrogateescape")))
    return offs


def _outside_class_dollars_to_end(pattern: str) -> str:
    """Rewrites $ (outside classes) as \\Z: in the regex module \\Z is the
    very end, what $ means in Rust's regex."""
    out, depth, i = [], 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[":
            depth += 1
        elif c == "]" and depth:
            depth -= 1
        out.append("\\Z" if c == "$" and depth == 0 else c)
        i += 1
    return "".join(out)


def _reference(entry: dict):
    pattern = entry.get("regex_module_pattern", entry["pattern"])
    flags = 0
    if entry["flavor"] == "oniguruma":
        flags |= regex.MULTILINE
    else:
        pattern = _outside_class_dollars_to_end(pattern)
    if entry.get("regex_module_version") == 1:
        flags |= regex.V1
    return regex.compile(pattern, flags)


def _reference_spans(compiled, text: str) -> List[Span]:
    offs = _byte_offsets(text)
    out: List[Span] = []
    pos = 0
    while pos <= len(text):
        m = compiled.search(text, pos)
        if m is None:
            break
        out.append((offs[m.start()], offs[m.end()]))
        if m.end() > m.start():
            pos = m.end()
        elif m.end() >= len(text):
            break
        else:
            pos = m.end() + 1
    return out


def _run_harness(tmp_path, pattern: str, texts: Sequence[bytes], flags: int,
                 step_limit: Optional[int] = None) -> List[str]:
    pat_file = tmp_path / "pattern.txt"
    in_file = tmp_path / "input.bin"
    pat_file.write_bytes(pattern.encode("utf-8"))
    with open(in_file, "wb") as f:
        for t in texts:
            f.write(f"{len(t)}\n".encode() + t + b"\n")
    cmd = [EXE, "--findall", str(pat_file), str(in_file), "--flags", str(flags)]
    if step_limit is not None:
        cmd += ["--step-limit", str(step_limit)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=300)
    out = proc.stdout.decode("utf-8", "replace").splitlines()
    if out and out[0].startswith("COMPILE_ERR"):
        return out
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert len(out) == len(texts), f"{len(out)} result lines for {len(texts)} texts"
    return out


def _parse_spans(line: str) -> List[Span]:
    assert not line.startswith("ERR"), line
    nums = [int(x) for x in line.split()]
    return list(zip(nums[0::2], nums[1::2]))


def _first_difference(got: List[Span], want: List[Span]) -> str:
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"span {i}: engine {g}, reference {w}"
    return f"engine has {len(got)} spans, reference {len(want)}"


ALL_TEXTS = _corpus() + _stress()


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------

def test_patterns_fixture_is_complete() -> None:
    names = {p["name"] for p in PATTERNS}
    for needed in ("gpt2", "llama3", "qwen2", "gpt4o", "tekken", "deepseek_v3_main",
                   "deepseek_llm_letters", "bloom", "falcon_digits", "tiktoken_r50k",
                   "tiktoken_cl100k", "tiktoken_o200k"):
        assert needed in names
    for p in PATTERNS:
        assert p["flavor"] in FLAVOR_FLAGS and p["source"] and p["models"], p["name"]


@pytest.mark.parametrize("entry", PATTERNS, ids=[p["name"] for p in PATTERNS])
def test_spans_match_regex_module(entry: dict, tmp_path) -> None:
    ref = _reference(entry)
    texts = [t.encode("utf-8") for t in ALL_TEXTS] + _invalid_utf8()
    decoded = ALL_TEXTS + [b.decode("utf-8", "surrogateescape") for b in _invalid_utf8()]
    lines = _run_harness(tmp_path, entry["pattern"], texts, FLAVOR_FLAGS[entry["flavor"]])
    assert not lines[0].startswith("COMPILE_ERR"), lines[0]
    bad = []
    for text, line in zip(decoded, lines):
        got = _parse_spans(line)
        want = _reference_spans(ref, text)
        if got != want:
            bad.append(f"{text!r}: {_first_difference(got, want)}")
    assert not bad, f"{len(bad)} of {len(texts)} texts differ; first: {bad[:3]}"


ONIGURUMA = [p for p in PATTERNS if p["flavor"] == "oniguruma"]


@pytest.mark.parametrize("entry", ONIGURUMA, ids=[p["name"] for p in ONIGURUMA])
def test_spans_match_tokenizers_split(entry: dict, tmp_path) -> None:
    """tokenizer.json patterns against the library that runs them: a Split
    pre-tokenizer (Isolated) keeps matches and the gaps between them; the
    Removed behaviour gives the gaps alone, so the rest are the matches."""
    tokenizers = pytest.importorskip("tokenizers")
    pre = tokenizers.pre_tokenizers
    isolated = pre.Split(tokenizers.Regex(entry["pattern"]), behavior="isolated")
    removed = pre.Split(tokenizers.Regex(entry["pattern"]), behavior="removed")
    texts = ALL_TEXTS
    lines = _run_harness(tmp_path, entry["pattern"], [t.encode("utf-8") for t in texts],
                         FLAVOR_FLAGS[entry["flavor"]])
    bad = []
    for text, line in zip(texts, lines):
        offs = _byte_offsets(text)
        gaps = {span for _, span in removed.pre_tokenize_str(text)}
        want = [(offs[s], offs[e]) for _, (s, e) in isolated.pre_tokenize_str(text)
                if (s, e) not in gaps]
        got = [span for span in _parse_spans(line) if span[0] != span[1]]
        if got != want:
            bad.append(f"{text!r}: {_first_difference(got, want)}")
    assert not bad, f"{len(bad)} of {len(texts)} texts differ; first: {bad[:3]}"


# Random patterns over the supported syntax, each against a few dozen random
# texts. The regex module has bugs of its own in both its behaviours (in V0 a
# scoped (?i:...) leaks into later alternatives; V1 mismatches some
# case-insensitive alternations), so a span list must equal the one of V0
# or of V1.
RANDOM_ATOMS = ["a", "b", "c", "x", "'", " ", "é", "日", ".", r"\d", r"\s", r"\S", r"\D", r"\w",
                r"\W", r"\p{L}", r"\P{L}", r"\p{Lu}", r"\p{N}", "[ab]", "[^ab]", "[a-c]",
                r"[^\s\p{L}]", r"[\w\s]", r"\n", "(?i:a)", "(?i:s)", "(?i:[a-c])", "(?i:[^s])",
                "(?s:.)", "^", "$", r"\b", r"\B", r"\A", r"\z"]
RANDOM_QUANTIFIERS = ["*", "+", "?", "{2}", "{1,3}", "{0,2}", "{2,}", "{,2}", "{3,5}"]
RANDOM_BEHIND = ["a", "b", "[ab]", r"\s", "ab", "a|bc", ".{2}", "a?b", "(?:ab){1,2}",
                 r"\p{L}{0,2}x", "^", r"\b"]
RANDOM_TEXT = "abcabcxyz AB日é\n\t1234'sS"


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth > 3 or r < 0.35:
        return rng.choice(RANDOM_ATOMS)
    if r < 0.55:
        return _random_pattern(rng, depth + 1) + _random_pattern(rng, depth + 1)
    if r < 0.65:
        return f"(?:{_random_pattern(rng, depth + 1)}|{_random_pattern(rng, depth + 1)})"
    if r < 0.85:
        return (f"(?:{_random_pattern(rng, depth + 1)})" + rng.choice(RANDOM_QUANTIFIERS)
                + rng.choice(["", "", "?", "+"]))
    if r < 0.9:
        return f"(?>{_random_pattern(rng, depth + 1)})"
    if r < 0.95:
        return rng.choice(["(?=", "(?!"]) + _random_pattern(rng, depth + 1) + ")"
    return rng.choice(["(?<=", "(?<!"]) + rng.choice(RANDOM_BEHIND) + ")"


def test_random_patterns_match_regex_module(tmp_path) -> None:
    rng = random.Random(2024)
    checked = 0
    failures = []
    while checked < 150:
        pattern = _random_pattern(rng)
        try:
            v0 = regex.compile(pattern)
            v1 = regex.compile(pattern, regex.V1)
        except regex.error:
            continue
        texts = ["".join(rng.choice(RANDOM_TEXT) for _ in range(rng.randint(0, 14)))
                 for _ in range(30)]
        lines = _run_harness(tmp_path, pattern, [t.encode() for t in texts], 0)
        assert not lines[0].startswith("COMPILE_ERR"), (pattern, lines[0])
        for text, line in zip(texts, lines):
            got = _parse_spans(line)
            if got != _reference_spans(v0, text) and got != _reference_spans(v1, text):
                failures.append(f"/{pattern}/ on {text!r}: {got}")
                break
        checked += 1
    assert not failures, failures[:5]


def test_compile_errors_name_offset_and_construct(tmp_path) -> None:
    cases = {
        "(?i:'s|'t": ("missing )", "offset 0"),
        "[^\\s\\p{L}": ("missing ]", "offset 0"),
        "a|*b": ("nothing to repeat", "offset 2"),
        "\\p{Greek}+": ("Unicode property", "\\p{Greek}"),
        "(a)\\1": ("backreferences", "offset 3"),
    }
    for pattern, (what, where) in cases.items():
        lines = _run_harness(tmp_path, pattern, [b"x"], 0)
        assert lines and lines[0].startswith("COMPILE_ERR"), (pattern, lines)
        assert what in lines[0] and where in lines[0], (pattern, lines[0])


def test_step_limit_fails_cleanly(tmp_path) -> None:
    lines = _run_harness(tmp_path, "(?:a|aa)+$", [b"a" * 60 + b"b", b"aaa"], 0, step_limit=100000)
    assert lines[0].startswith("ERR") and "steps" in lines[0], lines[0]
    assert _parse_spans(lines[1]) == [(0, 3)]
