"""Training in the twin: tokens/s, step time and MFU of the jobs whose
workload declares a model (SimJob.train), with the device time that failures
made them recompute counted as paid.

The twin does not run a job's arithmetic; a throughput model stands in for
it. A job of G GPUs of one type, with peak P FLOP/s each (tide.model.gpu_peaks,
or the cluster's gpu_peak_tflops) and steady MFU m (its own `mfu`, else
`--mfu`, else its GPU type's in STEADY_MFU), trains at G x P x m / F tokens
per second, F its FLOPs per token; a step of B tokens takes B / that. The
engine keeps, per training job, the GPU-seconds it held over all its attempts
(paid) and the seconds of work that survived (done once: work lost to a
failure and redone counts once, the first run of it is paid and lost).
Figures then come from tide.efficiency, the rules the live server uses, so a
figure means the same in both. docs/twin-metrics.md defines them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tide.efficiency import Measured, Progress, bucket, group_figures
from tide.model.gpu_peaks import gpu_key, peak_tflops
from tide.sim.workload.base import SimJob, TrainModel

# Steady MFU of dense-transformer training, by GPU type: planning figures from
# published runs (Megatron-LM and GPT-3-class on A100: 0.4-0.52; Llama 3 on
# H100 in BF16: 0.38-0.43), to be replaced by a site's own measurements
# (`tide sim compare --mfu`, or a job's `mfu` field).
STEADY_MFU: dict[str, float] = {
    "v100": 0.30,
    "a100": 0.45,
    "a800": 0.45,
    "h100": 0.40,
    "h800": 0.40,
    "h200": 0.40,
    "gh200": 0.40,
    "b200": 0.35,
    "mi300x": 0.30,
}
DEFAULT_MFU = 0.35  # GPU types the table does not list


@dataclass(frozen=True)
class Throughput:
    """The per-GPU-type throughput model: peaks and steady MFU, each
    overridable (the cluster's gpu_peak_tflops; one MFU for every type)."""

    mfu: float | None = None
    peaks: Mapping[str, float] | None = None

    def peak_tflops(self, gpu_type: str) -> float | None:
        return peak_tflops(gpu_type, self.peaks)

    def steady_mfu(self, gpu_type: str, model: TrainModel) -> float:
        if model.mfu is not None:
            return model.mfu
        if self.mfu is not None:
            return self.mfu
        key, best = gpu_key(gpu_type), ""
        for k in STEADY_MFU:  # the longest key that starts the name, as peaks match
            if key.startswith(k) and len(k) > len(best):
                best = k
        return STEADY_MFU[best] if best else DEFAULT_MFU

    def tokens_per_s(self, model: TrainModel, gpus: int, gpu_type: str) -> float | None:
        peak = self.peak_tflops(gpu_type)
        if peak is None or gpus <= 0:
            return None
        return gpus * peak * 1e12 * self.steady_mfu(gpu_type, model) / model.flops_per_token


@dataclass(slots=True)
class Ledger:
    """One training job's device time, written by the engine as attempts end."""

    account: str
    model: TrainModel
    gpus: int = 0
    gpu_type: str = ""
    paid_gpu_seconds: float = 0.0  # GPUs held x time, every attempt, to its end
    work_seconds: float = 0.0  # work that survived (each piece once)
    lost_gpu_seconds: float = 0.0  # work thrown away by failures and preemption


def progress(model: TrainModel, led: Ledger, rate: float) -> Progress:
    """The job as if it had reported every step: `rate` tokens/s over its
    surviving work, each step taking tokens_per_step / rate seconds."""
    tokens = rate * led.work_seconds
    p = Progress(flops_per_token=model.flops_per_token, tokens=tokens, useful_tokens=tokens,
                 measured_tokens=tokens, step_seconds=led.work_seconds)  # fmt: skip
    if model.tokens_per_step and tokens > 0:
        steps = tokens / model.tokens_per_step
        p.steps = round(steps)
        p.hist = {bucket(model.tokens_per_step / rate): steps}
    return p


def figures(jobs: Iterable[Ledger], tp: Throughput) -> dict[str, Any] | None:
    """{"all": figures, "accounts": {account: figures}} over the training
    jobs; None when there are none (or none on a GPU of known peak). Figures are
    tide.efficiency's (tokens, tokens_per_s steady, step_p50, step_p95, mfu,
    mfu_effective, steps) plus `jobs`, `tokens_per_s_with_recovery` (useful
    tokens per second of job time held), `paid_gpu_hours`,
    `recompute_gpu_hours` and `recompute_share` (of the paid GPU-time)."""
    groups: dict[str, list[tuple[Measured, Ledger]]] = defaultdict(list)
    for led in jobs:
        rate = tp.tokens_per_s(led.model, led.gpus, led.gpu_type)
        if rate is None:  # a GPU of unknown peak: no throughput to model
            continue
        m = Measured(progress(led.model, led, rate), led.gpus, tp.peak_tflops(led.gpu_type),
                     led.paid_gpu_seconds)  # fmt: skip
        groups[led.account].append((m, led))
    if not groups:
        return None
    every = [x for items in groups.values() for x in items]
    return {
        "all": _group(every),
        "accounts": {a: _group(items) for a, items in sorted(groups.items())},
    }


def _group(items: list[tuple[Measured, Ledger]]) -> dict[str, Any]:
    out = group_figures(m for m, _ in items).as_dict()
    paid = sum(led.paid_gpu_seconds for _, led in items)
    held = sum(led.paid_gpu_seconds / led.gpus for _, led in items if led.gpus)
    lost = sum(led.lost_gpu_seconds for _, led in items)
    out.update(
        jobs=len(items),
        tokens_per_s_with_recovery=out["tokens"] / held if held > 0 else None,
        paid_gpu_hours=paid / 3600,
        recompute_gpu_hours=lost / 3600,
        recompute_share=lost / paid if paid > 0 else None,
    )
    return out


def models_of(jobs: Iterable[SimJob]) -> dict[int, tuple[TrainModel, float]]:
    """Job id -> (model, duration) of the training jobs of a workload."""
    return {j.id: (j.train, j.duration) for j in jobs if j.train is not None}
