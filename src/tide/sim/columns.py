"""A run's results and timeline, appended to as the engine goes (issue 12 item 3).

The general engine used to keep every job's JobResult (and its SimJob) and
every Sample (with a dict of GPUs per account) until the run ended: some 2.4
KB per job, so a million-job replay held gigabytes. A finished job's result
is now moved into `ResultColumns` (one machine word per number, repeated
strings shared) and each sample into `TimelineColumns` (a few numbers, the
per-account GPUs as index pairs), which build the same `ResultTable` and
`Timeline` the outputs read, value for value: jobs.csv, metrics.json and
report.html are byte-identical (tests/sim/test_columns.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping
from operator import attrgetter

import numpy as np

from tide.sim.metrics import JobResult
from tide.sim.table import _BOOLS, _FLOATS, _INTS, _STRS, NAN, ResultTable, Timeline

# strings with few distinct values (one shared object each); the node lists
# are the job's own
_SHARED = ("name", "user", "account", "partition", "qos", "state")
_SHARE_AT_MOST = 1 << 16  # distinct strings remembered (job names may all differ)
_IS_SHARED = tuple(n in _SHARED for n in _STRS)
# each group's fields of a JobResult as one tuple, in the columns' order
_FLOATS_OF, _INTS_OF, _BOOLS_OF, _STRS_OF = (
    attrgetter(*names) for names in (_FLOATS, _INTS, _BOOLS, _STRS)
)


class ResultColumns:
    """Finished jobs' JobResults as columns, in the order they were added."""

    def __init__(self) -> None:
        self._floats = {n: array("d") for n in _FLOATS}
        self._ints = {n: array("q") for n in _INTS}
        self._bools = {n: array("b") for n in _BOOLS}
        self._strs: dict[str, list[str]] = {n: [] for n in _STRS}
        self._shared: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._ints["job_id"])

    def add(self, r: JobResult) -> None:
        # each group's fields read in one call (a job ends every few cycles)
        for col, v in zip(self._floats.values(), _FLOATS_OF(r), strict=True):
            col.append(NAN if v is None else v)
        for icol, i in zip(self._ints.values(), _INTS_OF(r), strict=True):
            icol.append(i)
        for bcol, b in zip(self._bools.values(), _BOOLS_OF(r), strict=True):
            bcol.append(bool(b))
        share = self._share
        for scol, text, shared in zip(self._strs.values(), _STRS_OF(r), _IS_SHARED, strict=True):
            scol.append(share(text) if shared else text)

    def _share(self, s: str) -> str:
        got = self._shared.get(s)
        if got is None:
            if len(self._shared) < _SHARE_AT_MOST:
                self._shared[s] = s
            return s
        return got

    def take_table(self, live: Iterable[JobResult] = ()) -> ResultTable:
        """Every job, these and the `live` ones (not finished), sorted by job id.
        The numbers leave these columns as the table takes them (one copy of a
        column at a time, not two of the whole run): they are empty after."""
        extra = ResultColumns()
        for r in live:
            extra.add(r)
        ids = _join(self._ints["job_id"], extra._ints["job_id"], np.int64)
        order = np.argsort(ids, kind="stable")
        nums: dict[str, np.ndarray] = {}
        groups = ((self._floats, extra._floats, np.float64), (self._ints, extra._ints, np.int64),
                  (self._bools, extra._bools, np.int8))  # fmt: skip
        for mine, theirs, dtype in groups:
            for n, col in mine.items():
                nums[n] = _join(col, theirs[n], dtype)[order]
                del col[:]
        for n in _BOOLS:
            nums[n] = nums[n].astype(np.bool_)
        cols: dict[str, object] = dict(nums)
        pick = order.tolist()
        for n in _STRS:
            both = self._strs[n] + extra._strs[n]
            self._strs[n].clear()
            cols[n] = [both[k] for k in pick]
        return ResultTable.build(len(pick), **cols)


def _join(a: array, b: array, dtype: type) -> np.ndarray:
    out: np.ndarray = np.empty(len(a) + len(b), dtype=dtype)
    if len(a):
        out[: len(a)] = np.frombuffer(a, dtype=dtype)
    if len(b):
        out[len(a) :] = np.frombuffer(b, dtype=dtype)
    return out


class TimelineColumns:
    """The engine's samples, in the order taken (times never decrease), as the
    columns of a Timeline."""

    def __init__(self) -> None:
        self.t = array("d")
        self.allocated = array("q")
        self.blocked_idle = array("q")
        self.queue = array("q")
        self.first = array("q", [0])
        self.account = array("q")
        self.gpus = array("q")
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.t)

    def add(self, t: float, allocated: int, idle: int, queue: int,
            by_account: Mapping[str, int]) -> None:  # fmt: skip
        self.t.append(t)
        self.allocated.append(allocated)
        self.blocked_idle.append(idle)
        self.queue.append(queue)
        index = self._index
        for a, g in by_account.items():
            k = index.get(a)
            if k is None:
                k = index[a] = len(index)
            self.account.append(k)
            self.gpus.append(g)
        self.first.append(len(self.account))

    def repeat_last(self, t: float) -> None:
        """The last sample again at t (it holds until then)."""
        lo, hi = self.first[-2], self.first[-1]
        names = list(self._index)
        last = {names[self.account[k]]: self.gpus[k] for k in range(lo, hi)}
        self.add(t, self.allocated[-1], self.blocked_idle[-1], self.queue[-1], last)

    def take_timeline(self) -> Timeline:
        """The Timeline; these columns are empty after (each copied, then let go)."""

        def take(col: array, dtype: type) -> np.ndarray:
            out: np.ndarray = np.frombuffer(col, dtype=dtype).copy()
            del col[:]
            return out

        i64 = np.int64
        return Timeline(
            t=take(self.t, np.float64),
            allocated=take(self.allocated, i64),
            blocked_idle=take(self.blocked_idle, i64),
            queue=take(self.queue, i64),
            first=take(self.first, i64),
            account=take(self.account, i64),
            gpus=take(self.gpus, i64),
            names=list(self._index),
        )
