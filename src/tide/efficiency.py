"""Training efficiency: tokens/s, step time and MFU from a job's progress reports.

A job reports `step N` with the tokens it processed since its previous report
(`tide notify step N --tokens K`, or `tide.job.notify_step(N, tokens=K)`).
`Progress` folds those reports into a few numbers and two bounded summaries
(a log histogram of step times, a thinned series of cumulative tokens), so a
month-long job costs the same as a short one. Everything here is pure: the
server keeps a Progress per job in its store, the twin builds figures from its
own model of the work, and both compute them with the functions below.
Every figure is defined in docs/twin-metrics.md (section "Training efficiency").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

RATIO = 1.02  # histogram buckets: step times within 2 % share one bucket
BUCKET_MIN, BUCKET_MAX = -2000, 2000  # bucket indices a report may send (1e-17 s .. 1e17 s)
SKETCH_MAX = 2048  # buckets one report's step-time sketch may hold
SERIES_MAX = 512  # points of the cumulative-tokens series kept per job
COMMENT_MAX = 1024  # characters of --comment, as we store it whole
_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}
_KEY = re.compile(r"(?:^|[\s,;])(?:tide\.)?(flops_per_token|params)\s*=\s*([^\s,;]*)", re.I)


class EfficiencyError(ValueError):
    """A model declaration that cannot be read; the message names it and the fix."""


def parse_amount(key: str, text: str) -> float:
    """'6.7e9', '7B', '1.3T' -> a positive number (K/M/B/G/T/P are powers of 1000)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*([kmbgtp]?)\s*", text, re.I)
    value = float(m.group(1)) * _SUFFIX[m.group(2).lower()] if m else 0.0
    if not m or not (value > 0 and math.isfinite(value)):
        raise EfficiencyError(
            f"{key}={text!r} is not a positive number; write e.g. {key}=7B or {key}=4.2e10"
        )
    return value


def model_flops_per_token(comment: str) -> float | None:
    """FLOPs per token a job declares in its --comment: `flops_per_token=X`, or
    `params=P` for the usual dense-transformer estimate 6 x P (forward and
    backward; Kaplan et al. 2020). None when it declares neither."""
    found = {m.group(1).lower(): m.group(2) for m in _KEY.finditer(comment)}
    if "flops_per_token" in found:
        return parse_amount("flops_per_token", found["flops_per_token"])
    if "params" in found:
        return 6.0 * parse_amount("params", found["params"])
    return None


def bucket(seconds: float) -> int:
    """The histogram bucket of a step time: bucket k holds [RATIO**k, RATIO**(k+1))."""
    return math.floor(math.log(max(seconds, 1e-6)) / math.log(RATIO))


def bucket_value(index: int) -> float:
    """The geometric middle of a bucket: within 1 % of every time in it."""
    return float(RATIO ** (index + 0.5))


@dataclass
class Progress:
    """What a job's step reports add up to (times are the server's clock)."""

    flops_per_token: float | None = None
    tokens: float = 0.0  # every token reported, work redone after a restart included
    useful_tokens: float = 0.0  # tokens of steps beyond the furthest one reached before
    measured_tokens: float = 0.0  # tokens of the timed intervals (between two reports)
    steps: int = 0  # steps in timed intervals
    step_seconds: float = 0.0  # seconds of timed intervals
    max_step: int | None = None
    last_step: int | None = None
    last_time: float | None = None
    attempt: int = 0  # the job's restart count at the last report
    hist: dict[int, float] = field(default_factory=dict)  # bucket -> steps
    series: list[tuple[float, float, int]] = field(default_factory=list)  # (t, useful cum, step)

    def record(
        self,
        step: int,
        tokens: float,
        now: float,
        attempt: int,
        step_times: Mapping[int, int] | None = None,
    ) -> None:
        """Add one report: step `step` reached at `now`, `tokens` since the last
        report. A report of an earlier step, or from a new attempt (the job was
        requeued), starts a new timed segment: no interval spans a restart.

        `step_times` is the job's own sketch of the steps since its previous
        report (bucket -> steps, as tide.job measures them): when given, it
        goes into the step-time histogram as it is, so percentiles are per
        step; without it the interval between two reports gives its steps
        their mean time (exact when a job reports every step)."""
        same_run = (
            attempt == self.attempt
            and self.last_step is not None
            and self.last_time is not None
            and step > self.last_step
        )
        prev = self.last_step if same_run and self.last_step is not None else step - 1
        reached = self.max_step if self.max_step is not None else -math.inf
        covered = step - prev
        new = max(0.0, min(float(covered), step - max(prev, reached)))
        self.tokens += tokens
        self.useful_tokens += tokens * new / covered
        if step_times is not None:
            for k, n in step_times.items():
                self.hist[k] = self.hist.get(k, 0.0) + n
        if same_run and self.last_time is not None and now > self.last_time:
            dt = now - self.last_time
            if step_times is None:
                self.hist[bucket(dt / covered)] = self.hist.get(bucket(dt / covered), 0.0) + covered
            self.steps += covered
            self.step_seconds += dt
            self.measured_tokens += tokens
        self.max_step = step if self.max_step is None else max(self.max_step, step)
        self.last_step, self.last_time, self.attempt = step, now, attempt
        self._append(now, step)

    def _append(self, now: float, step: int) -> None:
        self.series.append((now, self.useful_tokens, step))
        if len(self.series) > SERIES_MAX:  # thin: every other point, the newest kept
            self.series = self.series[-1::-2][::-1]

    # --- storage (JSON-able) -------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in _SCALARS}
        d["hist"] = {str(k): v for k, v in self.hist.items()}
        d["series"] = [list(p) for p in self.series]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Progress:
        p = cls(**{k: d[k] for k in _SCALARS if k in d})
        p.hist = {int(k): float(v) for k, v in (d.get("hist") or {}).items()}
        p.series = [(float(t), float(c), int(s)) for t, c, s in d.get("series") or []]
        return p


