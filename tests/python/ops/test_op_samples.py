"""Every core ATen op, on PyTorch's own OpInfo samples, in libember vs eager.

One test per core op (see op_harness.py for how samples are found, batched
and compared; ops no OpInfo reaches use manual_samples.py). All samples run
once, in shared programs, when the first test asks for them; each test then
reports its op. A test is skipped when the runtime has no kernel for the op,
when it has neither OpInfo nor hand-written samples, or when none of its
samples can be exported; it fails when any sample's output
differs from eager PyTorch or the runtime returns an error.

Environment:
    EMBER_OPS_FULL=1      every sample of every OpInfo (default: a capped set)
    EMBER_OPS_CAP=N       samples per (op, dtype) in the default mode (3)
    EMBER_OP_SAMPLES=DIR  where programs, inputs, expected outputs and
                          results.json go (build/op-samples); the C test
                          tests/c/kernels/test_op_samples.c runs them again,
                          and scripts/op_coverage.py reports results.json
    EMBER_OPS_PROGRESS=F  append progress lines to file F (pytest hides the terminal)
    EMBER_OPS_SHARD=k/n   run only the ops i with i % n == k (the full mode in
                          n processes or machines, each with its own
                          EMBER_OP_SAMPLES; scripts/op_coverage.py --results
                          takes all their results.json files)
"""

from __future__ import annotations

from typing import Dict

import pytest
import torch

import op_harness as H
from ember import ops_coverage

CFG = H.Config.from_env()
ENTRIES = ops_coverage.core_ops()

# Every test of this module reads one shared run (the module fixture below),
# which writes EMBER_OP_SAMPLES: under pytest-xdist they all go to one worker
# (`make test` runs `--dist loadfile`: a module's tests stay on one worker;
# the group below says the same to `--dist loadgroup`), so that the run
# happens once and one process writes.
pytestmark = pytest.mark.xdist_group("op_samples")

# Known gaps: (op, dtype) pairs the runtime refuses on purpose, with why. A
# sample of such a pair must fail with a clean NOT_SUPPORTED error (anything
# else still fails the test); the test then reports it as an expected failure,
# and docs/ops.md still counts the sample as failed.
KNOWN_GAPS = {
    ("aten.upsample_bilinear2d.vec", torch.uint8):
        "PyTorch's uint8 bilinear path rounds through its own fixed-point weights; "
        "the portable kernel refuses uint8 rather than give other bytes",
}


@pytest.fixture(scope="module")
def outcomes() -> Dict[str, H.OpOutcome]:
    return H.run_all(ENTRIES, CFG)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_core_op(entry: ops_coverage.OpEntry, outcomes: Dict[str, H.OpOutcome]) -> None:
    o = outcomes.get(entry.name)
    if o is None:
        pytest.skip(f"in another shard than EMBER_OPS_SHARD={CFG.shard[0]}/{CFG.shard[1]}")
    if o.status == "symbolic":
        if not entry.implemented:
            pytest.skip(f"no kernel {', '.join(entry.missing)}")
        return
    if o.status == "no-kernel":
        pytest.skip(o.note or f"no kernel {', '.join(entry.missing)}")
    if o.status == "no-opinfo":
        pytest.skip(o.note)
    samples = o.samples
    failed = [s for s in samples if s.status == "fail"]
    known = [s for s in failed if (entry.name, s.dtype) in KNOWN_GAPS
             and "not supported" in s.reason]
    known_ids = {id(s) for s in known}
    failures = [f"{s.source}: {s.reason}" for s in failed if id(s) not in known_ids]
    assert not failures, (f"{len(failures)} of {len(samples)} samples differ from eager:\n  "
                          + "\n  ".join(failures[:10]))
    if known:
        pytest.xfail("; ".join(sorted({KNOWN_GAPS[(entry.name, s.dtype)] for s in known})))
    if not any(s.status == "pass" for s in samples):
        reasons = sorted({s.reason for s in samples})
        pytest.skip("no sample ran: " + ("; ".join(reasons[:3]) or "none captured"))
