"""The twin's queue of pending jobs, and what changed in it between cycles.

The twin keeps its Job objects from one cycle to the next and changes them in
place; the core keeps per-job results (the priority order) and needs to know
which jobs to look at again (Snapshot.pending_delta). Every way a job enters
the queue is a `__setitem__`; the one change made to a queued job that the
core reads (its EligibleTime, from the core's own decisions) goes through
`touch`.
"""

from __future__ import annotations

from itertools import count

from tide.model import Job
from tide.sched.types import PendingDelta

_GENS = count(1)  # snapshot names, unique in the process (a memo follows one driver)


class PendingJobs(dict[int, Job]):
    """Job id -> pending job, remembering the ids put in or touched since the
    last `delta`."""

    def __init__(self) -> None:
        super().__init__()
        self._changed: set[int] = set()
        self._gen = 0  # the last delta's name (0: none yet)

    def __setitem__(self, job_id: int, job: Job) -> None:
        super().__setitem__(job_id, job)
        self._changed.add(job_id)

    def touch(self, job_id: int) -> None:
        """A queued job was changed in place."""
        self._changed.add(job_id)

    def delta(self) -> PendingDelta:
        """What changed since the last delta (then forgotten)."""
        gen = next(_GENS)
        out = PendingDelta(self._gen, gen, frozenset(self._changed))
        self._gen = gen
        self._changed.clear()
        return out


__all__ = ["PendingJobs"]
