"""Trains the nanoGPT example's small GPT on the CPU.

Reads data/train.bin and data/val.bin (written by prepare.py), trains with
AdamW, a linear warm-up and a cosine learning-rate decay, evaluates on the
validation split every --eval-interval steps and saves a resumable training
checkpoint (model, optimizer, step, random state) to data/train_state.pt. At
the end it writes the model alone, in nanoGPT's checkpoint format, to
ckpt.pt (the committed demo checkpoint) and prints a sample.

The defaults are the committed run: 6 layers, 6 heads, 192-wide embeddings,
128-token context (3.5 M parameters), 1600 steps of 16 sequences (about 3.3
passes over the 0.93 M training tokens), seed 1337, 2 threads. That took 653 s
on two otherwise idle cores of an AVX-512 x86 server, reaching a validation
loss of 4.24; on a busy machine it takes correspondingly longer, and
--stop-after / --resume split it into parts.

usage: python examples/nanogpt/train.py [--resume] [--max-iters N] [--out ckpt.pt]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Dict, Optional

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from model import GPT, GPTConfig  # noqa: E402

DATA_DIR = os.path.join(HERE, "data")
STATE_PATH = os.path.join(DATA_DIR, "train_state.pt")
CKPT_PATH = os.path.join(HERE, "ckpt.pt")


def parse_args(argv: Optional[list] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--resume", action="store_true", help=f"continue from {os.path.relpath(STATE_PATH, HERE)}")
    ap.add_argument("--out", default=CKPT_PATH, help="final checkpoint (nanoGPT format, model only)")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--state", default=STATE_PATH, help="resumable training checkpoint")
    # model
    ap.add_argument("--n-layer", type=int, default=6)
    ap.add_argument("--n-head", type=int, default=6)
    ap.add_argument("--n-embd", type=int, default=192)
    ap.add_argument("--block-size", type=int, default=128)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--bias", type=int, default=1, choices=(0, 1))
    # optimisation
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-iters", type=int, default=1600)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup-iters", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta2", type=float, default=0.99)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    # bookkeeping
    ap.add_argument("--eval-interval", type=int, default=200)
    ap.add_argument("--eval-iters", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--stop-after", type=float, default=0.0,
                    help="save the training state and stop after this many seconds (0: run to --max-iters)")
    return ap.parse_args(argv)


class Batches:
    """Random windows of the token stream, drawn from a seeded generator whose
    state is saved with the training checkpoint (so a resumed run sees the same batches)."""

    def __init__(self, path: str, block_size: int, batch_size: int, seed: int) -> None:
        n = os.path.getsize(path) // 2
        self.data = torch.from_file(path, shared=False, size=n, dtype=torch.uint16)  # (n,) token ids
        if len(self.data) <= block_size + 1:
            raise SystemExit(f"train: {path} has only {len(self.data)} tokens")
        self.block_size, self.batch_size = block_size, batch_size
        self.gen = torch.Generator().manual_seed(seed)

    def get(self):
        ix = torch.randint(len(self.data) - self.block_size - 1, (self.batch_size,), generator=self.gen)
        win = torch.stack([self.data[i:i + self.block_size + 1] for i in ix.tolist()]).long()  # (B, T+1)
        return win[:, :-1].contiguous(), win[:, 1:].contiguous()


def lr_at(it: int, a: argparse.Namespace) -> float:
    if it < a.warmup_iters:
        return a.lr * (it + 1) / (a.warmup_iters + 1)
    if it >= a.max_iters:
        return a.min_lr
    progress = (it - a.warmup_iters) / max(1, a.max_iters - a.warmup_iters)
    return a.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (a.lr - a.min_lr)


@torch.no_grad()
def estimate_loss(model: GPT, splits: Dict[str, Batches], iters: int, device: str) -> Dict[str, float]:
    model.eval()
    out = {}
    for name, batches in splits.items():
        losses = [model(x.to(device), y.to(device))[1].item() for x, y in (batches.get() for _ in range(iters))]
        out[name] = sum(losses) / len(losses)
    model.train()
    return out


def model_checkpoint(model: GPT, model_args: dict, iter_num: int, best_val: float, config: dict) -> dict:
    """nanoGPT's checkpoint layout, without the optimizer. The tied wte/lm_head
    weight shares one storage, which torch.save writes once."""
    return {"model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
            "model_args": model_args, "iter_num": iter_num, "best_val_loss": best_val, "config": config}


def main(argv: Optional[list] = None) -> None:
    a = parse_args(argv)
    from tqdm import tqdm

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(os.path.join(a.data_dir, "meta.json")) as f:
        meta = json.load(f)
    model_args = dict(n_layer=a.n_layer, n_head=a.n_head, n_embd=a.n_embd, block_size=a.block_size,
                      bias=bool(a.bias), vocab_size=int(meta["vocab_size"]), dropout=a.dropout)
    train = Batches(os.path.join(a.data_dir, "train.bin"), a.block_size, a.batch_size, a.seed)
    evals = {"train": Batches(os.path.join(a.data_dir, "train.bin"), a.block_size, a.batch_size, a.seed + 1),
             "val": Batches(os.path.join(a.data_dir, "val.bin"), a.block_size, a.batch_size, a.seed + 2)}

    iter_num, best_val, base_elapsed = 0, float("inf"), 0.0
    state = None
    if a.resume:
        if not os.path.exists(a.state):
            raise SystemExit(f"train: --resume but {a.state} does not exist")
        state = torch.load(a.state, map_location="cpu", weights_only=False)
        if state["model_args"] != model_args:
            raise SystemExit(f"train: {a.state} was made with {state['model_args']}, not {model_args}")
    model = GPT(GPTConfig(**model_args)).to(a.device)
    opt = model.configure_optimizers(a.weight_decay, a.lr, (0.9, a.beta2), a.device)
    if state is not None:
        model.load_nanogpt_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        iter_num, best_val, base_elapsed = state["iter_num"], state["best_val_loss"], state["elapsed"]
        train.gen.set_state(state["rng_train"])
        for k, g in evals.items():
            g.gen.set_state(state[f"rng_eval_{k}"])
        torch.set_rng_state(state["rng_torch"])
        print(f"train: resumed at step {iter_num} (best val loss {best_val:.4f})")
    n_params = model.get_num_params(non_embedding=False)
    print(f"train: {n_params / 1e6:.2f} M parameters, {meta['train_tokens']} training tokens, "
          f"{a.batch_size}x{a.block_size} tokens a step, {a.threads} threads")

    start = time.time()
    resumed_at = iter_num if state is not None else -1

    def run_time() -> float:  # training seconds, earlier runs of a resumed training included
        return base_elapsed + time.time() - start

    def save_state() -> None:
        os.makedirs(os.path.dirname(a.state), exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "model_args": model_args,
                    "iter_num": iter_num, "best_val_loss": best_val, "elapsed": run_time(), "config": vars(a),
                    "rng_train": train.gen.get_state(),
                    **{f"rng_eval_{k}": g.gen.get_state() for k, g in evals.items()},
                    "rng_torch": torch.get_rng_state()}, a.state + ".tmp")
        os.replace(a.state + ".tmp", a.state)

    model.train()
    last_losses = {}
    bar = tqdm(total=a.max_iters, initial=iter_num, desc="train", unit="step", dynamic_ncols=True)
    while iter_num < a.max_iters:
        if iter_num % a.eval_interval == 0 and iter_num != resumed_at:
            last_losses = estimate_loss(model, evals, a.eval_iters, a.device)
            best_val = min(best_val, last_losses["val"])
            tqdm.write(f"step {iter_num:5d}: train loss {last_losses['train']:.4f}, "
                       f"val loss {last_losses['val']:.4f} ({run_time():.0f} s)")
        lr = lr_at(iter_num, a)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = train.get()
        _, loss = model(x.to(a.device), y.to(a.device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        opt.step()
        iter_num += 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{lr:.1e}")
        stop = a.stop_after > 0 and time.time() - start > a.stop_after and iter_num < a.max_iters
        if iter_num % a.eval_interval == 0 or stop:
            save_state()
        if stop:
            bar.close()
            print(f"train: stopped at step {iter_num} after {run_time():.0f} s; continue with --resume")
            return
    bar.close()
    elapsed = run_time()
    last_losses = estimate_loss(model, evals, a.eval_iters, a.device)
    best_val = min(best_val, last_losses["val"])
    print(f"step {iter_num:5d}: train loss {last_losses['train']:.4f}, val loss {last_losses['val']:.4f}; "
          f"{elapsed:.0f} s of training in all")
    save_state()
    config = {k: v for k, v in vars(a).items() if k not in ("out", "data_dir", "state", "resume", "device")}
    config["train_seconds"] = round(elapsed, 1)
    torch.save(model_checkpoint(model, model_args, iter_num, last_losses["val"], config), a.out)
    print(f"train: wrote {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB)")

    try:
        from sample import sample_text
    except ImportError as e:  # the tokenizers package is needed only for the sample
        print(f"train: no sample ({e}); run sample.py")
        return
    model.eval()
    print("--- sample (temperature 0.8, top-k 40) ---")
    print(sample_text(model.cpu(), "It was", 120, temperature=0.8, top_k=40, seed=a.seed))


if __name__ == "__main__":
    main()
