"""Twin metrics from per-job results and the engine's utilization timeline.

Every figure is defined once, in docs/twin-metrics.md; the names of the
returned keys are the names used there. Jobs that never started count in
`jobs` and `jobs_never_started` but not in the wait, slowdown or flow
figures. Percentiles use numpy's 'linear' method.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

BSLD_TAU = 10.0  # seconds: the bounded-slowdown floor on run time (pyss, SC'15)
SIZE_CLASSES: tuple[tuple[str, int, int | None], ...] = (
    ("1-4", 0, 4), ("5-63", 5, 63), ("64+", 64, None),
)  # fmt: skip


@dataclass(slots=True)
class JobResult:
    """One job's outcome, written by the engine. Times are seconds from the
    trace start; `start` is the first start, `end` the final end."""

    job_id: int
    name: str = ""
    user: str = ""
    account: str = ""
    partition: str = ""
    qos: str = ""
    gpus: int = 0
    nodes: int = 0
    submit: float = 0.0
    eligible: float | None = None  # None = submit
    start: float | None = None  # None = never started
    end: float | None = None  # None = never started, or still running at the end
    state: str = "PENDING"
    restarts: int = 0
    lost_gpu_seconds: float = 0.0  # work thrown away by failures/preemption
    leaf_switches: int = 0  # leaf switches spanned (0 = no tree topology)
    min_leaf_switches: int = 0  # fewest leaves that could hold the job
    nodelist: str = ""  # Slurm hostlist, e.g. gpu[001-002]
    gpu_index: str = ""  # gpu001:0-7;gpu002:0-7
    cpu_ids: str = ""  # gpu001:0-31;gpu002:0-31
    held_idle_gpu_seconds: float = 0.0  # GPUs held while the gang was incomplete
    deadlocked: bool = False
    # preemption (docs/preemption.md)
    preemptions: int = 0  # times this job was preempted (killed or suspended)
    preempt_lost_gpu_seconds: float = 0.0  # the part of lost_gpu_seconds preemption caused
    suspended_seconds: float = 0.0  # time spent suspended by preemption
    needed_reclaim: bool = False  # it waited for quota its account had lent out

    @property
    def ready(self) -> float:
        return self.submit if self.eligible is None else self.eligible

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.ready

    @property
    def run(self) -> float | None:
        return None if self.start is None or self.end is None else self.end - self.start


@dataclass(slots=True, frozen=True)
class Sample:
    """The cluster from time t until the next sample (written by the engine)."""

    t: float
    allocated_gpus: int  # GPUs no other job can use, partial gangs included
    blocked_idle_gpus: int  # free GPUs while the top pending job waits on Resources, else 0
    queue_len: int  # pending jobs
    by_account: Mapping[str, int] = field(default_factory=dict)  # allocated GPUs


def as_samples(timeline: Iterable[Sample | Sequence[Any]]) -> list[Sample]:
    """Accept Samples or plain (t, allocated, blocked_idle, queue_len, by_account) tuples."""
    out = [s if isinstance(s, Sample) else Sample(*s) for s in timeline]
    return sorted(out, key=lambda s: s.t)  # stable: equal times keep write order


def integrate(samples: Sequence[Sample], t0: float, t1: float) -> dict[str, Any]:
    """Time integrals over [t0, t1] of the step functions the samples define
    (each value holds until the next sample; the last holds until t1)."""
    acc = {"allocated": 0.0, "blocked_idle": 0.0, "queue": 0.0}
    by_account: dict[str, float] = {}
    for i, s in enumerate(samples):
        nxt = samples[i + 1].t if i + 1 < len(samples) else t1
        dt = min(nxt, t1) - max(s.t, t0)
        if dt <= 0:
            continue
        acc["allocated"] += s.allocated_gpus * dt
        acc["blocked_idle"] += s.blocked_idle_gpus * dt
        acc["queue"] += s.queue_len * dt
        for a, g in s.by_account.items():
            by_account[a] = by_account.get(a, 0.0) + g * dt
    return {**acc, "by_account": by_account}


def _stats(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    x = np.asarray(values, dtype=float)
    p50, p95, p99 = np.percentile(x, [50, 95, 99], method="linear")
    return {"mean": float(x.mean()), "p50": float(p50), "p95": float(p95),
            "p99": float(p99), "max": float(x.max())}  # fmt: skip


def bounded_slowdown(wait: float, run: float, tau: float = BSLD_TAU) -> float:
    """max(1, (wait + run) / max(tau, run)), as predictsim's metrics (SC'15)."""
    return max(1.0, (wait + run) / max(tau, run))


def jain(values: Sequence[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 = equal, 1/n = one takes all."""
    sq = sum(v * v for v in values)
    return (sum(values) ** 2) / (len(values) * sq) if values and sq > 0 else None


