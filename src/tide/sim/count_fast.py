"""The count driver on columns, in C: the same run as CountDriver, ~100x faster.

`tide.sim._countsim.run` is CountDriver.run and CountBackend transcribed to C
(src/tide/sim/_countsim.c). This module feeds it one array per job field and
turns what it returns into the JobResults, Samples and per-account GPU-seconds
CountDriver would have produced, value for value (tests/sim/test_countsim.py).

`available()` is False when the extension is not built or TIDE_NO_C is set;
the runner then uses the Python CountDriver. An SWF log read by
tide.sim.fastswf is taken as columns, without building a SimJob per record.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from tide.hostlist import _NUM_RE, compress
from tide.model import JobState
from tide.model.sched_config import BackfillMode, QueueOrder, SchedulerConfig
from tide.sched.index import ClusterIndex
from tide.sim.count_driver import PLOT_PERIOD, nodes_needed
from tide.sim.fastswf import SwfWorkload
from tide.sim.metrics import JobResult, Sample
from tide.sim.workload.base import SimJob

try:
    from tide.sim import _countsim
except ImportError:  # no compiler at install time: the Python driver
    _countsim = None  # type: ignore[assignment]

MODES = {BackfillMode.NONE: 0, BackfillMode.EASY: 1, BackfillMode.CONSERVATIVE: 2}
COMPLETED, TIMEOUT = JobState.COMPLETED.value, JobState.TIMEOUT.value


def available() -> bool:
    """The C kernel is built and not switched off (TIDE_NO_C=1 forces Python)."""
    return _countsim is not None and not os.environ.get("TIDE_NO_C")


@dataclass(slots=True)
class CountInput:
    """One entry per job, in file order: what CountDriver reads off each SimJob."""

    id: np.ndarray  # int64, unique
    submit: np.ndarray  # float64
    duration: np.ndarray  # float64
    time_limit: np.ndarray  # float64 request.time_limit (never None on this path)
    need: np.ndarray  # int64 nodes
    name: list[str]
    user: list[str]
    account: list[str]  # sim.account or request.account or "root"
    qos: list[str]  # request.qos or "normal"


@dataclass(slots=True)
class CountRun:
    results: list[JobResult]  # by job id
    samples: list[Sample]
    account_seconds: dict[str, float]
    events: int
    cycles: int


def count_input(source: Iterable[SimJob], ix: ClusterIndex) -> CountInput:
    """The jobs as columns; NotCountable (from nodes_needed) if one does not fit the model."""
    if isinstance(source, SwfWorkload):
        return _from_swf(source, ix)
    jobs = list(source)
    reqs = [j.request for j in jobs]
    return CountInput(
        id=np.array([j.id for j in jobs], dtype=np.int64),
        submit=np.array([j.submit for j in jobs], dtype=np.float64),
        duration=np.array([j.duration for j in jobs], dtype=np.float64),
        time_limit=np.array([_limit(r.time_limit) for r in reqs], dtype=np.float64),
        need=np.array([nodes_needed(r, ix) for r in reqs], dtype=np.int64),
        name=[j.name or r.name for j, r in zip(jobs, reqs, strict=True)],
        user=[j.user for j in jobs],
        account=[j.account or r.account or "root" for j, r in zip(jobs, reqs, strict=True)],
        qos=[r.qos or "normal" for r in reqs],
    )


def _limit(value: float | None) -> float:
    assert value is not None  # nodes_needed refuses a job without a time limit
    return float(value)


def _from_swf(wl: SwfWorkload, ix: ClusterIndex) -> CountInput:
    cols = wl.columns()
    info = wl.info
    # a record's request depends on its processor count only (and the log's info)
    from tide.sim.workload.swf import _request

    procs, inverse = np.unique(cols.procs, return_inverse=True)
    need = [nodes_needed(_request(int(p), info, 1, "", ""), ix) for p in procs.tolist()]  # type: ignore[arg-type]
    n = len(cols)
    return CountInput(
        id=cols.id,
        submit=cols.submit,
        duration=cols.run,
        time_limit=cols.limit.astype(np.float64),
        need=np.asarray(need, dtype=np.int64)[inverse.reshape(-1)] if n else cols.procs,
        name=[f"job{i}" for i in cols.id.tolist()],
        user=cols.users(),
        account=cols.accounts(),
        qos=["normal"] * n,
    )


def simulate(
    inp: CountInput, ix: ClusterIndex, config: SchedulerConfig, partition: str
) -> CountRun | None:
    """The C run, or None when these jobs need the Python driver (repeated ids)."""
    n = len(inp.id)
    if len(np.unique(inp.id)) != n:
        return None  # CountDriver keys its state by job id
    gpn = int(ix.gpus[0])
    index: dict[str, int] = {}
    acct = np.array([index.setdefault(a, len(index)) for a in inp.account], dtype=np.int64)
    names = list(index)
    # CountJob.limit is float(time_limit or 0); the run ends at min(duration, time_limit or inf)
    tl = inp.time_limit
    plan = np.where(tl != 0, tl, 0.0)
    cap = np.where(tl != 0, tl, np.inf)
    runlen = np.where(cap < inp.duration, cap, inp.duration)  # min(duration, cap)
    out = _countsim.run(
        np.ascontiguousarray(inp.submit, dtype=np.float64), runlen,
        np.ascontiguousarray(inp.need, dtype=np.int64), plan, acct, len(names), ix.n, gpn,
        MODES[config.backfill], config.order is QueueOrder.SJF, float(config.bf_interval),
        PLOT_PERIOD,
    )  # fmt: skip
    start = np.frombuffer(out["start"], dtype=np.float64)
    ids = np.frombuffer(out["ids"], dtype=np.int32)
    results = _results(inp, start, start + runlen, cap, ids, gpn, partition, ix)
    seconds = np.frombuffer(out["acct_seconds"], dtype=np.float64).tolist()
    order = np.frombuffer(out["acct_order"], dtype=np.int64).tolist()
    return CountRun(
        results=results,
        samples=_samples(out, names),
        account_seconds={names[a]: seconds[a] for a in order},
        events=int(out["events"]),
        cycles=int(out["cycles"]),
    )


def _results(
    inp: CountInput,
    start: np.ndarray,
    end: np.ndarray,
    cap: np.ndarray,
    ids: np.ndarray,
    gpn: int,
    partition: str,
    ix: ClusterIndex,
) -> list[JobResult]:
    started = ~np.isnan(start)
    timeout = inp.duration > cap
    offsets = np.concatenate(([0], np.cumsum(inp.need))).tolist()
    fmt = nodelist_formatter(ix.names, gpn)
    starts, ends = start.tolist(), end.tolist()
    flags, late, submit = started.tolist(), timeout.tolist(), inp.submit.tolist()
    need, job_ids = inp.need.tolist(), inp.id.tolist()
    out: list[JobResult] = []
    for k in np.argsort(inp.id, kind="stable").tolist():
        t = submit[k]
        r = JobResult(
            job_id=job_ids[k], name=inp.name[k], user=inp.user[k], account=inp.account[k],
            qos=inp.qos[k], submit=t, eligible=t, gpus=need[k] * gpn, nodes=need[k],
            partition=partition,
        )  # fmt: skip
        if flags[k]:
            r.start, r.end = starts[k], ends[k]
            r.state = TIMEOUT if late[k] else COMPLETED
            if need[k]:
                r.nodelist, r.gpu_index = fmt(ids[offsets[k] : offsets[k + 1]])
        out.append(r)
    return out


def _samples(out: dict[str, object], names: list[str]) -> list[Sample]:
    def col(key: str, dtype: type) -> list:  # type: ignore[type-arg]
        return np.frombuffer(out[key], dtype=dtype).tolist()  # type: ignore[call-overload,no-any-return]

    t, alloc, idle, qlen = col("t", np.float64), col("allocated", np.int64), col(
        "idle", np.int64), col("queue_len", np.int64)  # fmt: skip
    first = col("plot_first", np.int64)
    acct, gpus = col("plot_acct", np.int64), col("plot_gpus", np.int64)
    first.append(len(acct))
    plots = [i for i in range(len(t)) if first[i] != first[i + 1]]
    by_account: list[dict[str, int]] = [{} for _ in t]
    for i in plots:
        lo, hi = first[i], first[i + 1]
        by_account[i] = {names[a]: g for a, g in zip(acct[lo:hi], gpus[lo:hi], strict=True)}
    return list(map(Sample, t, alloc, idle, qlen, by_account))


def nodelist_formatter(names: list[str], gpn: int) -> Callable[[np.ndarray], tuple[str, str]]:
    """ids -> (nodelist, gpu_index) as runner._fill_nodelists writes them:
    compress() of the names, and "name:0-7" per node joined by ';'."""
    rng = "0" if gpn == 1 else f"0-{gpn - 1}"
    per_node = [f"{name}:{rng}" for name in names] if gpn else []
    ranges = _ranges_formatter(names)
    cache: dict[bytes, tuple[str, str]] = {}

    def fmt(ids: np.ndarray) -> tuple[str, str]:
        key = ids.tobytes()
        hit = cache.get(key)
        if hit is None:
            lst = ids.tolist()
            nodelist = ranges(lst) if ranges else compress(names[i] for i in lst)
            gpu_index = ";".join([per_node[i] for i in lst]) if gpn else ""
            hit = cache[key] = (nodelist, gpu_index)
        return hit

    return fmt


def _ranges_formatter(names: list[str]) -> Callable[[list[int]], str] | None:
    """compress() for the common names (one prefix and suffix, equal-width
    numbers rising with the node index): runs of consecutive numbers.
    None when the names do not have that shape: compress() itself then."""
    parts = [_NUM_RE.match(n) for n in names]
    if not names or any(m is None for m in parts):
        return None
    prefix, digits, suffix = zip(*(m.groups() for m in parts if m is not None), strict=True)
    nums = [int(d) for d in digits]
    same = len(set(prefix)) == 1 and len(set(suffix)) == 1 and len({len(d) for d in digits}) == 1
    if not same or any(b <= a for a, b in pairwise(nums)):
        return None
    head, tail = prefix[0], suffix[0]

    def ranges(ids: list[int]) -> str:
        if len(ids) == 1:
            return names[ids[0]]
        words, lo = [], 0
        for k in range(1, len(ids) + 1):
            if k == len(ids) or nums[ids[k]] != nums[ids[k - 1]] + 1:
                a, b = digits[ids[lo]], digits[ids[k - 1]]
                words.append(a if lo == k - 1 else f"{a}-{b}")
                lo = k
        return f"{head}[{','.join(words)}]{tail}"

    return ranges


__all__ = ["CountInput", "CountRun", "available", "count_input", "simulate"]
