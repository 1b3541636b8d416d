"""Builds the training data for the nanoGPT example from Jane Austen's six novels.

The novels come from Debian's ``r-cran-janeaustenr`` package (MIT-licensed R
package; the texts are Project Gutenberg's public-domain editions). The R
package stores each novel as a character vector in R's lazy-load database
(``data/Rdata.rdx`` index + ``data/Rdata.rdb`` objects); this script reads
that format directly, so R itself is not needed. ``scripts/bootstrap.sh
--train`` fetches and unpacks the package into ``examples/nanogpt/data/``.

Writes:
  tokenizer/vocab.json, tokenizer/merges.txt   byte-level BPE in GPT-2's format
                                               (``<|endoftext|>`` is the last id)
  data/train.bin, data/val.bin                 token ids, uint16, novels separated
                                               by ``<|endoftext|>``
  data/meta.json                               vocabulary size, counts, end-of-text id

usage: python examples/nanogpt/prepare.py [--vocab-size 4096] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import struct
import sys
import zlib
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(HERE, "data")
TOKENIZER_DIR = os.path.join(HERE, "tokenizer")
EOT = "<|endoftext|>"
PACKAGE_SUBDIR = os.path.join("usr", "lib", "R", "site-library", "janeaustenr")
CORPUS_CANDIDATES = (
    os.path.join(DATA_DIR, "janeaustenr", PACKAGE_SUBDIR),  # unpacked by bootstrap.sh --train
    os.path.join(os.sep, PACKAGE_SUBDIR),                    # apt-get install r-cran-janeaustenr
)
NOVELS = ("prideprejudice", "sensesensibility", "emma", "mansfieldpark", "northangerabbey", "persuasion")


# ---- R's serialization format (XDR, versions 2 and 3), the subset these files use

class _RVector(list):
    """An R vector: its elements, plus its attributes (e.g. ``names``)."""

    attrs: Dict[str, Any] = {}


class _RReader:
    _NIL_LIKE = {254, 253, 252, 251, 250, 242, 241}  # NULL, environments, unbound/missing markers

    def __init__(self, data: bytes) -> None:
        if data[:2] != b"X\n":
            raise ValueError("not an R XDR serialization")
        self.data, self.pos, self.refs = data, 2, []  # refs: symbols, referenced back by index
        version = self._int()
        self._int(), self._int()  # writer and minimal reader R versions
        if version == 3:
            n = self._int()
            self.pos += n  # native encoding name
        elif version != 2:
            raise ValueError(f"unsupported R serialization version {version}")

    def _int(self) -> int:
        (v,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return v

    def _length(self) -> int:
        n = self._int()
        if n == -1:  # long vector: two 32-bit halves
            n = (self._int() << 32) + self._int()
        return n

    def read(self) -> Any:
        flags = self._int()
        kind = flags & 0xFF
        has_attr, has_tag = bool(flags & (1 << 9)), bool(flags & (1 << 10))
        if kind in self._NIL_LIKE:
            return None
        if kind == 255:  # reference to an earlier symbol
            index = flags >> 8 or self._int()
            return self.refs[index - 1]
        if kind == 1:  # symbol: its name follows
            sym = ("symbol", self.read())
            self.refs.append(sym)
            return sym
        if kind in (2, 6, 239, 240):  # pairlist / call: (tag, value) cells
            if has_attr:
                self.read()
            tag = self.read() if has_tag else None
            cells = [(tag[1] if tag else None, self.read())]
            rest = self.read()
            return cells + (rest or [])
        if kind == 9:  # one string
            n = self._int()
            if n == -1:
                return None  # NA
            raw = self.data[self.pos:self.pos + n]
            self.pos += n
            latin1 = (flags >> 12) & 4  # the string's encoding bits sit above the flags
            return raw.decode("latin-1" if latin1 else "utf-8", errors="replace")
        if kind in (10, 13, 14, 16, 19, 20):  # logical, integer, double, string, list vectors
            n = self._length()
            if kind in (10, 13):
                items: List[Any] = list(struct.unpack_from(f">{n}i", self.data, self.pos))
                self.pos += 4 * n
            elif kind == 14:
                items = list(struct.unpack_from(f">{n}d", self.data, self.pos))
                self.pos += 8 * n
            else:
                items = [self.read() for _ in range(n)]
            vec = _RVector(items)
            vec.attrs = dict(self.read()) if has_attr else {}
            return vec
        raise ValueError(f"R object of type {kind} is not supported by this reader")


def read_lazyload_db(package_dir: str) -> Dict[str, Any]:
    """All objects of an R package's ``data/Rdata`` lazy-load database, by name."""
    base = os.path.join(package_dir, "data", "Rdata")
    with gzip.open(base + ".rdx", "rb") as f:
        index = _RReader(f.read()).read()
    fields = dict(zip(index.attrs["names"], index))
    variables = fields["variables"]
    with open(base + ".rdb", "rb") as f:
        db = f.read()
    out = {}
    for name, (offset, length) in zip(variables.attrs["names"], variables):
        blob = db[offset:offset + length]
        # each object: 4-byte big-endian uncompressed size, then a zlib stream
        out[name] = _RReader(zlib.decompress(blob[4:])).read()
    return out


