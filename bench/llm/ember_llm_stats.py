"""What `ember-llm --stats` prints to stderr, as numbers.

The lines it reads (tools/ember_llm.c, print_stats):

    load:                90.29 ms
    prompt tokens:       64
    prefill:             219.25 ms (291.9 tok/s)
    time to first token: 219.25 ms
    load + first token:  309.54 ms
    generated tokens:    32
    decode:              852.72 ms for 31 steps (36.4 tok/s)
    vulkan device:       llvmpipe (LLVM 15.0.6, 256 bits) (float16 storage yes, weights 7.2 MiB)
    peak RSS:            87.5 MiB

The vulkan device line is there only for programs with a VulkanBackend
delegate; the others are always printed.
"""

from __future__ import annotations

import re
from typing import Any, Dict

# key: (pattern, converter); every one must match
_REQUIRED = {
    "load_ms": (r"^load:\s+([\d.]+) ms", float),
    "prompt_tokens": (r"^prompt tokens:\s+(\d+)", int),
    "prefill_ms": (r"^prefill:\s+([\d.]+) ms", float),
    "prefill_tps": (r"^prefill:.*\(([\d.]+) tok/s\)", float),
    "ttft_ms": (r"^time to first token:\s+([\d.]+) ms", float),
    "generated_tokens": (r"^generated tokens:\s+(\d+)", int),
    "decode_ms": (r"^decode:\s+([\d.]+) ms", float),
    "decode_steps": (r"^decode:.* for (\d+) steps", int),
    "decode_tps": (r"^decode:.*\(([\d.]+) tok/s\)", float),
    "peak_rss_mib": (r"^peak RSS:\s+([\d.]+) MiB", float),
}
_VULKAN = re.compile(r"^vulkan device:\s+(.*) \(float16 storage (yes|no), weights ([\d.]+) MiB\)$",
                     re.M)


def parse_stats(text: str) -> Dict[str, Any]:
    """The numbers of one `ember-llm --stats` run (its stderr; other lines
    are ignored). Keys: those of _REQUIRED, "load_ttft_ms" (load + first
    token: None when the run printed no such line), and where the program
    ran on VulkanBackend "vulkan_device" (the device's name),
    "vulkan_float16" (bool) and "vulkan_weights_mib".

    Raises ValueError naming the first line that is missing."""
    out: Dict[str, Any] = {}
    for key, (pattern, conv) in _REQUIRED.items():
        m = re.search(pattern, text, re.M)
        if not m:
            raise ValueError(f"no {pattern!r} line in ember-llm's stats:\n{text[-2000:]}")
        out[key] = conv(m.group(1))
    m = re.search(r"^load \+ first token:\s+([\d.]+) ms", text, re.M)
    out["load_ttft_ms"] = float(m.group(1)) if m else None
    m = _VULKAN.search(text)
    if m:
        out["vulkan_device"] = m.group(1)
        out["vulkan_float16"] = m.group(2) == "yes"
        out["vulkan_weights_mib"] = float(m.group(3))
    return out
