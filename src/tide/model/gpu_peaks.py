"""Peak dense BF16/FP16 tensor throughput of common GPUs, the denominator of MFU.

Figures are the vendors' datasheet numbers per GPU, in TFLOPS, dense (no 2:4
sparsity), BF16 where the GPU has it (else FP16 with FP32 accumulate). MFU
compares a job's model FLOPs with these, so a site whose jobs train in another
precision (FP8, TF32) should override them: `gpu_peak_tflops: {h100: 1979}` in
the cluster file (docs/cluster.md). docs/twin-metrics.md defines MFU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PEAK_TFLOPS: dict[str, float] = {
    "v100": 125.0,  # SXM2, FP16 tensor
    "t4": 65.0,
    "a10": 125.0,
    "a30": 165.0,
    "a40": 149.7,
    "a100": 312.0,
    "a800": 312.0,
    "a6000": 154.8,
    "l4": 121.0,
    "l40": 181.0,
    "l40s": 362.0,
    "h20": 148.0,
    "h100": 989.0,  # SXM
    "h100pcie": 756.0,
    "h100nvl": 835.0,
    "h800": 989.0,
    "h200": 989.0,
    "gh200": 989.0,
    "b100": 1750.0,
    "b200": 2250.0,
    "gb200": 2500.0,
    "rtx3090": 71.0,
    "rtx4090": 165.2,
    "mi250x": 383.0,
    "mi300x": 1307.0,
}

_NOISE = re.compile(r"nvidia|tesla|geforce|amd|instinct|[^a-z0-9]")


def gpu_key(gpu_type: str) -> str:
    """'NVIDIA A100-SXM4-80GB' -> 'a100sxm480gb' (what the table's keys are matched on)."""
    return _NOISE.sub("", gpu_type.lower())


def peak_tflops(gpu_type: str, overrides: Mapping[str, float] | None = None) -> float | None:
    """The peak of one GPU of `gpu_type`, or None when unknown. The longest
    table key that starts the normalised name wins ('h100pcie' over 'h100');
    `overrides` (the cluster's gpu_peak_tflops) are matched the same way first."""
    key = gpu_key(gpu_type)
    if not key:
        return None
    for table in (overrides or {}), PEAK_TFLOPS:
        best = ""
        for k in table:
            nk = gpu_key(k)
            if nk and key.startswith(nk) and len(nk) > len(best):
                best = nk
        if best:
            return float(next(v for k, v in table.items() if gpu_key(k) == best))
    return None
