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

import gc
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from tide.hostlist import _NUM_RE, compress
from tide.model import JobState
from tide.model.sched_config import BackfillMode, QueueOrder, SchedulerConfig
from tide.sched.index import ClusterIndex
from tide.sim.count_driver import PLOT_PERIOD, nodes_needed
from tide.sim.fastswf import Coded, SwfWorkload
from tide.sim.metrics import JobResult, Sample
from tide.sim.table import Placement, ResultTable, RowsOrColumns, Timeline
from tide.sim.workload.base import SimJob
from tide.sim.workload.swf import _request

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
    account_codes: Coded | None = None  # `account` as codes, when the reader has them


class CountRun(RowsOrColumns):
    """A count-driver run: results and timeline as columns (tide.sim.table), or
    as the JobResults and Samples the Python driver writes; each form is built
    from the other on first use."""

    def __init__(
        self,
        results: list[JobResult] | ResultTable,
        samples: list[Sample] | Timeline,
        account_seconds: dict[str, float],
        events: int,
        cycles: int,
    ) -> None:
        self._hold(results, samples)
        self.account_seconds = account_seconds
        self.events = events
        self.cycles = cycles


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
    # a record's request depends on its processor count only (and the log's info)
    procs, inverse = np.unique(cols.procs, return_inverse=True)
    need = [nodes_needed(_request(p, wl.swf_info, 1, "", ""), ix) for p in procs.tolist()]
    n = len(cols)
    accounts = cols.account_codes()
    return CountInput(
        id=cols.id,
        submit=cols.submit,
        duration=cols.run,
        time_limit=cols.limit.astype(np.float64),
        need=np.asarray(need, dtype=np.int64)[inverse.reshape(-1)] if n else cols.procs,
        name=_numbered("job", cols.id),
        user=cols.users(),
        account=accounts.labels(),
        qos=["normal"] * n,
        account_codes=accounts,
    )


def simulate(
    inp: CountInput, ix: ClusterIndex, config: SchedulerConfig, partition: str
) -> CountRun | None:
    """The C run, or None when these jobs need the Python driver (repeated
    ids, times that are not finite, negative run lengths or limits)."""
    n = len(inp.id)
    ids = np.sort(inp.id)  # (np.unique without an inverse would import numpy.ma: 50 ms)
    if n > 1 and bool((ids[1:] == ids[:-1]).any()):
        return None  # CountDriver keys its state by job id
    gpn = int(ix.gpus[0])
    acct, names = _account_codes(inp)
    # CountJob.limit is float(time_limit or 0); the run ends at min(duration, time_limit or inf)
    tl = inp.time_limit
    plan = np.where(tl != 0, tl, 0.0)
    cap = np.where(tl != 0, tl, np.inf)
    runlen = np.where(cap < inp.duration, cap, inp.duration)  # min(duration, cap)
    finite = np.isfinite(inp.submit).all() and np.isfinite(runlen).all() and np.isfinite(plan).all()
    if not finite or (runlen < 0).any() or (plan < 0).any():
        return None  # odd inputs: the Python driver makes of them what it makes
    out = _countsim.run(
        np.ascontiguousarray(inp.submit, dtype=np.float64), runlen,
        np.ascontiguousarray(inp.need, dtype=np.int64), plan, acct, len(names), ix.n, gpn,
        MODES[config.backfill], config.order is QueueOrder.SJF, float(config.bf_interval),
        PLOT_PERIOD,
    )  # fmt: skip
    start = np.frombuffer(out["start"], dtype=np.float64)
    held = _held(np.frombuffer(out.pop("ids"), dtype=np.int32), inp.need, ~np.isnan(start))
    seconds = np.frombuffer(out["acct_seconds"], dtype=np.float64).tolist()
    order = np.frombuffer(out["acct_order"], dtype=np.int64).tolist()
    return CountRun(
        results=_results(inp, start, start + runlen, cap, held, gpn, partition, ix),
        samples=_timeline(out, names),
        account_seconds={names[a]: seconds[a] for a in order},
        events=int(out["events"]),
        cycles=int(out["cycles"]),
    )