# ---- corpus ---------------------------------------------------------------

def find_corpus(explicit: Optional[str]) -> str:
    candidates = (explicit,) if explicit else CORPUS_CANDIDATES
    for c in candidates:
        if c and os.path.exists(os.path.join(c, "data", "Rdata.rdb")):
            return c
    raise SystemExit(
        "prepare: Jane Austen corpus not found (Debian package r-cran-janeaustenr). "
        "Run `scripts/bootstrap.sh --train` to fetch and unpack it, "
        "or pass --corpus DIR pointing at the janeaustenr package directory.")


def novel_text(lines: List[Optional[str]]) -> str:
    """Joins a novel's hard-wrapped lines into paragraphs (one per line pair) and
    drops the underscores Project Gutenberg uses for italics."""
    paragraphs, current = [], []
    for line in lines:
        line = (line or "").strip()
        if line:
            current.append(line)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    text = "\n\n".join(re.sub(r"\s+", " ", p) for p in paragraphs)
    return text.replace("_", "")


def load_novels(package_dir: str) -> Dict[str, str]:
    objects = read_lazyload_db(package_dir)
    missing = [n for n in NOVELS if n not in objects]
    if missing:
        raise SystemExit(f"prepare: {package_dir} lacks {missing}")
    return {name: novel_text(objects[name]) for name in NOVELS}


# ---- tokenizer -------------------------------------------------------------

def train_tokenizer(texts: List[str], vocab_size: int, out_dir: str) -> None:
    """Byte-level BPE with GPT-2's pre-tokenization; the 256 byte symbols come
    first and ``<|endoftext|>`` takes the last id, as in GPT-2's files."""
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer(add_prefix_space=False)
    tok.train_from_iterator(texts, vocab_size=vocab_size - 1, min_frequency=2,
                            special_tokens=[], show_progress=True)
    os.makedirs(out_dir, exist_ok=True)
    tok.save_model(out_dir)
    vocab_path = os.path.join(out_dir, "vocab.json")
    with open(vocab_path, encoding="utf-8") as f:
        vocab = json.load(f)
    vocab[EOT] = len(vocab)
    with open(vocab_path, "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, separators=(",", ":"))


def load_tokenizer(tok_dir: str = TOKENIZER_DIR):
    """The saved tokenizer, with ``<|endoftext|>`` as a special token."""
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer(os.path.join(tok_dir, "vocab.json"), os.path.join(tok_dir, "merges.txt"),
                                add_prefix_space=False)
    tok.add_special_tokens([EOT])
    return tok


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab-size", type=int, default=4096, help="BPE vocabulary size, <|endoftext|> included")
    ap.add_argument("--corpus", help="janeaustenr package directory (default: found automatically)")
    ap.add_argument("--val-fraction", type=float, default=0.05, help="tail of each novel held out for validation")
    ap.add_argument("--keep-tokenizer", action="store_true", help="tokenize with the existing tokenizer/ files")
    args = ap.parse_args(argv)
    if not 257 < args.vocab_size <= 65535:
        raise SystemExit("prepare: --vocab-size must be in 258..65535 (token ids are stored as uint16)")

    package_dir = find_corpus(args.corpus)
    novels = load_novels(package_dir)
    total = sum(len(t) for t in novels.values())
    print(f"prepare: {len(novels)} novels, {total / 1e6:.2f} M characters from {package_dir}")

    if not args.keep_tokenizer:
        train_tokenizer(list(novels.values()), args.vocab_size, TOKENIZER_DIR)
    tok = load_tokenizer()
    eot = tok.token_to_id(EOT)

    train: List[int] = []
    val: List[int] = []
    for name, text in novels.items():
        ids = tok.encode(text).ids
        cut = int(len(ids) * (1 - args.val_fraction))
        train += ids[:cut] + [eot]
        val += ids[cut:] + [eot]
        print(f"prepare: {name:17s} {len(ids):8d} tokens")
    import numpy as np

    os.makedirs(DATA_DIR, exist_ok=True)
    np.array(train, dtype=np.uint16).tofile(os.path.join(DATA_DIR, "train.bin"))
    np.array(val, dtype=np.uint16).tofile(os.path.join(DATA_DIR, "val.bin"))
    meta = {"vocab_size": tok.get_vocab_size(), "eot_id": eot, "train_tokens": len(train),
            "val_tokens": len(val), "corpus": "Jane Austen's novels (Debian r-cran-janeaustenr)"}
    with open(os.path.join(DATA_DIR, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"prepare: train {len(train)} tokens, val {len(val)} tokens, vocab {meta['vocab_size']} "
          f"({total / (len(train) + len(val)):.2f} characters per token)")


if __name__ == "__main__":
    sys.exit(main())
