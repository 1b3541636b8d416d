"""The C JSON reader (extension/llm/text/json.h) against Python's json.

tests/c/llm/test_json has a harness mode, `test_json --dump FILE`, that prints
the parsed document in a canonical form (every member of every object in
file order; ints exact in int64 as digits; other numbers as "f" and %.17g;
strings as json.dumps writes them). This test builds the same form from
Python's json.loads and requires the two to be identical, on the files in
tests/fixtures/llm/json/ and on generated documents (random structure,
strings of every kind of character, ints at the int64 edges, random doubles,
several writing styles), and requires a clean error, never a crash, on the
invalid fixtures and on byte-flipped documents.

Uses $EMBER_BUILD_DIR/tests/llm/test_json (default: build/); skipped when it
is not built.
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
from typing import Any, List, Tuple

import pytest

from conftest import ROOT

BUILD_DIR = os.environ.get("EMBER_BUILD_DIR", os.path.join(ROOT, "build"))
EXE = os.path.join(BUILD_DIR, "tests", "llm", "test_json")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "llm", "json")

pytestmark = pytest.mark.skipif(
    not os.access(EXE, os.X_OK),
    reason=f"{EXE} is not built (build target ctest_llm_test_json, or set EMBER_BUILD_DIR)")

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


class Pairs(list):
    """An object's members in file order, duplicates kept."""


def canon(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        if INT64_MIN <= v <= INT64_MAX:
            return str(v)
        try:
            return "f%.17g" % float(v)
        except OverflowError:
            return "finf" if v > 0 else "f-inf"
    if isinstance(v, float):
        return "f%.17g" % v
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, Pairs):
        return "{" + ",".join(json.dumps(k) + ":" + canon(x) for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ",".join(canon(x) for x in v) + "]"
    raise TypeError(type(v))


def python_canon(data: bytes) -> str:
    return canon(json.loads(data, object_pairs_hook=Pairs))


def c_dump(path: str) -> Tuple[int, str]:
    r = subprocess.run([EXE, "--dump", path], capture_output=True, timeout=60)
    assert r.returncode in (0, 1), f"test_json crashed on {path}: rc {r.returncode}\n{r.stderr!r}"
    return r.returncode, r.stdout.decode("utf-8").rstrip("\n")


def fixture_files(prefix_invalid: bool) -> List[str]:
    names = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".json"))
    return [f for f in names if f.startswith("invalid_") == prefix_invalid]


@pytest.mark.parametrize("name", fixture_files(False))
def test_valid_fixture(name: str) -> None:
    path = os.path.join(FIXTURES, name)
    with open(path, "rb") as f:
        want = python_canon(f.read())
    rc, out = c_dump(path)
    assert rc == 0, out
    assert out == want


@pytest.mark.parametrize("name", fixture_files(True))
def test_invalid_fixture(name: str) -> None:
    rc, out = c_dump(os.path.join(FIXTURES, name))
    assert rc == 1
    # "error: json:LINE:COL: what"
    head = out.split(": ", 2)
    assert head[0] == "error" and head[1].startswith("json:"), out
    line, col = head[1][len("json:"):].split(":")
    assert int(line) >= 1 and int(col) >= 1


# ---------------------------------------------------------------------------
# Generated documents
# ---------------------------------------------------------------------------

CHARS = (
    [chr(c) for c in range(0x20)] + list(" \"\\/'abcxyzABC019{}[]:,") + ["\x7f", "\x80", "\xa0",
    "é", "ß", "Ġ", "Ċ", "€", "中", "\u2028", "\ufeff", "\uffff", "😀", "🤖", "\U0010ffff", "\U00010000"]
)


def rand_string(rng: random.Random) -> str:
    return "".join(rng.choice(CHARS) for _ in range(rng.choice([0, 1, 2, 5, 9, 30])))


def rand_number(rng: random.Random) -> Any:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice([0, 1, -1, INT64_MAX, INT64_MIN, INT64_MAX + 1, INT64_MIN - 1, 2 ** 53 + 1,
                           10 ** 30, -(10 ** 25)])
    if kind == 1:
        return rng.randint(-10 ** 6, 10 ** 6)
    if kind == 2:
        return rng.randint(INT64_MIN, INT64_MAX)
    if kind == 3:
        bits = rng.getrandbits(64)
        d = struct.unpack("<d", struct.pack("<Q", bits))[0]
        return 0.5 if d != d or d in (float("inf"), float("-inf")) else d
    if kind == 4:
        return round(rng.uniform(-1000, 1000), rng.randrange(8))
    return rng.choice([0.0, -0.0, 1e-7, 1e22, 1e23, 5e-324, 1.7976931348623157e308, 0.1, 1 / 3])


def rand_value(rng: random.Random, depth: int) -> Any:
    k = rng.randrange(10 if depth < 6 else 6)
    if k == 0:
        return rng.choice([None, True, False])
    if k in (1, 2):
        return rand_number(rng)
    if k in (3, 4, 5):
        return rand_string(rng)
    if k in (6, 7):
        return [rand_value(rng, depth + 1) for _ in range(rng.randrange(6))]
    n = rng.choice([0, 1, 3, 7, 12, 40])
    return {rand_string(rng): rand_value(rng, depth + 1) for _ in range(n)}


def write_styles(v: Any) -> List[str]:
    return [
        json.dumps(v),
        json.dumps(v, ensure_ascii=False),
        json.dumps(v, indent=2, ensure_ascii=False),
        json.dumps(v, separators=(",", ":")),
        json.dumps(v, indent="\t", sort_keys=True) + "\r\n",
    ]


def test_generated_documents(tmp_path) -> None:
    rng = random.Random(1234)
    count = 0
    for doc_i in range(40):
        v = rand_value(rng, 0)
        for style, text in enumerate(write_styles(v)):
            data = text.encode("utf-8")
            path = tmp_path / f"doc{doc_i}_{style}.json"
            path.write_bytes(data)
            rc, out = c_dump(str(path))
            assert rc == 0, f"{path}: {out}"
            assert out == python_canon(data), path
            count += 1
    assert count == 200


def test_flipped_bytes_agree_or_fail_cleanly(tmp_path) -> None:
    """Byte flips: where C accepts, Python reads the same document; where
    Python rejects, C rejects too (C is stricter: lone surrogates, NaN)."""
    rng = random.Random(99)
    base = json.dumps({"vocab": {"a": 1, "Ġb": 2, "😀": 3}, "merges": [["a", "b"], "c d"],
                       "x": [1.5, -2e-3, True, None, "\\u00e9"]}, ensure_ascii=False).encode()
    path = tmp_path / "flip.json"
    for _ in range(300):
        data = bytearray(base)
        for _ in range(rng.randrange(1, 3)):
            data[rng.randrange(len(data))] ^= rng.choice([1, 2, 4, 0x20, 0x40, 0x80, 0xFF])
        path.write_bytes(bytes(data))
        rc, out = c_dump(str(path))
        try:
            want = python_canon(bytes(data))
        except (ValueError, UnicodeDecodeError):
            want = None
        if rc == 0:
            assert want is not None and out == want, bytes(data)
        else:
            assert out.startswith("error: json:"), out
        if want is None:
            assert rc == 1, bytes(data)