def _account_codes(inp: CountInput) -> tuple[np.ndarray, list[str]]:
    """Each job's account index and the accounts, in order of first appearance."""
    coded = inp.account_codes
    if coded is not None:
        return np.ascontiguousarray(coded.codes, dtype=np.int64), coded.names
    index: dict[str, int] = {}
    acct = np.array([index.setdefault(a, len(index)) for a in inp.account], dtype=np.int64)
    return acct, list(index)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cycle collection while ~10^5 acyclic objects are built: the collector
    would walk the growing heap again and again (it costs more than building)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _held(ids: np.ndarray, need: np.ndarray, started: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The started jobs' node ids, job after job (int64), and each job's bounds in
    them. `ids` holds need[k] ids for every job k; when every job started (the
    usual end of a replay) it is taken whole: no mask and no masked copy, 150 MB
    less at the peak on an 80,000-node log of 30 million node slots."""
    held = np.where(started, need, 0)  # nodes each job holds
    flat = ids if started.all() else ids[np.repeat(started, need)]
    return flat.astype(np.int64), np.concatenate(([0], np.cumsum(held)))


def _results(
    inp: CountInput,
    start: np.ndarray,
    end: np.ndarray,
    cap: np.ndarray,
    held: tuple[np.ndarray, np.ndarray],
    gpn: int,
    partition: str,
    ix: ClusterIndex,
) -> ResultTable:
    n = len(inp.id)
    started = ~np.isnan(start)
    code = np.where(started, np.where(inp.duration > cap, 2, 1), 0)
    flat, bounds = held
    with _gc_paused():
        nodelist, gpu_index = node_strings(ix.names, gpn, flat, inp.need, started, held)
    name, user, account, qos = inp.name, inp.user, inp.account, inp.qos
    submit, need, job_id = inp.submit, inp.need, inp.id
    order = None if n < 2 or bool((np.diff(inp.id) > 0).all()) else np.argsort(inp.id)
    if order is not None:  # results go by job id
        started, code, start, end = started[order], code[order], start[order], end[order]
        submit, need, job_id = submit[order], need[order], job_id[order]
        pick = _picker(order)
        name, user, account, qos = pick(name), pick(user), pick(account), pick(qos)
        nodelist, gpu_index = pick(nodelist), pick(gpu_index)
        flat, bounds = _regroup(flat, bounds, order)
    state = ("PENDING", COMPLETED, TIMEOUT)
    # every slot holds gpn GPUs: one read-only value seen len(flat) times, not an array
    # of them (30 million node slots on an 80,000-node log: 240 MB saved)
    every = np.broadcast_to(np.int64(gpn), flat.shape)
    placement = Placement(list(ix.names), flat, bounds, every)
    return ResultTable.build(
        n, job_id=job_id, name=name, user=user, account=account, partition=partition, qos=qos,
        gpus=need * gpn, nodes=need, submit=submit, eligible=submit, start=start, end=end,
        state=list(map(state.__getitem__, code.tolist())), nodelist=nodelist, gpu_index=gpu_index,
        placement=placement,
    )  # fmt: skip


def _regroup(
    flat: np.ndarray, bounds: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Job k's segment flat[bounds[k]:bounds[k+1]], the jobs taken in `order`."""
    lens = np.diff(bounds)[order]
    new_bounds = np.concatenate(([0], np.cumsum(lens)))
    idx = np.repeat(bounds[:-1][order] - new_bounds[:-1], lens) + np.arange(new_bounds[-1])
    return flat[idx], new_bounds


def _picker(order: np.ndarray) -> Callable[[list], list]:  # type: ignore[type-arg]
    idx = order.tolist()
    return lambda xs: [xs[k] for k in idx]


def _timeline(out: dict[str, object], names: list[str]) -> Timeline:
    def col(key: str, dtype: type) -> np.ndarray:
        return np.frombuffer(out[key], dtype=dtype)  # type: ignore[call-overload,no-any-return]

    acct = col("plot_acct", np.int64)
    tl = Timeline(
        t=col("t", np.float64), allocated=col("allocated", np.int64),
        blocked_idle=col("idle", np.int64), queue=col("queue_len", np.int64),
        first=np.append(col("plot_first", np.int64), len(acct)), account=acct,
        gpus=col("plot_gpus", np.int64), names=names,
    )  # fmt: skip
    return tl  # in the driver's order, as CountDriver.samples (metrics sort by time)


def node_strings(
    names: list[str],
    gpn: int,
    ids: np.ndarray,
    need: np.ndarray,
    started: np.ndarray,
    held: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[list[str], list[str]]:
    """Each job's (nodelist, gpu_index), as runner._fill_nodelists writes them:
    compress() of its node names, and that hostlist with ":0-7" (every node's
    GPUs, tide.sim.outputs.node_indices); "" for a job that never started or
    holds no node. `ids` holds every job's node ids (sorted), one job after
    another, need[k] of them for job k; `held`: the started jobs' ids and
    bounds when the caller has them already (big logs: one copy, not two)."""
    nodelist = _nodelists(names, ids, need, started, held)
    rng = "0" if gpn == 1 else f"0-{gpn - 1}"
    gpu_index = _suffixed(nodelist, f":{rng}") if gpn else [""] * len(need)
    return nodelist, gpu_index


def _numbered(prefix: str, values: np.ndarray) -> list[str]:
    """f"{prefix}{v}" for every value (in C when the kernel has it: one str each)."""
    if hasattr(_countsim, "numbered"):  # builds before it lack it
        return _countsim.numbered(prefix, np.ascontiguousarray(values, dtype=np.int64))
    return [f"{prefix}{v}" for v in values.tolist()]


def _suffixed(items: list[str], suffix: str) -> list[str]:
    """item + suffix for every item but "" (which stays "")."""
    if hasattr(_countsim, "suffixed"):
        return _countsim.suffixed(items, suffix)
    return [f"{x}{suffix}" if x else "" for x in items]


def _nodelists(
    names: list[str],
    ids: np.ndarray,
    need: np.ndarray,
    started: np.ndarray,
    held: tuple[np.ndarray, np.ndarray] | None,
) -> list[str]:
    """compress() of each job's node names ("" when it holds none)."""
    if held is None:
        count = np.where(started, need, 0)  # nodes each job holds
        flat = ids[np.repeat(started, need)].astype(np.int64)  # the held ones, job after job
        bounds = np.concatenate(([0], np.cumsum(count)))
    else:
        flat, bounds = held
    shape = _name_shape(names)
    if shape is None:  # unusual names: compress() itself, once per distinct node set
        cache: dict[tuple[int, ...], str] = {}
        lst, bl = flat.tolist(), bounds.tolist()
        nodelist = []
        for k in range(len(need)):
            key = tuple(lst[bl[k] : bl[k + 1]])
            if key and key not in cache:
                cache[key] = compress(names[i] for i in key)
            nodelist.append(cache[key] if key else "")
        return nodelist
    if not len(flat):
        return [""] * len(need)
    head, digits, nums, tail = shape
    # runs of consecutive numbers, never across two jobs: "n[001-004,007]"
    num = np.asarray(nums, dtype=np.int64)
    nodelist = _countsim.hostlists(flat, bounds, num, digits, names, head, tail)
    return nodelist


def _name_shape(names: list[str]) -> tuple[str, list[str], list[int], str] | None:
    """(prefix, digits, numbers, suffix) when every name is prefix + digits +
    suffix with one prefix, one suffix, digits of one width and numbers rising
    with the node index: compress() then writes runs of consecutive numbers."""
    parts = [_NUM_RE.match(n) for n in names]
    if not names or any(m is None for m in parts):
        return None
    prefix, digits, suffix = zip(*(m.groups() for m in parts if m is not None), strict=True)
    nums = [int(d) for d in digits]
    same = len(set(prefix)) == 1 and len(set(suffix)) == 1 and len({len(d) for d in digits}) == 1
    if not same or any(b <= a for a, b in pairwise(nums)):
        return None
    return prefix[0], list(digits), nums, suffix[0]


__all__ = ["CountInput", "CountRun", "available", "count_input", "simulate"]
