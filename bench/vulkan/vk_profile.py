"""GPU time per operator of a Vulkan-delegated LLM program, from the
delegate's timestamp queries: runs `ember-llm --etdump` (one traced run for
the prompt's prefill, one per decode step) and sums the VulkanBackend's
per-node events by operator and shader.

usage: python bench/vulkan/vk_profile.py MODEL.pte [--ember-llm build/ember-llm]
           [--tokenizer examples/nanogpt/tokenizer] [--prompt TEXT] [--tokens N]

Prints, for the prefill and for the mean decode step: each operator (with
the shaders that ran it), its calls, its GPU time and its share of the
GPU time; then the GPU's span of the delegate's runs (the delegate's
"vulkan.gpu" events), the host's submit-and-wait time beside it
("vulkan.submit_wait": from just before vkQueueSubmit to the fence wait's
return; what exceeds the span is submission, scheduling and wake-up), and
the host's time for the whole step.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ember.devtools.etdump_reader import parse_etdump

# The delegate's whole-run events: the GPU's span of a run and the host's
# submit-and-wait around it.
RUN_GPU, RUN_WAIT = "vulkan.gpu", "vulkan.submit_wait"


def is_delegate_node(e: Any) -> bool:
    """Whether a profile event is one of a delegate's per-node events (the
    VulkanBackend's carry GPU timestamps) rather than the runtime's own or
    a whole-run event."""
    if e.name in (RUN_GPU, RUN_WAIT):
        return False
    return not (e.delegate_debug_id_int < 0 and e.delegate_debug_id_str is None)


def run_spans_us(runs: Sequence[Any]) -> Tuple[float, float]:
    """(GPU span us, host submit-and-wait us) per run, averaged over runs."""
    whole = {RUN_GPU: 0, RUN_WAIT: 0}
    for run in runs:
        for e in run.profile_events:
            if e.name in whole:
                whole[e.name] += e.end_time - e.start_time
    n = max(len(runs), 1)
    return whole[RUN_GPU] / n / 1e3, whole[RUN_WAIT] / n / 1e3


def step_times_us(runs: Sequence[Any]) -> Tuple[float, float]:
    """(GPU us, host us) per run, averaged over runs: the sum of the
    delegate's per-node GPU times, and Method::execute's wall time."""
    gpu = host = 0
    for run in runs:
        for e in run.profile_events:
            if e.name == "Method::execute":
                host += e.end_time - e.start_time
            elif is_delegate_node(e):
                gpu += e.end_time - e.start_time
    n = max(len(runs), 1)
    return gpu / n / 1e3, host / n / 1e3


def traced_runs(ember_llm: str, model: str, tokens: int, prompt: Optional[str] = None,
                tokenizer: Optional[str] = None, prompt_ids: Optional[Sequence[int]] = None,
                threads: int = 1, env: Optional[Dict[str, str]] = None) -> List[Any]:
    """The ETDump runs of one greedy `ember-llm --etdump` generation: the
    prompt's prefill first, then one run per decode step. The prompt is
    text (with tokenizer) or token ids."""
    cmd = [ember_llm, "--model", model, "--max-new-tokens", str(tokens), "--temperature", "0",
           "--threads", str(threads)]
    if prompt_ids is not None:
        cmd += ["--prompt-ids", ",".join(str(t) for t in prompt_ids)]
    else:
        cmd += ["--tokenizer", str(tokenizer), "--prompt", str(prompt)]
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "run.etdump")
        proc = subprocess.run(cmd + ["--etdump", dump], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"ember-llm --etdump failed: {proc.stderr.strip()[-2000:]}")
        with open(dump, "rb") as f:
            return list(parse_etdump(f.read()).run_data)


def table(title: str, runs: list) -> None:
    per_op: dict = collections.defaultdict(lambda: [0, 0])
    for run in runs:
        for e in run.profile_events:
            if e.name == "Method::execute" or not is_delegate_node(e):
                continue
            key = f"{e.name} [{e.delegate_debug_metadata.decode()}]"
            per_op[key][0] += 1
            per_op[key][1] += e.end_time - e.start_time
    n = max(len(runs), 1)
    total = sum(v[1] for v in per_op.values())
    _, host_us = step_times_us(runs)
    print(f"\n{title} ({len(runs)} run{'s' if len(runs) != 1 else ''}, per run)")
    print(f"{'operator [shaders]':58} {'calls':>6} {'GPU us':>9} {'share':>6}")
    for key, (calls, ns) in sorted(per_op.items(), key=lambda kv: -kv[1][1]):
        print(f"{key:58} {calls / n:6.0f} {ns / n / 1e3:9.1f} {100 * ns / max(total, 1):5.1f}%")
    print(f"{'GPU total (sum of the operators)':58} {'':6} {total / n / 1e3:9.1f}")
    gpu, wait = run_spans_us(runs)
    print(f"{'GPU span (vulkan.gpu)':58} {'':6} {gpu:9.1f}")
    print(f"{'host submit+wait (vulkan.submit_wait)':58} {'':6} {wait:9.1f}"
          f"   {wait - gpu:+.1f} us beyond the GPU span")
    print(f"{'host (Method::execute)':58} {'':6} {host_us:9.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--ember-llm", default="build/ember-llm")
    ap.add_argument("--tokenizer", default="examples/nanogpt/tokenizer")
    ap.add_argument("--prompt", default="It is a truth universally acknowledged")
    ap.add_argument("--tokens", type=int, default=32)
    args = ap.parse_args()
    runs = traced_runs(args.ember_llm, args.model, args.tokens, prompt=args.prompt,
                       tokenizer=args.tokenizer)
    if not runs:
        print("no traced runs", file=sys.stderr)
        return 1
    table("prefill", runs[:1])
    if len(runs) > 1:
        table("decode step", runs[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
