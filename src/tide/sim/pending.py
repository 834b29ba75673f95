"""The twin's queue of pending jobs, and what changed in it between cycles.

The twin keeps its Job objects from one cycle to the next and changes them in
place; the core keeps per-job results (the priority order, the timed jobs)
and needs to know which jobs to look at again (Snapshot.pending_delta).
Every way a job enters the queue is a `__setitem__`, every way out a `pop` or
`del`; the one change made to a queued job that the core reads (its
EligibleTime, from the core's own decisions) goes through `touch`.

It also counts the queued jobs that wait on more than free GPUs (`others`,
tide.sched.futile.waits_only_for_gpus): while none does and no GPU is free,
the engine skips the pass.
"""

from __future__ import annotations

from itertools import count
from typing import Any

from tide.model import Job
from tide.sched.futile import waits_only_for_gpus
from tide.sched.types import PendingDelta

_GENS = count(1)  # snapshot names, unique in the process (a memo follows one driver)


def next_gen() -> int:
    """A new snapshot name (PendingDelta.gen, RunningDelta.gen)."""
    return next(_GENS)


class PendingJobs(dict[int, Job]):
    """Job id -> pending job, remembering the ids put in, touched or taken
    out since the last `delta`."""

    def __init__(self) -> None:
        super().__init__()
        self._changed: set[int] = set()
        self._gone: set[int] = set()
        self._gen = 0  # the last delta's name (0: none yet)
        # `others`: jobs put in or touched since it last looked (tested then:
        # the engine sets a new job's eligibility after putting it in), and
        # the queued jobs that wait on more than GPUs
        self._untested: set[int] = set()
        self._others: set[int] = set()

    def __setitem__(self, job_id: int, job: Job) -> None:
        super().__setitem__(job_id, job)
        self._changed.add(job_id)
        self._untested.add(job_id)

    def __delitem__(self, job_id: int) -> None:
        super().__delitem__(job_id)
        self._left(job_id)

    def pop(self, job_id: int, *default: Any) -> Any:  # type: ignore[override]
        if job_id in self:
            self._left(job_id)
        return super().pop(job_id, *default)

    def popitem(self) -> tuple[int, Job]:
        job_id, job = super().popitem()
        self._left(job_id)
        return job_id, job

    def clear(self) -> None:
        self._gone.update(self)
        self._untested.clear()
        self._others.clear()
        super().clear()

    def _left(self, job_id: int) -> None:
        self._gone.add(job_id)
        self._untested.discard(job_id)
        self._others.discard(job_id)

    def update(self, *args: Any, **kw: Any) -> None:
        for job_id, job in dict(*args, **kw).items():
            self[job_id] = job

    def setdefault(self, job_id: int, job: Job) -> Job:  # type: ignore[override]
        if job_id not in self:
            self[job_id] = job
        return self[job_id]

    def touch(self, job_id: int) -> None:
        """A queued job was changed in place."""
        self._changed.add(job_id)
        self._untested.add(job_id)

    def others(self) -> int:
        """How many queued jobs wait on more than free GPUs (a dependency, a
        hold, a begin time...: tide.sched.futile.waits_only_for_gpus false)."""
        for job_id in self._untested:
            if waits_only_for_gpus(self[job_id]):
                self._others.discard(job_id)
            else:
                self._others.add(job_id)
        self._untested.clear()
        return len(self._others)

    def delta(self) -> PendingDelta:
        """What changed since the last delta (then forgotten)."""
        gen = next_gen()
        changed = tuple(self[j] for j in sorted(self._changed) if j in self)
        out = PendingDelta(self._gen, gen, changed, frozenset(self._gone))
        self._gen = gen
        self._changed.clear()
        self._gone.clear()
        return out


__all__ = ["PendingJobs", "next_gen"]
