"""The pending jobs in evaluation order, kept between cycles. Pure.

Sorting every pending job every cycle makes a cycle cost O(pending) in
Python however little changed: with a large backlog (tens of thousands of
small jobs behind a whole-cluster job) the twin then runs a job a second.
A `KeptOrder` holds each job's sort key, sorted, and is updated with the
jobs that came, went or changed (Snapshot.pending_delta) instead.

A sort key is (top, submit, id) as `priority.priority_order` sorts them
(top folds the partition tier and the priority into one int64), so the kept
order is exactly the from-scratch one.

A backlog drains from the head of the order (the jobs that start are the
first ones): a job taken out there moves the head past it instead of
shifting the whole list (the jobs then come as a `_Tail` of it), and the
dead head is cut once it is as long as the rest.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import overload

from tide.model import Job

SortKey = tuple[int, float, int]  # (tier and priority folded, submit, job id)
_DEAD = 64  # a dead head this long, and as long as the rest, is cut


class KeptOrder:
    """Jobs sorted by their keys; `gen` names the driver's snapshot it
    follows (Snapshot.pending_delta), None while it follows none. The
    entries before `_head` are dead (taken out from the head)."""

    def __init__(self) -> None:
        self._keys: list[SortKey] = []
        self._jobs: list[Job] = []  # the jobs of `_keys`, in the same order
        self._key_of: dict[int, SortKey] = {}
        self._head = 0
        self.gen: int | None = None

    def __len__(self) -> int:
        return len(self._jobs) - self._head

    @property
    def jobs(self) -> Sequence[Job]:
        """The jobs in evaluation order (do not modify; read it before the
        next change)."""
        return _Tail(self._jobs, self._head) if self._head else self._jobs

    @property
    def ids(self) -> list[int]:
        return [k[2] for k in self._keys[self._head :]]

    def reset(self, keys: list[SortKey], jobs: list[Job]) -> None:
        """Keep exactly these keys (already sorted) and their jobs."""
        self._keys, self._jobs, self._head = keys, jobs, 0
        self._key_of = {k[2]: k for k in keys}

    def clear(self) -> None:
        self.reset([], [])
        self.gen = None

    def put(self, key: SortKey, job: Job) -> None:
        """Add the job of `key`, or move it there if kept with another key
        (and keep this object for it)."""
        old = self._key_of.get(key[2])
        if old is not None:
            at = bisect_left(self._keys, old, self._head)
            if old == key:
                self._jobs[at] = job
                return
            self._drop(at)
        at = bisect_left(self._keys, key, self._head)
        if at == self._head and self._head:  # before every live job: the dead slot before
            self._head -= 1
            self._keys[self._head], self._jobs[self._head] = key, job
        else:
            self._keys.insert(at, key)
            self._jobs.insert(at, job)
        self._key_of[key[2]] = key

    def remove(self, job_id: int) -> None:
        key = self._key_of.pop(job_id, None)
        if key is not None:
            self._drop(bisect_left(self._keys, key, self._head))

    def _drop(self, at: int) -> None:
        if at != self._head:
            del self._keys[at]
            del self._jobs[at]
            return
        self._head += 1  # the first job: no shift (its entry stays, dead, until the cut)
        if self._head >= _DEAD and 2 * self._head >= len(self._keys):
            del self._keys[: self._head]
            del self._jobs[: self._head]
            self._head = 0


class _Tail(Sequence[Job]):
    """A list from `start` on, read in place (KeptOrder.jobs with a dead head)."""

    __slots__ = ("_jobs", "_start")

    def __init__(self, jobs: list[Job], start: int) -> None:
        self._jobs, self._start = jobs, start

    def __len__(self) -> int:
        return len(self._jobs) - self._start

    def __iter__(self) -> Iterator[Job]:
        return islice(self._jobs, self._start, None)

    @overload
    def __getitem__(self, i: int) -> Job: ...
    @overload
    def __getitem__(self, i: slice) -> list[Job]: ...
    def __getitem__(self, i: int | slice) -> Job | list[Job]:
        if isinstance(i, slice):
            return self._jobs[self._start :][i]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return self._jobs[self._start + i if i >= 0 else i]


__all__ = ["KeptOrder", "SortKey"]
