#!/usr/bin/env python3
"""Generates unicode_data.c: the Unicode tables behind extension/llm/text/unicode.h.

Everything comes from the running Python's `unicodedata` module, which must be
Unicode 14.0.0 (Python 3.11); the version is written into the generated file.

Per code point (two-level lookup: stage1[cp >> SHIFT] names a block of
stage2, whose entry for cp & MASK is an index into the record table):

  info        general category (5 bits) | flags << 8 | canonical combining class << 16
  lower       simple lowercase mapping, as a delta from the code point
  upper       simple uppercase mapping, as a delta
  fold        simple case folding (CaseFolding.txt statuses C and S), as a delta

Flags:
  WHITE_SPACE  the White_Space property: U+0009..U+000D, U+0085 and the
               separators Zs, Zl, Zp (identical sets in Unicode 14)
  WORD         Alphabetic, Mark, Decimal_Number, Connector_Punctuation: the word
               set of Oniguruma's Unicode tables (its \\w inside classes; outside
               them Oniguruma adds six Latin-1 numbers, see regex.c)
  CANON        has a canonical decomposition (table ember_ucd_canon)
  COMPAT       its compatibility decomposition differs from the canonical one
               (table ember_ucd_compat)
  COMP_SECOND  second code point of some primary composite
  SPECIAL_LOWER  full lowercase has several code points (ember_ucd_special_lower)

Derivations where unicodedata has no direct accessor:
  - Alphabetic = L + Nl + Other_Alphabetic; in Unicode 14 the Other_Alphabetic
    code points outside Mn/Mc are the circled and squared Latin letters (So)
    listed in OTHER_ALPHABETIC_SYMBOLS (PropList.txt 14.0.0).
  - simple lowercase: str.lower() of one code point; U+0130 is the only code
    point whose full lowercase is longer, and its simple mapping is U+0069.
  - simple uppercase: str.upper() when it is one code point, else str.title()
    when that is one code point (the Greek letters with ypogegrammeni), else none.
  - simple case folding: str.casefold() when it is one code point; otherwise the
    status-S entry, which is the simple lowercase mapping; U+0130 (status T
    only) folds to itself.
  - decompositions: the NFD and NFKD of each code point, Hangul syllables
    excepted (they are decomposed algorithmically).
  - primary composites: two-code-point canonical decompositions whose
    composite survives NFC (composition exclusions and non-starter
    decompositions drop out).

usage: python3 extension/llm/text/gen_unicode_data.py   (rewrites unicode_data.c beside it)
"""

from __future__ import annotations

import os
import sys
import unicodedata
from typing import Dict, List, Sequence, Tuple

EXPECTED_VERSION = "14.0.0"
MAX_CP = 0x10FFFF
SHIFT = 7
BLOCK = 1 << SHIFT
HERE = os.path.dirname(os.path.abspath(__file__))

# The order of the category enum in unicode.h.
CATEGORIES = ["Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
              "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
              "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"]

F_WHITE_SPACE = 1 << 0
F_WORD = 1 << 1
F_CANON = 1 << 2
F_COMPAT = 1 << 3
F_COMP_SECOND = 1 << 4
F_SPECIAL_LOWER = 1 << 5

OTHER_ALPHABETIC_SYMBOLS = [(0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169),
                            (0x1F170, 0x1F189)]

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


def is_surrogate(c: int) -> bool:
    return 0xD800 <= c <= 0xDFFF


def category(c: int) -> str:
    return unicodedata.category(chr(c))


def simple_lower(c: int) -> int:
    if is_surrogate(c):
        return c
    low = chr(c).lower()
    if len(low) == 1:
        return ord(low)
    assert c == 0x130, f"unexpected multi-code-point lowercase U+{c:04X}"
    return ord(low[0])


def simple_upper(c: int) -> int:
    if is_surrogate(c):
        return c
    up = chr(c).upper()
    if len(up) == 1:
        return ord(up)
    title = chr(c).title()
    if len(title) == 1 and title != chr(c):
        return ord(title)
    return c


def simple_fold(c: int) -> int:
    if is_surrogate(c):
        return c
    f = chr(c).casefold()
    if len(f) == 1:
        return ord(f)
    if c == 0x130:
        return c
    return simple_lower(c)


def full_lower(c: int) -> str:
    return chr(c) if is_surrogate(c) else chr(c).lower()


