"""The engine's running attempts, with what every cycle reads of them kept as
they start and end (not recounted over every running job at every event).

`ActiveJobs` is the engine's `active` map (job id -> Active, in start order)
and keeps beside it: GPUs per account in the order a walk over the map would
meet the accounts (the timeline's samples), the core's view of each job
(`Running`, built once per attempt), the checkpointing jobs, and a heap of
time-limit ends (the jobs `Engine._retire` ends at their limit). Every
figure is what the walk over the map gave before, in the same order.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from tide.model import Job
from tide.sched.types import Allocation, Running, RunningDelta
from tide.sim.pending import next_gen
from tide.sim.workload.base import SimJob

_MISSING: Any = object()


@dataclass(slots=True)
class Active:
    """A running attempt of a job."""

    job: Job
    sim: SimJob
    alloc: Allocation
    start: float
    limit_end: float
    end: float  # when it will really end (work done, or killed at the limit)
    token: int  # matches its END event; a requeue makes old events stale
    work_left: float  # seconds of work this attempt must do
    paused: float = 0.0  # seconds this attempt spent suspended (resumed since)


class ActiveJobs(dict[int, Active]):
    """job id -> Active (a dict: readers iterate and look up as before); writes
    go through `[]=`, `del` and `pop`, which keep the side tables."""

    def __init__(self) -> None:
        super().__init__()
        self._seq: dict[int, int] = {}  # job -> its place in start order
        self._next = 0
        self._accounts: dict[str, dict[int, int]] = {}  # account -> {job: GPUs}, start order
        self.runs: dict[int, Running] = {}  # job -> the core's view, start order
        self.checkpointing: dict[int, Active] = {}  # jobs with a checkpoint interval
        self._limits: list[tuple[float, int, int]] = []  # (limit end, seq, job)
        self._overdue: dict[int, int] = {}  # past their limit, not ended yet: job -> seq
        # `runs` added and taken out since the last `delta` (Snapshot.running_delta)
        self._started: list[Running] = []
        self._gone: list[Running] = []
        self._gen = 0

    def __setitem__(self, jid: int, act: Active) -> None:
        if jid in self:
            self._forget(jid, super().__getitem__(jid))
            seq = self._seq[jid]  # a dict keeps a replaced key's place
        else:
            seq = self._next
            self._next += 1
        super().__setitem__(jid, act)
        self._seq[jid] = seq
        self._accounts.setdefault(act.job.account, {})[jid] = act.alloc.gpu_count
        self.set_run(jid, Running(act.job, act.alloc, act.start, act.limit_end))
        if act.sim.checkpoint_interval:
            self.checkpointing[jid] = act
        heapq.heappush(self._limits, (act.limit_end, seq, jid))

    def __delitem__(self, jid: int) -> None:
        act = super().__getitem__(jid)
        super().__delitem__(jid)
        self._forget(jid, act)
        del self._seq[jid]

    def pop(self, jid: int, default: Any = _MISSING) -> Any:  # type: ignore[override]
        if jid not in self:
            if default is _MISSING:
                raise KeyError(jid)
            return default
        act = super().__getitem__(jid)
        del self[jid]
        return act

    def _forget(self, jid: int, act: Active) -> None:
        jobs = self._accounts[act.job.account]
        del jobs[jid]
        if not jobs:
            del self._accounts[act.job.account]
        self._gone.append(self.runs.pop(jid))
        self.checkpointing.pop(jid, None)
        self._overdue.pop(jid, None)

    def set_run(self, jid: int, run: Running) -> None:
        """The core's view of a running job, new or given anew (a resume moved
        its limit)."""
        old = self.runs.get(jid)
        if old is not None:
            self._gone.append(old)
        self.runs[jid] = run
        self._started.append(run)

    def delta(self) -> RunningDelta:
        """The views added and taken out since the last delta (then forgotten)."""
        gen = next_gen()
        out = RunningDelta(self._gen, gen, tuple(self._started), tuple(self._gone))
        self._gen = gen
        self._started.clear()
        self._gone.clear()
        return out

    def gpus_by_account(self) -> dict[str, int]:
        """Allocated GPUs per account, accounts in the order of their first
        job in start order (as a walk over the map meets them)."""
        seq = self._seq
        first = sorted((seq[next(iter(jobs))], acct) for acct, jobs in self._accounts.items())
        return {acct: sum(self._accounts[acct].values()) for _, acct in first}

    def past_limit(self, now: float) -> list[int]:
        """Jobs whose time limit has come by `now`, in start order (each may
        still run on: a suspended one ends later, the caller checks its end)."""
        heap, seq = self._limits, self._seq
        while heap and heap[0][0] <= now:
            limit, s, jid = heapq.heappop(heap)
            act = self.get(jid)
            if act is None or seq[jid] != s:
                continue  # ended, or another attempt
            if act.limit_end != limit:  # moved by a resume: due later
                heapq.heappush(heap, (act.limit_end, s, jid))
                continue
            self._overdue[jid] = s
        if not self._overdue:
            return []
        return sorted(self._overdue, key=self._overdue.__getitem__)
