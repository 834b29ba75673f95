"""The twin's queue of pending jobs, and what changed in it between cycles.

The twin keeps its Job objects from one cycle to the next and changes them in
place; the core keeps per-job results (the priority order, the timed jobs)
and needs to know which jobs to look at again (Snapshot.pending_delta).
Every way a job enters the queue is a `__setitem__`, every way out a `pop` or
`del`; the one change made to a queued job that the core reads (its
EligibleTime, from the core's own decisions) goes through `touch`.

A snapshot reads the queue through a `QueueView`, not a copy of it (a copy
per cycle is O(pending): most of a pass with a backlog draining).

It also counts the queued jobs that wait on more than free GPUs (`others`,
tide.sched.futile.waits_only_for_gpus): while none does and no GPU is free,
the engine skips the pass.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from itertools import count
from typing import Any, overload

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
        self.moves = 0  # jobs put in or taken out so far (a QueueView's validity)
        # `first`: (job id, its put number) in queue order, some stale (taken
        # out or put in again since), and each queued job's put number
        self._arrivals: deque[tuple[int, int]] = deque()
        self._put_at: dict[int, int] = {}

    def __setitem__(self, job_id: int, job: Job) -> None:
        if job_id not in self:  # a job put again in place keeps its place
            self._arrivals.append((job_id, self.moves))
            self._put_at[job_id] = self.moves
        super().__setitem__(job_id, job)
        self._changed.add(job_id)
        self._untested.add(job_id)
        self.moves += 1

    def __delitem__(self, job_id: int) -> None:
        super().__delitem__(job_id)
        self._left(job_id)

    def pop(self, job_id: int, *default: Any) -> Any:  # type: ignore[override]
        if job_id not in self:
            return super().pop(job_id, *default)
        job = super().pop(job_id)
        self._left(job_id)
        return job

    def popitem(self) -> tuple[int, Job]:
        job_id, job = super().popitem()
        self._left(job_id)
        return job_id, job

    def clear(self) -> None:
        self.moves += 1
        self._gone.update(self)
        self._untested.clear()
        self._others.clear()
        self._arrivals.clear()
        self._put_at.clear()
        super().clear()

    def _left(self, job_id: int) -> None:
        """After a job was taken out."""
        self.moves += 1
        self._gone.add(job_id)
        self._untested.discard(job_id)
        self._others.discard(job_id)
        self._put_at.pop(job_id, None)

    def update(self, *args: Any, **kw: Any) -> None:
        for job_id, job in dict(*args, **kw).items():
            self[job_id] = job

    def setdefault(self, job_id: int, job: Job) -> Job:  # type: ignore[override]
        if job_id not in self:
            self[job_id] = job
        return self[job_id]

    def first(self) -> Job | None:
        """The first job in queue order. Not `next(iter(self))`: a dict does not
        shrink as jobs leave, and a walk from its head steps over every hole
        before the first job (tens of thousands while a backlog drains from
        the head); stale arrivals are dropped as met, once each."""
        arrivals, put_at = self._arrivals, self._put_at
        while arrivals:
            job_id, put = arrivals[0]
            if put_at.get(job_id) == put:
                return self[job_id]
            arrivals.popleft()
        return None

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

    def view(self) -> QueueView:
        """The queued jobs in queue order, for one snapshot (Snapshot.pending)."""
        return QueueView(self)


class QueueView(Sequence[Job]):
    """The jobs of a PendingJobs in its order, read in place: length and
    iteration read the queue, an index a list built on first use (the
    core indexes the pending jobs only when it sorts them all). The engine
    changes the queue only after the core's cycle; a view used once the
    queue changed raises rather than show other jobs than its snapshot's."""

    __slots__ = ("_listed", "_moves", "_queue")

    def __init__(self, queue: PendingJobs) -> None:
        self._queue = queue
        self._moves = queue.moves
        self._listed: list[Job] | None = None

    def _live(self) -> PendingJobs:
        if self._queue.moves != self._moves:
            raise RuntimeError("the queue changed since this snapshot of it was taken")
        return self._queue

    def __len__(self) -> int:
        return len(self._live())

    def __iter__(self) -> Iterator[Job]:
        return iter(self._live().values())

    @overload
    def __getitem__(self, i: int) -> Job: ...
    @overload
    def __getitem__(self, i: slice) -> list[Job]: ...
    def __getitem__(self, i: int | slice) -> Job | list[Job]:
        queue = self._live()
        if self._listed is None:
            self._listed = list(queue.values())
        return self._listed[i]


__all__ = ["PendingJobs", "QueueView", "next_gen"]