def is_white_space(c: int) -> bool:
    return 0x09 <= c <= 0x0D or c == 0x85 or category(c) in ("Zs", "Zl", "Zp")


def is_word(c: int) -> bool:
    cat = category(c)
    if cat[0] in "LM" or cat in ("Nl", "Nd", "Pc"):
        return True
    return any(lo <= c <= hi for lo, hi in OTHER_ALPHABETIC_SYMBOLS)


def nfd(c: int) -> str:
    return unicodedata.normalize("NFD", chr(c))


def nfkd(c: int) -> str:
    return unicodedata.normalize("NFKD", chr(c))


def build() -> Dict[str, object]:
    canon: List[Tuple[int, str]] = []
    compat: List[Tuple[int, str]] = []
    comp: List[Tuple[int, int, int]] = []
    special_lower: List[Tuple[int, str]] = []
    seconds = set()

    for c in range(MAX_CP + 1):
        if is_surrogate(c) or HANGUL_FIRST <= c <= HANGUL_LAST:
            continue
        d = nfd(c)
        if d != chr(c):
            canon.append((c, d))
        k = nfkd(c)
        if k != d:
            compat.append((c, k))
        raw = unicodedata.decomposition(chr(c))
        if raw and not raw.startswith("<"):
            parts = [int(x, 16) for x in raw.split()]
            if len(parts) == 2 and unicodedata.normalize("NFC", chr(c)) == chr(c):
                comp.append((parts[0], parts[1], c))
                seconds.add(parts[1])
        low = full_lower(c)
        if len(low) > 1:
            special_lower.append((c, low))

    canon_set = {c for c, _ in canon}
    compat_set = {c for c, _ in compat}
    special_set = {c for c, _ in special_lower}

    records: Dict[Tuple[int, int, int, int], int] = {}
    per_cp: List[int] = []
    for c in range(MAX_CP + 1):
        cat = category(c)
        flags = 0
        if not is_surrogate(c):
            if is_white_space(c):
                flags |= F_WHITE_SPACE
            if is_word(c):
                flags |= F_WORD
        if c in canon_set:
            flags |= F_CANON
        if c in compat_set:
            flags |= F_COMPAT
        if c in seconds:
            flags |= F_COMP_SECOND
        if c in special_set:
            flags |= F_SPECIAL_LOWER
        ccc = 0 if is_surrogate(c) else unicodedata.combining(chr(c))
        info = CATEGORIES.index(cat) | (flags << 8) | (ccc << 16)
        rec = (info, simple_lower(c) - c, simple_upper(c) - c, simple_fold(c) - c)
        per_cp.append(records.setdefault(rec, len(records)))

    blocks: Dict[Tuple[int, ...], int] = {}
    stage1: List[int] = []
    for b in range(0, MAX_CP + 1, BLOCK):
        key = tuple(per_cp[b:b + BLOCK])
        stage1.append(blocks.setdefault(key, len(blocks)))
    stage2: List[int] = []
    for key in blocks:
        stage2.extend(key)

    # Case orbits: code points with the same simple folding, as a cycle
    # through each set in increasing order.
    by_fold: Dict[int, List[int]] = {}
    for c in range(MAX_CP + 1):
        by_fold.setdefault(simple_fold(c), []).append(c)
    orbit: List[Tuple[int, int]] = []
    max_orbit = 1
    for members in by_fold.values():
        if len(members) < 2:
            continue
        max_orbit = max(max_orbit, len(members))
        for i, c in enumerate(members):
            orbit.append((c, members[(i + 1) % len(members)]))
    orbit.sort()

    comp.sort()
    return {
        "records": sorted(records, key=records.get),
        "stage1": stage1,
        "stage2": stage2,
        "canon": canon,
        "compat": compat,
        "comp": comp,
        "orbit": orbit,
        "max_orbit": max_orbit,
        "special_lower": special_lower,
    }


def rows(items: Sequence[str], per_line: int) -> List[str]:
    return ["    " + ", ".join(items[i:i + per_line]) + ","
            for i in range(0, len(items), per_line)]


