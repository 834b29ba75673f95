"""A run's per-job results and utilization timeline as columns.

The twin's outputs (metrics, jobs.csv, report.html) read these: a replay of
10^5 jobs then costs a numpy operation per field instead of Python work per
job. The count driver in C fills them directly; every other driver writes
`JobResult`s and `Sample`s, which `ResultTable.from_results` and
`Timeline.from_samples` turn into columns (and `to_results` / `to_samples`
back), value for value.

Absent values (`start`, `end` and `eligible` of None) are NaN in the float
columns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tide.sim.records import JobResult, Sample, as_samples, make_many, per_account_dicts

NAN = float("nan")
_FLOATS = ("submit", "eligible", "start", "end", "lost_gpu_seconds", "held_idle_gpu_seconds",
           "preempt_lost_gpu_seconds", "suspended_seconds")  # fmt: skip
_INTS = ("job_id", "gpus", "nodes", "restarts", "leaf_switches", "min_leaf_switches",
         "preemptions")  # fmt: skip
_BOOLS = ("deadlocked", "needed_reclaim")
_STRS = ("name", "user", "account", "partition", "qos", "state", "nodelist", "gpu_index",
         "cpu_ids")  # fmt: skip
_OPTIONAL = ("eligible", "start", "end")  # None <-> NaN


@dataclass(eq=False)
class Placement:
    """GPUs each job holds per node, when the driver knows them without parsing
    `gpu_index`: job k holds gpus[i] GPUs on node names[node[i]] for i in
    bounds[k]:bounds[k+1] (the count driver: whole nodes of equal size)."""

    names: list[str]
    node: np.ndarray  # int64 index into names
    bounds: np.ndarray  # int64, len(jobs) + 1
    gpus: np.ndarray  # int64


@dataclass(eq=False)
class ResultTable:
    """One entry per job, the fields of JobResult (see there), in run order."""

    job_id: np.ndarray  # int64
    name: list[str]
    user: list[str]
    account: list[str]
    partition: list[str]
    qos: list[str]
    gpus: np.ndarray  # int64
    nodes: np.ndarray  # int64
    submit: np.ndarray  # float64
    eligible: np.ndarray  # float64, NaN = None (the submit time)
    start: np.ndarray  # float64, NaN = never started
    end: np.ndarray  # float64, NaN = None
    state: list[str]
    restarts: np.ndarray  # int64
    lost_gpu_seconds: np.ndarray  # float64
    leaf_switches: np.ndarray  # int64
    min_leaf_switches: np.ndarray  # int64
    nodelist: list[str]
    gpu_index: list[str]
    cpu_ids: list[str]
    held_idle_gpu_seconds: np.ndarray  # float64
    deadlocked: np.ndarray  # bool
    preemptions: np.ndarray  # int64
    preempt_lost_gpu_seconds: np.ndarray  # float64
    suspended_seconds: np.ndarray  # float64
    needed_reclaim: np.ndarray  # bool
    placement: Placement | None = None

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def ready(self) -> np.ndarray:
        """JobResult.ready: eligible, or submit where eligible is None."""
        return np.where(np.isnan(self.eligible), self.submit, self.eligible)

    @property
    def started(self) -> np.ndarray:
        return ~np.isnan(self.start)

    @property
    def wait(self) -> np.ndarray:
        """start - ready (NaN: never started)."""
        return self.start - self.ready

    @property
    def run(self) -> np.ndarray:
        """end - start (NaN: not started or not ended)."""
        return self.end - self.start

    @classmethod
    def build(cls, n: int, **columns: Any) -> ResultTable:
        """A table of n jobs from the given columns; fields left out take
        JobResult's defaults (a scalar string is repeated n times)."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name == "placement":
                values[f.name] = columns.get(f.name)
                continue
            v = columns.get(f.name, _DEFAULTS.get(f.name))
            if f.name in _STRS:
                values[f.name] = [v] * n if isinstance(v, str) else v
            elif f.name in _FLOATS:
                values[f.name] = _full(v, n, np.float64)
            elif f.name in _BOOLS:
                values[f.name] = _full(v, n, np.bool_)
            else:
                values[f.name] = _full(v, n, np.int64)
        return cls(**values)

    @classmethod
    def from_results(cls, results: Iterable[JobResult]) -> ResultTable:
        rs = results if isinstance(results, list) else list(results)
        cols: dict[str, Any] = {}
        for name in _STRS:
            cols[name] = [getattr(r, name) for r in rs]
        for name in _INTS + _BOOLS:
            cols[name] = [getattr(r, name) for r in rs]
        for name in _FLOATS:
            vals = [getattr(r, name) for r in rs]
            if name in _OPTIONAL:
                vals = [NAN if v is None else v for v in vals]
            cols[name] = vals
        return cls.build(len(rs), **cols)

    def to_results(self) -> list[JobResult]:
        """The JobResults these columns hold (built in C when the kernel is there)."""
        cols: dict[str, Any] = {}
        for f in dataclasses.fields(JobResult):
            v = getattr(self, f.name)
            if f.name in _STRS:
                cols[f.name] = v
            elif f.name in _OPTIONAL:
                cols[f.name] = _optional(v)
            else:
                cols[f.name] = v.tolist()
        return make_many(JobResult, cols, len(self))


_DEFAULTS: dict[str, Any] = {
    f.name: f.default for f in dataclasses.fields(JobResult) if f.default is not dataclasses.MISSING
}
_DEFAULTS.update(eligible=NAN, start=NAN, end=NAN)


def _full(v: Any, n: int, dtype: type) -> np.ndarray:
    if isinstance(v, np.ndarray):
        return v.astype(dtype, copy=False)
    if isinstance(v, list | tuple):
        return np.array(v, dtype=dtype) if len(v) else np.zeros(0, dtype=dtype)
    return np.full(n, v, dtype=dtype)


