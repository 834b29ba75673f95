"""The synthetic workload model: what `generate` draws from.

A `GeneratorModel` is a set of independent job `Stream`s plus `FixedJob`s.
Each stream is a Poisson process (rate in jobs per second over
[start, end)) whose jobs draw, independently:
- a GPU count from `sizes` (weights need not sum to 1);
- a run time from `duration` (log-normal, Weibull, uniform or fixed,
  clipped to [lo, hi] and to the estimate cap);
- a time limit from `estimates` (docs/workloads.md, "Estimates");
- an account from `accounts` and a user of that account, user k of n with
  weight 1/k (a few heavy users, a long tail);
- for multi-node jobs, --switches=1 with probability `switches`;
- a training model from `models` (weights need not sum to 1), when given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from tide.model import Cluster
from tide.sim.workload.base import TrainModel

DistKind = Literal["lognormal", "weibull", "uniform", "fixed"]


@dataclass(frozen=True, slots=True)
class Dist:
    """lognormal: a = median, b = sigma of log; weibull: a = scale, b = shape;
    uniform: [a, b); fixed: a. Draws are clipped to [lo, hi]."""

    kind: DistKind
    a: float
    b: float = 0.0
    lo: float = 0.0
    hi: float = math.inf

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.kind == "lognormal":
            x = rng.lognormal(math.log(self.a), self.b, n)
        elif self.kind == "weibull":
            x = self.a * rng.weibull(self.b, n)
        elif self.kind == "uniform":
            x = rng.uniform(self.a, self.b, n)
        elif self.kind == "fixed":
            x = np.full(n, float(self.a))
        else:
            raise ValueError(f"Dist kind {self.kind!r}: use lognormal, weibull, uniform or fixed")
        return np.clip(x, self.lo, self.hi)

    def mean(self) -> float:
        """The unclipped mean (used to size arrival rates; clipping is small)."""
        if self.kind == "lognormal":
            return self.a * math.exp(self.b**2 / 2)
        if self.kind == "weibull":
            return self.a * math.gamma(1 + 1 / self.b)
        if self.kind == "uniform":
            return (self.a + self.b) / 2
        return self.a


@dataclass(frozen=True, slots=True)
class Estimates:
    """How users set --time. With probability p_exact the limit is the run time,
    with p_max it is the cap, else run time x factor (factor clipped to >= 1).
    Every limit is then rounded up to `round_to` seconds and capped, so a
    generated job never outlives its limit (runs are clipped to the cap)."""

    p_exact: float = 0.0
    p_max: float = 0.0
    factor: Dist = Dist("lognormal", 2.0, 0.7)
    cap: int = 86400
    round_to: int = 60


@dataclass(frozen=True, slots=True)
class Stream:
    name: str  # also the job name
    rate: float  # arrivals per second
    sizes: tuple[tuple[int, float], ...]  # (GPUs, weight)
    duration: Dist
    estimates: Estimates = Estimates()
    accounts: tuple[tuple[str, float], ...] = (("root", 1.0),)
    users_per_account: int = 4
    start: float = 0.0
    end: float | None = None  # None = the model's horizon
    switches: float = 0.0  # P(--switches=1) for a multi-node job
    switches_wait: int | None = None  # seconds; None = the cluster's max_switch_wait
    partition: str = ""
    qos: str = ""
    checkpoint_interval: float | None = None
    checkpoint_cost: float = 0.0
    models: tuple[tuple[TrainModel, float], ...] = ()  # (model, weight); () = not training

    def mean_gpus(self) -> float:
        total = sum(w for _, w in self.sizes)
        return sum(g * w for g, w in self.sizes) / total


@dataclass(frozen=True, slots=True)
class FixedJob:
    """A job placed by hand (the 800-GPU job of seed004, seed000's two gangs)."""

    submit: float
    gpus: int
    duration: float
    time_limit: int
    name: str = "fixed"
    account: str = "root"
    user: str = "user"
    switches: int | None = None
    train: TrainModel | None = None
    checkpoint_interval: float | None = None
    checkpoint_cost: float = 0.0


@dataclass(frozen=True, slots=True)
class GeneratorModel:
    name: str
    cluster: str | Cluster  # a bundled cluster's name, or the cluster itself
    gpus_per_node: int  # node size, for job shapes
    horizon: float  # streams arrive in [start, end or horizon)
    streams: tuple[Stream, ...] = ()
    fixed: tuple[FixedJob, ...] = ()
    shares: tuple[tuple[str, float], ...] = ()  # target share per account (fairness)
    description: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def validate(self) -> None:
        """Raise ValueError naming the stream and field that cannot be generated."""
        g = self.gpus_per_node
        for s in self.streams:
            if s.rate < 0:
                raise ValueError(f"stream {s.name!r}: rate {s.rate} must be >= 0")
            if not s.sizes or any(w < 0 for _, w in s.sizes) or sum(w for _, w in s.sizes) <= 0:
                raise ValueError(f"stream {s.name!r}: sizes need positive weights")
            for size, _ in s.sizes:
                if size < 1 or (size > g and size % g):
                    raise ValueError(
                        f"stream {s.name!r}: size {size} GPUs is not <= {g} or a multiple of "
                        f"{g} (gpus_per_node); multi-node jobs use whole nodes"
                    )
            e = s.estimates
            if e.p_exact + e.p_max > 1 or e.round_to < 1 or e.cap % e.round_to:
                raise ValueError(
                    f"stream {s.name!r}: estimates need p_exact + p_max <= 1 and a cap "
                    f"that is a multiple of round_to"
                )
        for f in self.fixed:
            if f.gpus > g and f.gpus % g:
                raise ValueError(f"fixed job {f.name!r}: {f.gpus} GPUs is not a multiple of {g}")


def rate_for(load: float, capacity_gpus: int, sizes: tuple[tuple[int, float], ...],
             duration: Dist) -> float:  # fmt: skip
    """Arrivals per second that keep `load` (0-1) of the GPUs busy on average
    (Little's law: rate x mean GPUs x mean run time = load x capacity)."""
    total = sum(w for _, w in sizes)
    mean_gpus = sum(g * w for g, w in sizes) / total
    return load * capacity_gpus / (mean_gpus * duration.mean())
