"""Run-time predictions for backfill, learned online (pure: no clock, no I/O).

Gaussier, Glesser, Reis, Trystram, "Improving Backfilling by using Machine
Learning to predict Running Times" (SC'15): a linear model over features of
the job and of its user's recent history, trained online as each job ends,
with an asymmetric loss (under-predictions cost more than over-predictions:
a job that outlives its prediction delays what was planned after it) and
normalized adaptive gradient steps (Ross, Mineiro, Langford, "Normalized
Online Learning", UAI 2013), so features of any scale (seconds, counts,
cores) need no tuning. A prediction is never above the job's time limit.

When a running job outlives its prediction it is corrected (SC'15's
correctors), never killed:

- REQUESTED: planned to its time limit from then on;
- DOUBLING: its prediction doubles until it exceeds the elapsed time;
- TSAFRIR: increments of 1 min, 5 min, 15 min, 30 min, 1, 2, 5, 10, 20,
  50, 100 h are added to the first prediction (Tsafrir, Etsion, Feitelson,
  TPDS 2007), as many as it takes.

Corrections are functions of (first prediction, elapsed, limit): the driver
keeps no correction state. `TSAFRIR_MEAN` is EASY++'s own predictor (the
mean of the user's last two run times), kept for comparison.

The live controller and the twin drive the same `RuntimeModel`: `predict`
when a job is submitted, `observe` when it ends. Same jobs in the same order
give the same predictions (plain float arithmetic, no randomness).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from tide.model import Job


class Correction(StrEnum):
    REQUESTED = "requested"
    DOUBLING = "doubling"
    TSAFRIR = "tsafrir"


TSAFRIR_STEPS = (0, 60, 300, 900, 1800, 3600, 7200, 18000, 36000, 72000, 180000, 360000)


def corrected(
    rule: Correction, first: float, elapsed: float, limit: float | None
) -> float:
    """The run time to plan for a job predicted `first` seconds that has run
    `elapsed` seconds: `first` while it has not outlived it, else the
    correction; never above `limit` (None: no limit)."""
    cap = math.inf if limit is None else float(limit)
    pred = min(first, cap)
    if elapsed < pred:
        return pred
    if rule is Correction.REQUESTED:
        return cap
    if rule is Correction.DOUBLING:
        pred = max(first, 1.0)
        while pred <= elapsed:  # the smallest first * 2^k beyond the elapsed time
            pred *= 2.0
        return min(pred, cap)
    for step in TSAFRIR_STEPS[1:]:
        if first + step > elapsed:
            return min(first + step, cap)
    return cap


@dataclass(slots=True, frozen=True)
class JobInfo:
    """What the predictor sees of a job (the driver fills it from its Job)."""

    id: int
    user: str
    limit: float | None  # the time limit, seconds (None: no limit)
    size: int  # CPUs or GPUs asked for (whichever the cluster schedules)
    submit: float
    name: str = ""  # job name or script hash: jobs of one name run alike


def job_info(job: Job, size: int | None = None) -> JobInfo:
    """What the run-time model sees of a job; `size`: its allocated GPUs (else
    what it asks for at its fewest nodes)."""
    req = job.request
    if size is None:
        size = req.total_gpus(req.node_range()[0])
    return JobInfo(job.id, job.user, req.time_limit, size, job.submit, req.name or "")


@dataclass(slots=True, frozen=True)
class LossShape:
    """The asymmetric loss of SC'15 (its "E-Loss" family), as slopes of the
    absolute error on either side of a threshold: an over-prediction by more
    than `threshold` seconds costs `over` per second, an under-prediction
    `under` per second; each job weighs `weight(run, size)`."""

    over: float = 1.0
    under: float = 1.0
    threshold: float = 0.0
    weight: str = "log_run_per_size"  # or "one"

    def job_weight(self, run: float, size: int) -> float:
        if self.weight == "one":
            return 1.0
        # 5 + log(r / m): long narrow jobs matter more (SC'15's best weighting)
        return max(0.1, 5.0 + math.log(max(run, 1.0) / max(size, 1)))

    def slope(self, err: float) -> float:
        """d loss / d prediction at prediction error `err` = prediction - run."""
        if err > self.threshold:
            return self.over
        if err == self.threshold:
            return 0.0
        return -self.under


@dataclass(slots=True)
class NagLinear:
    """Online linear model trained by normalized adaptive gradient (NAG):
    each coordinate's step is scaled by the largest |x_i| seen and by the
    accumulated squared gradients, so no feature needs normalizing."""

    dim: int
    eta: float = 5000.0
    l2: float = 0.0
    w: list[float] = field(default_factory=list)
    scale: list[float] = field(default_factory=list)  # max |x_i| seen
    grads: list[float] = field(default_factory=list)  # sum of squared gradients
    norm: float = 1e-9  # N: sum over examples of sum (x_i / s_i)^2
    steps: float = 1.0  # t (counted 2 per example, as NAG's reference implementation)

    def __post_init__(self) -> None:
        self.w = self.w or [0.0] * self.dim
        self.scale = self.scale or [1e-9] * self.dim
        self.grads = self.grads or [1e-9] * self.dim

    def predict(self, x: list[float]) -> float:
        return math.fsum(a * b for a, b in zip(self.w, x, strict=True))

    def fit(self, x: list[float], slope: float) -> None:
        """One step on example x whose loss has derivative `slope` with
        respect to the prediction (already weighted)."""
        w, s = self.w, self.scale
        for i, xi in enumerate(x):
            a = abs(xi)
            if a > s[i]:  # a larger feature value: shrink its weight to the new scale
                w[i] *= s[i] / a
                s[i] = a
        self.norm += sum((xi / si) ** 2 for xi, si in zip(x, s, strict=True))
        for i, xi in enumerate(x):
            g = slope * xi + self.l2 * w[i]
            self.grads[i] += g * g
            w[i] -= self.eta * g / (math.sqrt(self.norm * self.grads[i] / self.steps) * s[i])
        self.steps += 2.0


@dataclass(slots=True)
class _History:
    """One user's (or name's) recent jobs."""

    runs: list[float] = field(default_factory=list)  # last three run times, newest last
    count: int = 0
    run_sum: float = 0.0
    size_sum: float = 0.0
    last_end: float | None = None


N_BASE = 14  # base features (with the constant); see _features


@dataclass(slots=True)
class RuntimeModel:
    """Online run-time predictor: `predict` at submission, `observe` at the end.

    kind "learned" (SC'15) or "tsafrir" (EASY++: mean of the last two runs of
    the user). Both are capped by the job's limit; a user with no history is
    predicted their limit by "tsafrir", the model's estimate by "learned"."""

    kind: str = "learned"
    loss: LossShape = field(default_factory=LossShape)
    eta: float = 5000.0
    l2: float = 0.0
    quadratic: bool = True
    model: NagLinear | None = None
    users: dict[str, _History] = field(default_factory=dict)
    names: dict[str, _History] = field(default_factory=dict)
    _x: dict[int, list[float]] = field(default_factory=dict)  # features at submission

    def __post_init__(self) -> None:
        if self.kind not in ("learned", "tsafrir"):
            raise ValueError(f"RuntimeModel kind {self.kind!r}: use 'learned' or 'tsafrir'")
        if self.model is None:
            dim = N_BASE + (N_BASE - 1) * N_BASE // 2 if self.quadratic else N_BASE
            self.model = NagLinear(dim, self.eta, self.l2)

    def predict(self, job: JobInfo, now: float, running: Iterable[JobInfo] = ()) -> float | None:
        """Predicted run seconds for `job` (None: no history and no limit).
        The features are kept until `observe` trains on them."""
        hist = self.users.get(job.user)
        if self.kind == "tsafrir":
            if hist is None or not hist.runs:
                return job.limit
            mean = sum(hist.runs[-2:]) / len(hist.runs[-2:])
            return mean if job.limit is None else min(mean, job.limit)
        x = self._x.get(job.id)
        if x is None:
            x = self._x[job.id] = self._features(job, now, running)
        assert self.model is not None
        pred = max(1.0, abs(self.model.predict(x)))
        return pred if job.limit is None else min(pred, float(job.limit))

    def observe(self, job: JobInfo, run: float, now: float) -> None:
        """`job` ended at `now` after `run` seconds: learn from it."""
        run = max(0.0, run)
        x = self._x.pop(job.id, None)
        if self.kind == "learned" and x is not None:
            assert self.model is not None
            err = self.model.predict(x) - run
            self.model.fit(x, self.loss.job_weight(run, job.size) * self.loss.slope(err))
        for key, table in ((job.user, self.users), (job.name, self.names)):
            if table is self.names and not key:
                continue
            h = table.setdefault(key, _History())
            h.runs = [*h.runs[-2:], run]
            h.count += 1
            h.run_sum += run
            h.size_sum += job.size
            h.last_end = now

    def forget(self, job_id: int) -> None:
        """A job left without running (cancelled): drop its features."""
        self._x.pop(job_id, None)

    def _features(self, job: JobInfo, now: float, running: Iterable[JobInfo]) -> list[float]:
        limit = float(job.limit) if job.limit is not None else 86400.0
        hist = self.users.get(job.user) or _History()
        runs = [min(r, limit) for r in hist.runs]
        last = [runs[-k] if len(runs) >= k else limit for k in (1, 2, 3)]
        mean2 = sum(runs[-2:]) / len(runs[-2:]) if runs else limit
        mean = hist.run_sum / hist.count if hist.count else 0.0
        named = self.names.get(job.name) if job.name else None
        name_last = min(named.runs[-1], limit) if named and named.runs else limit
        mine = [r for r in running if r.user == job.user]
        day = 2.0 * math.pi * (job.submit % 86400.0) / 86400.0
        size_ratio = job.size / (hist.size_sum / hist.count) if hist.count else 0.0
        since = now - hist.last_end if hist.last_end is not None else 0.0
        x = [
            1.0,
            last[0],
            last[1],
            last[2],
            limit,
            mean2,
            mean,
            name_last,
            since,
            size_ratio,
            float(sum(r.size for r in mine)),
            float(len(mine)),
            math.cos(day),
            float(job.size),
        ]
        if self.quadratic:  # pairwise products of the non-constant features
            base = x[1:]
            x += [a * b for k, a in enumerate(base) for b in base[k:]]
        return x


__all__ = [
    "Correction",
    "JobInfo",
    "LossShape",
    "NagLinear",
    "RuntimeModel",
    "corrected",
    "job_info",
]