_SCALARS = (
    "flops_per_token",
    "tokens",
    "useful_tokens",
    "measured_tokens",
    "steps",
    "step_seconds",
    "max_step",
    "last_step",
    "last_time",
    "attempt",
)


def percentile(hist: dict[int, float], q: float) -> float | None:
    """The q-th percentile (0-100) of step times, steps weighing one each, by
    nearest rank: the time of the ceil(q/100 x n)-th shortest step, as the
    middle of its bucket (within 1 % of it)."""
    total = sum(hist.values())
    if total <= 0:
        return None
    goal, seen = q / 100 * total - 1e-9 * total, 0.0  # 0.95 x 20 may round above 19
    for k in sorted(hist):
        seen += hist[k]
        if seen >= goal:
            return bucket_value(k)
    return bucket_value(max(hist))


def tokens_between(series: list[tuple[float, float, int]], t0: float, t1: float) -> float:
    """Useful tokens reported in [t0, t1], the cumulative series read linearly
    between its points (0 before the first point, flat after the last)."""

    def at(t: float) -> float:
        if not series or t < series[0][0]:
            return 0.0
        for (ta, ca, _), (tb, cb, _) in pairwise(series):
            if ta <= t < tb:
                return ca + (cb - ca) * (t - ta) / (tb - ta) if tb > ta else cb
        return series[-1][1]

    return max(0.0, at(t1) - at(t0))


@dataclass(frozen=True)
class Figures:
    """The efficiency of one job or one group of jobs (None: not measurable)."""

    tokens: float  # useful tokens
    tokens_per_s: float | None  # steady: timed tokens / timed seconds
    step_p50: float | None
    step_p95: float | None
    mfu: float | None  # steady: achieved model FLOP/s over the peak of its GPUs
    mfu_effective: float | None  # useful FLOPs over the peak of all its allocated GPU-time
    steps: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "tokens_per_s": self.tokens_per_s,
            "step_p50": self.step_p50,
            "step_p95": self.step_p95,
            "mfu": self.mfu,
            "mfu_effective": self.mfu_effective,
            "steps": self.steps,
        }


@dataclass(frozen=True)
class Measured:
    """One job's progress with what MFU needs: its GPUs, their peak (TFLOPS
    each, None when unknown) and the GPU-seconds allocated over all attempts."""

    progress: Progress
    gpus: int
    peak_tflops: float | None
    alloc_gpu_seconds: float


def job_figures(m: Measured) -> Figures:
    return group_figures([m])


def group_figures(jobs: Iterable[Measured]) -> Figures:
    """Figures of a group (an account): tokens add up; step times merge; MFU is
    weighted by GPU-time (sum of model FLOPs over sum of peak FLOPs). A job that
    declares no FLOPs per token, or runs on a GPU of unknown peak, counts in
    tokens and step times but not in MFU. tokens_per_s of a group is the mean
    per-job steady rate weighted by timed seconds."""
    jobs = list(jobs)
    hist: dict[int, float] = {}
    tokens = timed_tokens = timed_s = 0.0
    steps = 0
    flops = peak = useful_flops = alloc_peak = 0.0
    for m in jobs:
        p = m.progress
        tokens += p.useful_tokens
        timed_tokens += p.measured_tokens
        timed_s += p.step_seconds
        steps += p.steps
        for k, v in p.hist.items():
            hist[k] = hist.get(k, 0.0) + v
        if p.flops_per_token and m.peak_tflops and m.gpus > 0:
            gpu_peak = m.gpus * m.peak_tflops * 1e12
            flops += p.measured_tokens * p.flops_per_token
            peak += p.step_seconds * gpu_peak
            if m.alloc_gpu_seconds > 0:
                useful_flops += p.useful_tokens * p.flops_per_token
                alloc_peak += m.alloc_gpu_seconds * m.peak_tflops * 1e12
    return Figures(
        tokens=tokens,
        tokens_per_s=timed_tokens / timed_s if timed_s > 0 else None,
        step_p50=percentile(hist, 50),
        step_p95=percentile(hist, 95),
        mfu=flops / peak if peak > 0 else None,
        mfu_effective=useful_flops / alloc_peak if alloc_peak > 0 else None,
        steps=steps,
    )