def _optional(x: np.ndarray) -> list[float | None]:
    out: list[float | None] = x.tolist()
    for k in np.flatnonzero(np.isnan(x)).tolist():
        out[k] = None
    return out


@dataclass(eq=False)
class Timeline:
    """The engine's samples as columns: sample k holds from t[k] to t[k + 1]
    (the last until the end); its per-account allocated GPUs are
    gpus[first[k]:first[k + 1]] for the accounts names[account[...]].
    from_samples sorts by time (as as_samples); a driver's own columns may
    come in its order, which in_time_order() sorts."""

    t: np.ndarray  # float64
    allocated: np.ndarray  # int64
    blocked_idle: np.ndarray  # int64
    queue: np.ndarray  # int64
    first: np.ndarray  # int64, len(t) + 1
    account: np.ndarray  # int64 index into names
    gpus: np.ndarray  # int64
    names: list[str]

    def __len__(self) -> int:
        return len(self.t)

    @classmethod
    def from_samples(cls, samples: Iterable[Sample | Sequence[Any]]) -> Timeline:
        ss = as_samples(samples)  # sorted by time
        index: dict[str, int] = {}
        acct: list[int] = []
        gpus: list[int] = []
        first = [0]
        for s in ss:
            for a, g in s.by_account.items():
                acct.append(index.setdefault(a, len(index)))
                gpus.append(g)
            first.append(len(acct))
        return cls(
            t=np.array([s.t for s in ss], dtype=np.float64),
            allocated=np.array([s.allocated_gpus for s in ss], dtype=np.int64),
            blocked_idle=np.array([s.blocked_idle_gpus for s in ss], dtype=np.int64),
            queue=np.array([s.queue_len for s in ss], dtype=np.int64),
            first=np.array(first, dtype=np.int64),
            account=np.array(acct, dtype=np.int64),
            gpus=np.array(gpus, dtype=np.int64),
            names=list(index),
        )

    def in_time_order(self) -> Timeline:
        """This timeline, its samples stably sorted by time (as as_samples sorts)."""
        if len(self.t) < 2 or bool((np.diff(self.t) >= 0).all()):
            return self
        order = np.argsort(self.t, kind="stable")
        lens = np.diff(self.first)[order]
        first = np.concatenate(([0], np.cumsum(lens)))
        idx = np.repeat(self.first[:-1][order] - first[:-1], lens) + np.arange(first[-1])
        return Timeline(self.t[order], self.allocated[order], self.blocked_idle[order],
                        self.queue[order], first, self.account[idx], self.gpus[idx],
                        self.names)  # fmt: skip

    def to_samples(self) -> list[Sample]:
        columns = {
            "t": self.t.tolist(), "allocated_gpus": self.allocated.tolist(),
            "blocked_idle_gpus": self.blocked_idle.tolist(), "queue_len": self.queue.tolist(),
            "by_account": per_account_dicts(self.first, self.account, self.gpus, self.names),
        }  # fmt: skip
        return make_many(Sample, columns, len(self))

    def account_series(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per account: (indices of the samples that list it, its GPUs there)."""
        small = self.account.astype(np.int16) if len(self.names) < 2**15 else self.account
        order = np.argsort(small, kind="stable")  # a radix sort for 16-bit keys
        # each entry's sample (the k with first[k] <= i < first[k + 1]), read off a
        # dense column: a binary search per entry in random order cost 3-7 ms
        counts = np.diff(self.first)
        sample = np.repeat(np.arange(len(counts), dtype=np.int64), counts)[order]
        acct = self.account[order]
        cut = np.flatnonzero(np.diff(acct)) + 1
        out = {}
        for lo, hi in zip([0, *cut.tolist()], [*cut.tolist(), len(order)], strict=True):
            if hi > lo:
                out[self.names[int(acct[lo])]] = (sample[lo:hi], self.gpus[order[lo:hi]])
        return out


class RowsOrColumns:
    """A run's results and timeline held as columns or as JobResults and
    Samples, whichever its driver gave; the other form is built on first use."""

    _results: list[JobResult] | None
    _table: ResultTable | None
    _samples: list[Sample] | None
    _timeline: Timeline | None

    def _hold(self, results: list[JobResult] | ResultTable,
              samples: list[Sample] | Timeline) -> None:  # fmt: skip
        self._results = None if isinstance(results, ResultTable) else results
        self._table = results if isinstance(results, ResultTable) else None
        self._samples = None if isinstance(samples, Timeline) else samples
        self._timeline = samples if isinstance(samples, Timeline) else None

    @property
    def results(self) -> list[JobResult]:
        if self._results is None:
            assert self._table is not None
            self._results = self._table.to_results()
        return self._results

    @property
    def table(self) -> ResultTable:
        if self._table is None:
            assert self._results is not None
            self._table = ResultTable.from_results(self._results)
        return self._table

    @property
    def samples(self) -> list[Sample]:
        if self._samples is None:
            assert self._timeline is not None
            self._samples = self._timeline.to_samples()
        return self._samples

    @property
    def timeline(self) -> Timeline:
        if self._timeline is None:
            assert self._samples is not None
            self._timeline = Timeline.from_samples(self._samples)
        return self._timeline


def seq_sum(x: np.ndarray) -> float:
    """x[0] + x[1] + ... strictly left to right, as a plain loop adds them (numpy's
    sum adds in pairs, which can differ in the last bits)."""
    return float(np.cumsum(x, dtype=np.float64)[-1]) if len(x) else 0.0


__all__ = ["Placement", "ResultTable", "RowsOrColumns", "Timeline", "seq_sum"]
