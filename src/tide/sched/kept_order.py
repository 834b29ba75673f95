"""The pending jobs in evaluation order, kept between cycles. Pure.

Sorting every pending job every cycle makes a cycle cost O(pending) in
Python however little changed: with a large backlog (tens of thousands of
small jobs behind a whole-cluster job) the twin then runs a job a second.
A `KeptOrder` holds each job's sort key, sorted, and is updated with the
jobs that came, went or changed (Snapshot.pending_delta) instead.

A sort key is (top, submit, id) as `priority.priority_order` sorts them
(top folds the partition tier and the priority into one int64), so the kept
order is exactly the from-scratch one.
"""

from __future__ import annotations

from bisect import bisect_left

from tide.model import Job

SortKey = tuple[int, float, int]  # (tier and priority folded, submit, job id)


class KeptOrder:
    """Jobs sorted by their keys; `gen` names the driver's snapshot it
    follows (Snapshot.pending_delta), None while it follows none."""

    def __init__(self) -> None:
        self._keys: list[SortKey] = []
        self._jobs: list[Job] = []  # the jobs of `_keys`, in the same order
        self._key_of: dict[int, SortKey] = {}
        self.gen: int | None = None

    def __len__(self) -> int:
        return len(self._jobs)

    @property
    def jobs(self) -> list[Job]:
        """The jobs in evaluation order (do not modify)."""
        return self._jobs

    @property
    def ids(self) -> list[int]:
        return [k[2] for k in self._keys]

    def reset(self, keys: list[SortKey], jobs: list[Job]) -> None:
        """Keep exactly these keys (already sorted) and their jobs."""
        self._keys, self._jobs = keys, jobs
        self._key_of = {k[2]: k for k in keys}

    def clear(self) -> None:
        self.reset([], [])
        self.gen = None

    def put(self, key: SortKey, job: Job) -> None:
        """Add the job of `key`, or move it there if kept with another key
        (and keep this object for it)."""
        old = self._key_of.get(key[2])
        if old is not None:
            at = bisect_left(self._keys, old)
            if old == key:
                self._jobs[at] = job
                return
            del self._keys[at]
            del self._jobs[at]
        at = bisect_left(self._keys, key)
        self._keys.insert(at, key)
        self._jobs.insert(at, job)
        self._key_of[key[2]] = key

    def remove(self, job_id: int) -> None:
        key = self._key_of.pop(job_id, None)
        if key is None:
            return
        at = bisect_left(self._keys, key)
        del self._keys[at]
        del self._jobs[at]


__all__ = ["KeptOrder", "SortKey"]
