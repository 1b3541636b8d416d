"""Profiles the committed nanoGPT checkpoint on ember's runtime and draws the
Inspector's plots: the seeds' profiling flow (ETRecord at export, ETDump at
run time, the Inspector over both) with ember's imports.

usage: python examples/nanogpt/inspect_nanogpt.py [--backend xnnpack|portable]
                                                 [--tokens N] [--runs N] [--out DIR]
                                                 [--runner python|ember-llm]

--runner python (default) runs the program with ember's Python runtime on a
fixed prompt of N tokens, RUNS times, recording every instruction's output
(so the numeric comparison with eager runs too); --runner ember-llm
generates RUNS tokens with `ember-llm --etdump` from the example's
tokenizer, tracing the prompt's prefill and every decode step.

Writes DIR/nanogpt_<backend>_{op_times,timeline,memory_plan}.png (default
DIR: docs/images/inspector), prints the Inspector's table, the slowest
operators with their source lines, and the first instructions whose outputs
differ from eager PyTorch.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Optional

import torch
from torch.export import Dim, export
from torch.nn.attention import SDPBackend, sdpa_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from ember import to_edge, to_edge_transform_and_lower  # noqa: E402
from ember.devtools import Inspector, generate_etrecord  # noqa: E402
from ember.devtools.plots import write_plots  # noqa: E402
from ember.runtime import EventTracerConfig, Runtime  # noqa: E402
from model import GPT  # noqa: E402


def export_program(model: GPT, tokens: int, backend: str, workdir: str):
    example = (torch.randint(0, 100, (1, tokens), dtype=torch.long),)
    dyn = ({1: Dim("token_dim", max=model.config.block_size - 1)},)
    with sdpa_kernel([SDPBackend.MATH]), torch.no_grad():
        traced = export(model, example, dynamic_shapes=dyn)
    if backend == "xnnpack":
        from ember.backends.xnnpack import XnnpackPartitioner, get_xnnpack_edge_compile_config
        edge_manager = to_edge_transform_and_lower(
            traced, partitioner=[XnnpackPartitioner()],
            compile_config=get_xnnpack_edge_compile_config())
    else:
        edge_manager = to_edge(traced)
    edge_manager_copy = copy.deepcopy(edge_manager)
    et_program_manager = edge_manager.to_executorch()
    etrecord_path = os.path.join(workdir, "etrecord.bin")
    generate_etrecord(etrecord_path, edge_manager_copy, et_program_manager)
    return et_program_manager.buffer, etrecord_path, edge_manager_copy


def main(argv: Optional[list] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=os.path.join(HERE, "ckpt.pt"))
    ap.add_argument("--backend", choices=["xnnpack", "portable"], default="xnnpack")
    ap.add_argument("--tokens", type=int, default=32, help="prompt length of each execute")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--runner", choices=["python", "ember-llm"], default="python")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "docs", "images",
                                                  "inspector"))
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    model = GPT.from_checkpoint(a.checkpoint).eval()
    with tempfile.TemporaryDirectory(prefix="nanogpt-profile-") as work:
        pte, etrecord, edge = export_program(model, a.tokens, a.backend, work)
        etdump, debug = os.path.join(work, "etdump.etdp"), os.path.join(work, "etdump.debug")
        x = torch.randint(0, model.config.vocab_size, (1, a.tokens), dtype=torch.long)
        if a.runner == "python":
            method = Runtime.get().load_program(pte).load_method(
                "forward", event_tracer=EventTracerConfig(debug_outputs="full"))
            for _ in range(a.runs):
                method.execute([x])
            method.write_etdump(etdump, debug)
        else:
            exe = shutil.which("ember-llm", path=os.path.dirname(sys.executable)) or \
                shutil.which("ember-llm")
            if exe is None:
                sys.exit("ember-llm not found: pip install -e . installs it beside python")
            pte_path = os.path.join(work, "nanogpt.pte")
            with open(pte_path, "wb") as f:
                f.write(pte)
            subprocess.run([exe, "--model", pte_path, "--tokenizer",
                            os.path.join(HERE, "tokenizer"), "--prompt", "It was a truth",
                            "--max-new-tokens", str(a.runs), "--temperature", "0",
                            "--etdump", etdump], check=True, stdout=subprocess.DEVNULL)
            debug = None

        inspector = Inspector(etdump_path=etdump, etrecord=etrecord, debug_buffer_path=debug)
        inspector.print_data_tabular(block="forward")
        print("\nslowest operators:")
        for e in inspector.slowest(5):
            src = e.nodes[-1].source if e.nodes else ""
            print(f"  {e.perf_data.avg:8.3f} ms  {e.name:40s} {src}")
        if debug is not None:
            print("\nfirst instructions that differ from eager PyTorch (relative error > 1e-4):")
            rows = inspector.first_divergences([x], reference=edge, rtol=1e-4)
            for r in rows:
                print(f"  instruction {r['instruction_id']:4d} {r['event_name']:30s} "
                      f"rel {r['rel_err']:.2e}  {r['source']}")
            if not rows:
                print("  none")
        for f in write_plots(inspector, a.out, prefix=f"nanogpt_{a.backend}_"):
            print(f"wrote {os.path.relpath(f)}")


if __name__ == "__main__":
    main()
