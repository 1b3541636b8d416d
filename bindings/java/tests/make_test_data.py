"""Writes what the Java tests read, into OUT_DIR:

  mixed.pte              a small model exported with ember: forward(x float32 [2, 8],
                         ids int64 [3]) -> (relu(linear(x)) float32 [2, 4],
                         embedding(ids) * 2 float32 [3, 5], ids * 3 + 1 int64 [3])
  mixed/in0.npy, in1.npy its inputs
  mixed/out0..2.npy      the outputs of PyTorch eager on them
  nanogpt_kv.pte         the committed nanoGPT checkpoint with a KV cache, delegated to
                         XNNPACK (examples/nanogpt/export.py --kind kv --backend xnnpack)

usage: python bindings/java/tests/make_test_data.py OUT_DIR
"""

from __future__ import annotations

import os
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class Mixed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.emb = torch.nn.Embedding(10, 5)

    def forward(self, x: torch.Tensor, ids: torch.Tensor):
        return torch.relu(self.fc(x)), self.emb(ids) * 2.0, ids * 3 + 1


def write_mixed(out_dir: str) -> None:
    from ember import ExecutorchBackendConfig, to_edge

    torch.manual_seed(7)
    model = Mixed().eval()
    x = torch.randn(2, 8)
    ids = torch.tensor([4, 0, 9], dtype=torch.int64)
    ep = torch.export.export(model, (x, ids))
    prog = to_edge(ep).to_executorch(ExecutorchBackendConfig())
    with open(os.path.join(out_dir, "mixed.pte"), "wb") as f:
        prog.write_to_file(f)
    case = os.path.join(out_dir, "mixed")
    os.makedirs(case, exist_ok=True)
    with torch.no_grad():
        outs = model(x, ids)
    for i, t in enumerate((x, ids)):
        np.save(os.path.join(case, f"in{i}.npy"), t.numpy())
    for i, t in enumerate(outs):
        np.save(os.path.join(case, f"out{i}.npy"), t.numpy())


def write_nanogpt(out_dir: str) -> None:
    sys.path.insert(0, os.path.join(ROOT, "examples", "nanogpt"))
    import export  # examples/nanogpt/export.py

    export.main(["--kind", "kv", "--backend", "xnnpack",
                 "--out", os.path.join(out_dir, "nanogpt_kv.pte")])


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    write_mixed(out_dir)
    write_nanogpt(out_dir)


if __name__ == "__main__":
    main()