def compute_metrics(
    records: Iterable[JobResult],
    capacity_gpus: int,
    timeline: Iterable[Sample | Sequence[Any]] = (),
    target_shares: Mapping[str, float] | None = None,
    account_gpu_seconds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """All twin metrics for one run (docs/twin-metrics.md). The engine passes
    `account_gpu_seconds` (exact per-account integrals it keeps as it runs);
    the timeline's by_account is then only used for plots."""
    jobs = list(records)
    samples = as_samples(timeline)
    started = [j for j in jobs if j.start is not None]
    done = [j for j in started if j.end is not None]
    t0 = min((j.submit for j in jobs), default=0.0)
    # the window ends at the last end, or later if the engine sampled later (it writes a
    # sample when it stops, e.g. with deadlocked gangs still holding GPUs)
    t1 = max([j.end for j in done if j.end is not None] + [samples[-1].t if samples else t0])
    span = max(0.0, t1 - t0)
    area = capacity_gpus * span
    held = sum(j.held_idle_gpu_seconds for j in jobs)
    lost = sum(j.lost_gpu_seconds for j in jobs)
    integ = integrate(samples, t0, t1)
    if samples:
        allocated, by_account = integ["allocated"], integ["by_account"]
    else:  # no timeline: from the records (exact without restarts)
        allocated = sum(j.gpus * (j.run or 0.0) for j in done) + held
        by_account = {}
        for j in done:
            by_account[j.account] = by_account.get(j.account, 0.0) + j.gpus * (j.run or 0.0)
    if account_gpu_seconds is not None:
        by_account = dict(account_gpu_seconds)
    waits = [j.wait for j in started if j.wait is not None]
    w = _stats(waits)
    bsld = [bounded_slowdown(j.wait or 0.0, j.run or 0.0) for j in done]
    flow = [(j.wait or 0.0) + (j.run or 0.0) for j in done]
    return {
        "jobs": len(jobs),
        "jobs_completed": sum(j.state == "COMPLETED" for j in jobs),
        "jobs_deadlocked": sum(j.deadlocked for j in jobs),
        "jobs_never_started": len(jobs) - len(started),
        "capacity_gpus": capacity_gpus,
        "utilization": allocated / area if area > 0 else None,
        "effective_utilization": (allocated - held - lost) / area if area > 0 else None,
        "mean_wait": w["mean"],
        "p50_wait": w["p50"],
        "p95_wait": w["p95"],
        "p99_wait": w["p99"],
        "max_wait": w["max"],
        "mean_bsld": float(np.mean(bsld)) if bsld else None,
        "mean_flow": float(np.mean(flow)) if flow else None,
        "makespan": span,
        "held_idle_gpu_hours": held / 3600,
        "lost_gpu_hours": lost / 3600,
        "fragmentation": integ["blocked_idle"] / area if area > 0 and samples else None,
        "fairness": fairness(jobs, by_account, target_shares),
        "topology": topology(started),
        "wait_by_size": wait_by_size(started),
        **preemption(jobs),
    }


def preemption(jobs: Sequence[JobResult]) -> dict[str, Any]:
    """Preemptions, the work they threw away, and how long reclaiming lent
    quota took (submit to first start of the jobs that needed it)."""
    latency = [j.start - j.submit for j in jobs if j.needed_reclaim and j.start is not None]
    s = _stats(latency)
    return {
        "preemptions": sum(j.preemptions for j in jobs),
        "preempted_jobs": sum(j.preemptions > 0 for j in jobs),
        "preempt_lost_gpu_hours": sum(j.preempt_lost_gpu_seconds for j in jobs) / 3600,
        "reclaim_latency": {
            "jobs": len(latency), "mean": s["mean"], "p50": s["p50"], "p95": s["p95"],
            "max": s["max"],
        },
    }


def fairness(
    jobs: Sequence[JobResult],
    gpu_seconds: Mapping[str, float],
    target_shares: Mapping[str, float] | None,
) -> dict[str, Any]:
    """Achieved vs target share over the accounts that submitted jobs."""
    demand = sorted({j.account for j in jobs})
    if target_shares is None:
        raw = {a: 1.0 for a in demand}
    else:
        raw = {a: float(target_shares[a]) for a in demand if target_shares.get(a, 0) > 0}
    norm = sum(raw.values())
    total = sum(gpu_seconds.get(a, 0.0) for a in demand)
    accounts: dict[str, dict[str, float | None]] = {}
    ratios = []
    for a in demand:
        achieved = gpu_seconds.get(a, 0.0) / total if total > 0 else 0.0
        target = raw[a] / norm if a in raw else None
        accounts[a] = {"achieved": achieved, "target": target}
        if target:
            ratios.append(achieved / target)
    return {"jain": jain(ratios), "accounts": accounts}


def topology(started: Sequence[JobResult]) -> dict[str, Any]:
    """Leaf switches per multi-node job (jobs with leaf_switches 0 had no tree)."""
    multi = [j for j in started if j.nodes > 1 and j.leaf_switches > 0]
    if not multi:
        return {"multi_node_jobs": 0, "mean_leaf_switches": None, "on_fewest_leaves": None}
    best = sum(j.leaf_switches <= max(1, j.min_leaf_switches) for j in multi)
    return {
        "multi_node_jobs": len(multi),
        "mean_leaf_switches": sum(j.leaf_switches for j in multi) / len(multi),
        "on_fewest_leaves": best / len(multi),
    }


def size_class(gpus: int) -> str:
    for name, lo, hi in SIZE_CLASSES:
        if gpus >= lo and (hi is None or gpus <= hi):
            return name
    return SIZE_CLASSES[0][0]


def wait_by_size(started: Sequence[JobResult]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[float]] = {name: [] for name, _, _ in SIZE_CLASSES}
    for j in started:
        if j.wait is not None:
            groups[size_class(j.gpus)].append(j.wait)
    out: dict[str, dict[str, Any]] = {}
    for name, waits in groups.items():
        s = _stats(waits)
        out[name] = {"jobs": len(waits), "mean": s["mean"], "p50": s["p50"],
                     "p95": s["p95"], "max": s["max"]}  # fmt: skip
    return out