def decomp_table(name: str, entries: List[Tuple[int, str]], what: str) -> List[str]:
    """Index {cp, offset << 5 | length} sorted by cp, into a pool of code points."""
    pool: List[int] = []
    index: List[str] = []
    for c, seq in entries:
        assert len(seq) < 32
        index.append(f"{{0x{c:X}, {len(pool) << 5 | len(seq)}}}")
        pool.extend(ord(ch) for ch in seq)
    out = [f"/* {what}: {len(entries)} code points. */",
           f"const uint32_t {name}_index[][2] = {{"]
    out += rows(index, 6)
    out.append("};")
    out.append(f"const size_t {name}_count = {len(entries)};")
    out.append(f"const uint32_t {name}_pool[] = {{")
    out += rows([f"0x{x:X}" for x in pool], 10)
    out.append("};")
    out.append("")
    return out


def emit(t: Dict[str, object]) -> str:
    version = unicodedata.unidata_version
    records = t["records"]
    stage1 = t["stage1"]
    stage2 = t["stage2"]
    lines = [
        f"/* Generated by extension/llm/text/gen_unicode_data.py from Unicode {version}",
        " * (Python's unicodedata); do not edit. Layout: see the generator. */",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        f'const char ember_ucd_version[] = "{version}";',
        "",
        f"const unsigned ember_ucd_shift = {SHIFT};",
        "",
        f"/* Block of each {BLOCK} code points: {len(stage1)} entries. */",
        "const uint16_t ember_ucd_stage1[] = {",
    ]
    lines += rows([str(x) for x in stage1], 24)
    lines += ["};", "",
              f"/* Record index of each code point, block by block: "
              f"{len(stage2) // BLOCK} blocks. */",
              "const uint16_t ember_ucd_stage2[] = {"]
    lines += rows([str(x) for x in stage2], 24)
    lines += ["};", "",
              f"/* {{info, lower delta, upper delta, fold delta}}: {len(records)} records. */",
              "const int32_t ember_ucd_records[][4] = {"]
    lines += rows([f"{{0x{r[0]:X}, {r[1]}, {r[2]}, {r[3]}}}" for r in records], 4)
    lines += ["};", ""]
    lines += decomp_table("ember_ucd_canon", t["canon"], "Full canonical decompositions (NFD)")
    lines += decomp_table("ember_ucd_compat", t["compat"],
                          "Full compatibility decompositions (NFKD) that differ from NFD")
    comp = t["comp"]
    lines += [f"/* Primary composites {{first, second, composite}}, sorted: {len(comp)}. */",
              "const uint32_t ember_ucd_comp[][3] = {"]
    lines += rows([f"{{0x{a:X}, 0x{b:X}, 0x{c:X}}}" for a, b, c in comp], 4)
    lines += ["};", f"const size_t ember_ucd_comp_count = {len(comp)};", ""]
    orbit = t["orbit"]
    lines += [f"/* Case orbits {{code point, next with the same simple folding}}: {len(orbit)};",
              f" * at most {t['max_orbit']} code points share a folding. */",
              "const uint32_t ember_ucd_orbit[][2] = {"]
    lines += rows([f"{{0x{a:X}, 0x{b:X}}}" for a, b in orbit], 6)
    lines += ["};", f"const size_t ember_ucd_orbit_count = {len(orbit)};", ""]
    special = t["special_lower"]
    lines += [f"/* Full lowercase longer than one code point {{cp, n, c1, c2, c3}}: "
              f"{len(special)}. */",
              "const uint32_t ember_ucd_special_lower[][5] = {"]
    for c, seq in special:
        cps = [ord(ch) for ch in seq] + [0] * (3 - len(seq))
        lines.append(f"    {{0x{c:X}, {len(seq)}, " + ", ".join(f"0x{x:X}" for x in cps) + "},")
    lines += ["};", f"const size_t ember_ucd_special_lower_count = {len(special)};"]
    return "\n".join(lines) + "\n"


def main() -> int:
    if unicodedata.unidata_version != EXPECTED_VERSION:
        print(f"error: this Python has Unicode {unicodedata.unidata_version}; "
              f"run the generator with Python 3.11 (Unicode {EXPECTED_VERSION})", file=sys.stderr)
        return 1
    t = build()
    text = emit(t)
    path = os.path.join(HERE, "unicode_data.c")
    with open(path, "w", encoding="ascii") as f:
        f.write(text)
    print(f"{path}: {len(text)} bytes; {len(t['records'])} records, "
          f"{len(t['stage2']) // BLOCK} blocks, {len(t['canon'])} canonical and "
          f"{len(t['compat'])} compatibility decompositions, {len(t['comp'])} composites, "
          f"{len(t['orbit'])} orbit entries (max orbit {t['max_orbit']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
