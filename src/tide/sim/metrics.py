"""Twin metrics from per-job results and the engine's utilization timeline.

Every figure is defined once, in docs/twin-metrics.md; the names of the
returned keys are the names used there. Jobs that never started count in
`jobs` and `jobs_never_started` but not in the wait, slowdown or flow
figures. Percentiles use numpy's 'linear' method.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tide.sim.records import JobResult, Sample, as_samples

__all__ = ["JobResult", "Sample", "as_samples"]  # their home is tide.sim.records

if TYPE_CHECKING:
    from tide.sim.table import ResultTable, Timeline

BSLD_TAU = 10.0  # seconds: the bounded-slowdown floor on run time (pyss, SC'15)
SIZE_CLASSES: tuple[tuple[str, int, int | None], ...] = (
    ("1-4", 0, 4), ("5-63", 5, 63), ("64+", 64, None),
)  # fmt: skip


def integrate(
    samples: Sequence[Sample] | Timeline, t0: float, t1: float, accounts: bool = True
) -> dict[str, Any]:
    """Time integrals over [t0, t1] of the step functions the samples define
    (each value holds until the next sample; the last holds until t1). Sums
    run in sample order, term by term. `accounts=False` skips by_account."""
    from tide.sim.table import Timeline, seq_sum

    tl = samples if isinstance(samples, Timeline) else Timeline.from_samples(samples)
    tl = tl.in_time_order()
    t = tl.t
    nxt = np.append(t[1:], t1) if len(t) else t
    dt = np.minimum(nxt, t1) - np.maximum(t, t0)
    live = dt > 0
    dtl = dt[live]
    out: dict[str, Any] = {
        "allocated": seq_sum(tl.allocated[live] * dtl),
        "blocked_idle": seq_sum(tl.blocked_idle[live] * dtl),
        "queue": seq_sum(tl.queue[live] * dtl),
    }
    by_account: dict[str, float] = {}
    if accounts and len(tl.account):
        sample = np.repeat(np.arange(len(t)), np.diff(tl.first))
        keep = live[sample]
        terms = (tl.gpus[keep] * dt[sample[keep]]).tolist()
        names = tl.names
        for a, x in zip(tl.account[keep].tolist(), terms, strict=True):
            name = names[a]
            by_account[name] = by_account.get(name, 0.0) + x
    out["by_account"] = by_account
    return out


def _stats(values: Sequence[float] | np.ndarray) -> dict[str, float | None]:
    if len(values) == 0:
        return {"mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    x = np.asarray(values, dtype=float)
    p50, p95, p99 = percentiles(x, (50, 95, 99))
    return {"mean": float(x.mean()), "p50": float(p50), "p95": float(p95),
            "p99": float(p99), "max": float(x.max())}  # fmt: skip


def percentiles(x: np.ndarray, qs: Sequence[float]) -> list[float]:
    """np.percentile(x, qs, method="linear") for a 1-D array without NaN, the same
    arithmetic step for step (virtual index (n - 1) * q / 100, numpy's _lerp),
    on a sorted copy: np.percentile's own path imports numpy.ma (10 ms a process)."""
    w = np.sort(x)
    n = len(w)
    q = np.asarray(qs, dtype=np.float64) / 100
    virtual = (n - 1) * q
    prev = np.floor(virtual)
    top = virtual >= n - 1
    lo = np.where(top, n - 1, prev).astype(np.intp)
    hi = np.where(top, n - 1, prev + 1).astype(np.intp)
    gamma = virtual - np.where(top, -1.0, prev)  # numpy's index -1 at the top (a == b there)
    a, b = w[lo], w[hi]
    diff = b - a
    out = a + diff * gamma
    out = np.where(gamma >= 0.5, b - diff * (1 - gamma), out)
    return [float(v) for v in out]


def bounded_slowdown(wait: float, run: float, tau: float = BSLD_TAU) -> float:
    """max(1, (wait + run) / max(tau, run)), as predictsim's metrics (SC'15)."""
    return max(1.0, (wait + run) / max(tau, run))


def jain(values: Sequence[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 = equal, 1/n = one takes all."""
    sq = sum(v * v for v in values)
    return (sum(values) ** 2) / (len(values) * sq) if values and sq > 0 else None


def compute_metrics(
    records: Iterable[JobResult] | ResultTable,
    capacity_gpus: int,
    timeline: Iterable[Sample | Sequence[Any]] | Timeline = (),
    target_shares: Mapping[str, float] | None = None,
    account_gpu_seconds: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """All twin metrics for one run (docs/twin-metrics.md). The engine passes
    `account_gpu_seconds` (exact per-account integrals it keeps as it runs);
    the timeline's by_account is then only used for plots. Records and
    timeline may come as columns (tide.sim.table), as the count driver gives them."""
    from tide.sim.table import ResultTable, Timeline, seq_sum

    tab = records if isinstance(records, ResultTable) else ResultTable.from_results(records)
    tl = (timeline if isinstance(timeline, Timeline) else Timeline.from_samples(timeline))
    tl = tl.in_time_order()
    n = len(tab)
    started = tab.started
    done = started & ~np.isnan(tab.end)
    t0 = float(tab.submit.min()) if n else 0.0
    # the window ends at the last end, or later if the engine sampled later (it writes a
    # sample when it stops, e.g. with deadlocked gangs still holding GPUs)
    last = float(tl.t[-1]) if len(tl) else t0
    t1 = max(float(tab.end[done].max()), last) if done.any() else last
    span = max(0.0, t1 - t0)
    area = capacity_gpus * span
    held = seq_sum(tab.held_idle_gpu_seconds)
    lost = seq_sum(tab.lost_gpu_seconds)
    exact = account_gpu_seconds is not None
    integ = integrate(tl, t0, t1, accounts=not exact)
    run = tab.run[done]
    by_account: dict[str, float]
    if len(tl):
        allocated, by_account = integ["allocated"], integ["by_account"]
    else:  # no timeline: from the records (exact without restarts)
        allocated = seq_sum(tab.gpus[done] * run) + held
        by_account = {}
        if not exact:
            accts = [a for a, d in zip(tab.account, done.tolist(), strict=True) if d]
            for a, x in zip(accts, (tab.gpus[done] * run).tolist(), strict=True):
                by_account[a] = by_account.get(a, 0.0) + x
    if account_gpu_seconds is not None:
        by_account = dict(account_gpu_seconds)
    wait = tab.wait
    w = _stats(wait[started])
    wd = wait[done]
    bsld = np.maximum(1.0, (wd + run) / np.maximum(BSLD_TAU, run))
    flow = wd + run
    return {
        "jobs": n,
        "jobs_completed": tab.state.count("COMPLETED"),
        "jobs_deadlocked": int(tab.deadlocked.sum()),
        "jobs_never_started": n - int(started.sum()),
        "capacity_gpus": capacity_gpus,
        "utilization": allocated / area if area > 0 else None,
        "effective_utilization": (allocated - held - lost) / area if area > 0 else None,
        "mean_wait": w["mean"],
        "p50_wait": w["p50"],
        "p95_wait": w["p95"],
        "p99_wait": w["p99"],
        "max_wait": w["max"],
        "mean_bsld": float(np.mean(bsld)) if len(bsld) else None,
        "mean_flow": float(np.mean(flow)) if len(flow) else None,
        "makespan": span,
        "held_idle_gpu_hours": held / 3600,
        "lost_gpu_hours": lost / 3600,
        "fragmentation": integ["blocked_idle"] / area if area > 0 and len(tl) else None,
        "fairness": _fairness(sorted(set(tab.account)), by_account, target_shares),
        "topology": _topology(tab, started),
        "wait_by_size": _wait_by_size(tab.gpus[started], wait[started]),
        **_preemption(tab),
    }


def _table(jobs: Sequence[JobResult]) -> ResultTable:
    from tide.sim.table import ResultTable

    return ResultTable.from_results(jobs)


def preemption(jobs: Sequence[JobResult]) -> dict[str, Any]:
    """Preemptions, the work they threw away, and how long reclaiming lent
    quota took (submit to first start of the jobs that needed it)."""
    return _preemption(_table(jobs))


def _preemption(tab: ResultTable) -> dict[str, Any]:
    from tide.sim.table import seq_sum

    pick = tab.needed_reclaim & tab.started
    s = _stats(tab.start[pick] - tab.submit[pick])
    return {
        "preemptions": int(tab.preemptions.sum()),
        "preempted_jobs": int((tab.preemptions > 0).sum()),
        "preempt_lost_gpu_hours": seq_sum(tab.preempt_lost_gpu_seconds) / 3600,
        "reclaim_latency": {
            "jobs": int(pick.sum()), "mean": s["mean"], "p50": s["p50"], "p95": s["p95"],
            "max": s["max"],
        },
    }


def fairness(
    jobs: Sequence[JobResult],
    gpu_seconds: Mapping[str, float],
    target_shares: Mapping[str, float] | None,
) -> dict[str, Any]:
    """Achieved vs target share over the accounts that submitted jobs."""
    return _fairness(sorted({j.account for j in jobs}), gpu_seconds, target_shares)


def _fairness(
    demand: list[str], gpu_seconds: Mapping[str, float], target_shares: Mapping[str, float] | None
) -> dict[str, Any]:
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
    tab = _table(started)
    return _topology(tab, np.ones(len(tab), dtype=bool))


def _topology(tab: ResultTable, started: np.ndarray) -> dict[str, Any]:
    multi = started & (tab.nodes > 1) & (tab.leaf_switches > 0)
    count = int(multi.sum())
    if not count:
        return {"multi_node_jobs": 0, "mean_leaf_switches": None, "on_fewest_leaves": None}
    leaves = tab.leaf_switches[multi]
    best = int((leaves <= np.maximum(1, tab.min_leaf_switches[multi])).sum())
    return {
        "multi_node_jobs": count,
        "mean_leaf_switches": int(leaves.sum()) / count,
        "on_fewest_leaves": best / count,
    }


def size_class(gpus: int) -> str:
    for name, lo, hi in SIZE_CLASSES:
        if gpus >= lo and (hi is None or gpus <= hi):
            return name
    return SIZE_CLASSES[0][0]


def size_classes(gpus: np.ndarray) -> np.ndarray:
    """size_class for each entry, as an index into SIZE_CLASSES."""
    out = np.zeros(len(gpus), dtype=np.int64)  # in no class: the first (as size_class)
    free = np.ones(len(gpus), dtype=bool)
    for k, (_, lo, hi) in enumerate(SIZE_CLASSES):
        inside = free & (gpus >= lo) if hi is None else free & (gpus >= lo) & (gpus <= hi)
        out[inside] = k
        free &= ~inside
    return out


def wait_by_size(started: Sequence[JobResult]) -> dict[str, dict[str, Any]]:
    tab = _table(started)
    ok = tab.started
    return _wait_by_size(tab.gpus[ok], tab.wait[ok])


def _wait_by_size(gpus: np.ndarray, waits: np.ndarray) -> dict[str, dict[str, Any]]:
    cls = size_classes(gpus)
    out: dict[str, dict[str, Any]] = {}
    for k, (name, _, _) in enumerate(SIZE_CLASSES):
        w = waits[cls == k]
        s = _stats(w)
        out[name] = {"jobs": len(w), "mean": s["mean"], "p50": s["p50"],
                     "p95": s["p95"], "max": s["max"]}  # fmt: skip
    return out
