"""What every benchmark says about the machine it ran on, and the roofline.

The roofline is measured by ``bench/roofline/roofline.c`` (built here with the
system C compiler into the bench build directory, rebuilt when the source is
newer): read bandwidth and fp32 FMA peak on 1 and 2 threads. Each benchmark
measures it in its own run, so its ceilings and its rows share the machine's
state, and prints :func:`roofline_line` beside its table.

Also: :func:`write_section` replaces one ``## `` section of bench/RESULTS.md,
keeping the others.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set

ROOT = Path(__file__).resolve().parents[1]
ROOFLINE_SRC = ROOT / "bench" / "roofline" / "roofline.c"
BENCH_BUILD = ROOT / "build-bench"

# Flags worth naming in a table (those that decide which kernels run).
NOTABLE_FLAGS = ["avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                 "avx512_bf16", "avx_vnni", "amx_tile", "neon", "asimd", "sve"]


def drop_page_cache() -> bool:
    """Drops the page cache (root only): the next load reads its files from disk."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def cpu_count_usable() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (else what platform knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def all_cpu_flags() -> Set[str]:
    """Every flag /proc/cpuinfo reports for the first CPU (empty if unreadable)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_flags() -> List[str]:
    """The notable SIMD flags this CPU reports, in NOTABLE_FLAGS order."""
    have = all_cpu_flags()
    return [f for f in NOTABLE_FLAGS if f in have]


def machine_line() -> str:
    """'AMD EPYC, x86_64, 2 CPUs, flags avx2 fma f16c (no AVX-512)'."""
    flags = cpu_flags()
    x86 = platform.machine() in ("x86_64", "AMD64", "i686")
    no512 = " (no AVX-512)" if x86 and "avx512f" not in flags else ""
    return (f"{cpu_name()}, {platform.machine()}, {os.cpu_count()} CPUs, "
            f"flags {' '.join(flags) or 'none notable'}{no512}")


def build_probe(build_dir: Path = BENCH_BUILD) -> Path:
    """Compiles the roofline probe (when missing or older than its source)."""
    exe = build_dir / "roofline"
    if exe.exists() and exe.stat().st_mtime >= ROOFLINE_SRC.stat().st_mtime:
        return exe
    build_dir.mkdir(parents=True, exist_ok=True)
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "clang"
    cmd = [cc, "-O2", "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-pthread",
           str(ROOFLINE_SRC), "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return exe


def last_level_cache_bytes() -> Optional[int]:
    """The size of CPU 0's largest (last-level) cache from sysfs, or None."""
    best = None
    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            text = (d / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            size = int(digits) * scale
            best = size if best is None or size > best else best
    return best


def measure_roofline(threads: Sequence[int] = (1, 2), quick: bool = False,
                     build_dir: Path = BENCH_BUILD, mib: Optional[int] = None) -> Dict[str, Any]:
    """Runs the probe; returns its JSON with keys made ints and the machine added:
    {"isa", "read_gbs": {1: GB/s, 2: ...}, "fma_gflops": {1: ...}, "cpu", "flags", ...}.
    quick: a 256 MiB buffer and 3 passes (a few seconds) instead of 512 MiB
    (larger than most machines' last-level cache, so the figure is memory's)
    and 20. mib: another buffer size (a model's bytes per token, to see what
    a working set of that size streams at when the cache holds part of it).
    Many short passes, best kept: on a shared machine some of them run
    uncontended."""
    exe = build_probe(build_dir)
    args = [str(exe), "--threads", ",".join(str(t) for t in threads)]
    size = str(mib) if mib is not None else "256" if quick else "512"
    args += ["--mib", size, "--passes", "3", "--fma-seconds", "0.1"] if quick else \
        ["--mib", size, "--passes", "20", "--fma-seconds", "0.05"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    r["read_gbs"] = {int(k): v for k, v in r["read_gbs"].items()}
    r["fma_gflops"] = {int(k): v for k, v in r["fma_gflops"].items()}
    r["cpu"] = cpu_name()
    r["flags"] = cpu_flags()
    r["machine"] = machine_line()
    return r


def roofline_line(r: Dict[str, Any]) -> str:
    """One line for beside a table: the machine, then the probe's figures."""
    ts = sorted(r["read_gbs"])
    bw = ", ".join(f"{r['read_gbs'][t]:.1f} GB/s on {t} thread{'s' if t > 1 else ''}"
                   for t in ts)
    fl = ", ".join(f"{r['fma_gflops'][t]:.0f} GFLOP/s on {t} thread{'s' if t > 1 else ''}"
                   for t in ts)
    mib = r["buffer_bytes"] >> 20
    return (f"Machine: {r['machine']}. Roofline measured in the same run "
            f"(`bench/roofline/roofline.c`): read bandwidth {bw} ({mib} MiB buffer, "
            f"best of {r['passes']}); fp32 FMA peak ({r['isa']}) {fl}.")


def write_section(path: Path, section: str, body: str, first: bool = False) -> None:
    """Replaces the ``section`` heading's part of the results file with body
    (which starts with that heading), or adds it (at the end, or before the
    other sections if ``first``); other sections stay."""
    path = Path(path)
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    start = old.find(section + "\n")
    if start < 0 and first and "\n## " in old:
        at = old.index("\n## ") + 1
        new = old[:at] + body.rstrip("\n") + "\n\n" + old[at:]
    elif start < 0:
        new = old.rstrip("\n") + "\n\n" + body
    else:
        nxt = old.find("\n## ", start + len(section))
        new = old[:start] + body.rstrip("\n") + "\n" + (old[nxt:] if nxt >= 0 else "")
    path.write_text(new.rstrip("\n") + "\n")


def quote_command(argv: Sequence[str], default: Optional[str] = None) -> str:
    """The command that produced a table: ``default`` (a make target) when the
    script ran with no arguments, else the script line as typed."""
    if default and not argv[1:]:
        return default
    rel = os.path.relpath(argv[0], ROOT) if os.path.isabs(argv[0]) else argv[0]
    return " ".join([".venv/bin/python", rel] + list(argv[1:]))
