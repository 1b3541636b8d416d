"""Writes a copy of a GPT-2 style tokenizer in which two tokens split one
UTF-8 character between them, for the test that text streams out whole.

Token A gets the first two bytes of U+2603 (E2 98) appended, token B gets its
last byte (83) prepended: a model that generates A then B prints the snowman
across two tokens. Merges that name or make the old spellings of A and B are
dropped, so the tokenizer stays consistent; every other token is unchanged.

usage: python make_utf8_tokenizer.py SRC_DIR OUT_DIR ID_A ID_B
"""

from __future__ import annotations

import json
import os
import sys


def byte_to_unicode() -> dict:
    """GPT-2's map from each byte to the printable code point that spells it."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    out, n = {}, 0
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + n)
            n += 1
    return out


def main() -> None:
    if len(sys.argv) != 5:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    src, out, id_a, id_b = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if id_a == id_b:
        raise SystemExit("make_utf8_tokenizer: the two ids must differ")
    spell = byte_to_unicode()
    snowman = "\u2603".encode()  # E2 98 83
    with open(os.path.join(src, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    by_id = {i: s for s, i in vocab.items()}
    old_a, old_b = by_id[id_a], by_id[id_b]
    new_a = old_a + "".join(spell[b] for b in snowman[:2])
    new_b = spell[snowman[2]] + old_b
    for s in (new_a, new_b):
        if s in vocab:
            raise SystemExit(f"make_utf8_tokenizer: {s!r} is in the vocabulary already")
    del vocab[old_a], vocab[old_b]
    vocab[new_a], vocab[new_b] = id_a, id_b
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    gone = {old_a, old_b}
    with open(os.path.join(src, "merges.txt"), encoding="utf-8") as f, \
            open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as g:
        for line in f:
            parts = line.rstrip("\n").split(" ")
            if (len(parts) == 2 and not line.startswith("#")
                    and (parts[0] in gone or parts[1] in gone or parts[0] + parts[1] in gone)):
                continue
            g.write(line)


if __name__ == "__main__":
    main()
