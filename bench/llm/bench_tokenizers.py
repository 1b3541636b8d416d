"""Tokenizer speed: ember's C tokenizers against the reference libraries on
the same text, in the same run.

    .venv/bin/python bench/llm/bench_tokenizers.py     # table into bench/RESULTS.md

The tokenizers are trained here from committed text (no downloads), in the
configurations of tests/python/test_llm_tokenizers.py: Llama 3 and Qwen 2
style tokenizer.json (Split + byte-level BPE), a Llama 2 style one (byte
fallback), a tiktoken rank file with Llama 3's pattern, and SentencePiece
BPE and Unigram models. The text is the README, the docs and the test
corpus, repeated to about 2 MB, encoded as one string; each figure is the
best of several runs, one thread (the `tokenizers` library's parallelism is
off). ember is called through its Python binding (ember.llm.runtime); the
call overhead is one call per run.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "python"))
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import machine  # noqa: E402  (bench/machine.py)

SECTION = "## Tokenizers: encode speed, one thread"


def best_mbs(fn: Callable[[], object], nbytes: int, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return nbytes / best / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--megabytes", type=float, default=2.0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"), help="'' to skip")
    args = ap.parse_args()

    import sentencepiece as spm
    import tiktoken

    import test_llm_tokenizers as t  # the trained configurations
    from ember.llm.runtime import Tokenizer

    base = "\n".join(t.training_text())
    text = base * max(1, int(args.megabytes * 1e6 / len(base.encode())))
    nbytes = len(text.encode())
    rows: List[List[str]] = []
    tmp = Path(tempfile.mkdtemp(prefix="bench_tok_"))

    def row(name: str, ours: Tokenizer, theirs: Callable[[], object], lib: str, vocab: int) -> None:
        assert ours.encode(base[:20000]) is not None
        e = best_mbs(lambda: ours.encode(text), nbytes, args.runs)
        r = best_mbs(theirs, nbytes, args.runs)
        rows.append([name, str(vocab), f"{e:.1f}", f"{r:.1f}", lib, f"{e / r:.2f}x"])
        print(f"{name:28s} ember {e:7.1f} MB/s   {lib} {r:7.1f} MB/s", flush=True)

    for fam in ("llama3", "qwen2", "llama2"):
        hf = t.FAMILIES[fam]()
        path = tmp / f"{fam}.json"
        hf.save(str(path))
        row(f"tokenizer.json ({fam})", Tokenizer(str(path)),
            lambda hf=hf: hf.encode(text, add_special_tokens=False), "tokenizers",
            hf.get_vocab_size())

    hf = t.make_llama3()
    vocab = hf.get_vocab(with_added_tokens=False)
    ordered = sorted((i, s) for s, i in vocab.items() if s not in t.SPECIALS)
    ranks = {bytes(t._bytelevel_bytes(s)): r for r, (_, s) in enumerate(ordered)}
    rank_file = tmp / "tokenizer.model"
    rank_file.write_text("".join(f"{base64.b64encode(k).decode()} {r}\n" for k, r in ranks.items()))
    enc = tiktoken.Encoding(name="bench", pat_str=t.LLAMA3_PATTERN, mergeable_ranks=ranks,
                            special_tokens={s: len(ranks) + i for i, s in enumerate(t.LLAMA3_SPECIALS)})
    row("tiktoken (Llama 3 pattern)", Tokenizer(str(rank_file)),
        lambda: enc.encode(text, allowed_special="all"), "tiktoken", enc.n_vocab)

    corpus = tmp / "sp_train.txt"
    corpus.write_text("\n".join(t.training_text()))
    for kind, extra in (("bpe", dict(byte_fallback=True, normalization_rule_name="identity")),
                        ("unigram", {})):
        prefix = tmp / f"sp_{kind}"
        spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(prefix), vocab_size=2000,
                                       model_type=kind, minloglevel=2, **extra)
        sp = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
        row(f"SentencePiece {kind}", Tokenizer(f"{prefix}.model"), lambda sp=sp: sp.encode(text),
            "sentencepiece", sp.get_piece_size())

    head = ["tokenizer", "vocab", "ember MB/s", "reference MB/s", "reference", "ember / reference"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    body = "\n".join([
        SECTION, "",
        f"{machine.machine_line()}. {nbytes / 1e6:.1f} MB of committed text (README, docs, the "
        f"test corpus) encoded as one string, best of {args.runs}; tokenizers trained here from "
        "that text (small vocabularies). Identical ids are checked by "
        "tests/python/test_llm_tokenizers.py, not here.", "",
        *lines, "",
        f"Command: `{machine.quote_command(sys.argv, '.venv/bin/python bench/llm/bench_tokenizers.py')}`",
        ""])
    print(body)
    if args.out:
        machine.write_section(Path(args.out), SECTION, body)


if __name__ == "__main__":
    main()
