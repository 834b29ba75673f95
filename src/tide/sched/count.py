"""The core's count backend: the same backfill policy on interchangeable nodes.

When every node is alike, there is no topology and every job takes whole
nodes (a Parallel Workloads Archive log replayed with one GPU per node is
the classic case), a placement is just "the k lowest-numbered free nodes"
and the plan is a step function of free node counts over time. This backend
keeps that state incrementally and decides with the same rules as the
general cycle (tide.sched.cycle), so the two agree job for job on such
clusters (tests/sched/test_count_equivalence.py checks it):

- main pass: jobs in queue order start while they fit; the first that does
  not fit blocks the rest;
- EASY: the first blocked job gets a reservation at its earliest start (the
  shadow time); a later job starts now if it fits now and either ends by the
  shadow time or leaves the reservation's nodes alone (the extra nodes);
- conservative: every queued job, in order, gets the earliest slot in the
  profile where it fits for its whole time limit; a slot at `now` starts it.
The plan trusts time limits; a job that ends early frees its tail.
Pure: no clock, no I/O; `now` is always passed in.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, field

from tide.model.sched_config import BackfillMode, QueueOrder


@dataclass(slots=True)
class CountJob:
    id: int
    need: int  # nodes
    limit: float  # seconds (the plan's estimate)
    submit: float
    seq: int  # arrival order (file order breaks submit-time ties)


@dataclass(slots=True)
class CountBackend:
    nodes: int
    mode: BackfillMode
    order: QueueOrder = QueueOrder.FCFS
    free: int = 0
    queue: list[CountJob] = field(default_factory=list)
    running_ends: list[tuple[float, int, int]] = field(default_factory=list)  # (end, id, need)
    free_ids: list[int] = field(default_factory=list)
    held: dict[int, list[int]] = field(default_factory=dict)  # job -> node ids
    limit_end: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.free = self.nodes
        self.free_ids = list(range(self.nodes))

    # -- state changes --------------------------------------------------------

    def submit(self, job: CountJob, now: float) -> bool:
        """Queue a job; True when a pass could start something (it fits now)."""
        if self.order is QueueOrder.SJF:
            keys = [(j.limit, j.submit, j.seq) for j in self.queue]
            self.queue.insert(bisect_right(keys, (job.limit, job.submit, job.seq)), job)
        else:
            self.queue.append(job)
        return job.need <= self.free + self._ending(now)

    def _ending(self, now: float) -> int:
        """Nodes of jobs whose time limit is up at `now`: they end at this very
        instant, whatever order same-time events are handled in."""
        total = 0
        for end, _, n in self.running_ends:
            if end > now:
                break
            total += n
        return total

    def _retire(self, now: float) -> None:
        while self.running_ends and self.running_ends[0][0] <= now:
            self.end(self.running_ends[0][1])

    def end(self, job_id: int) -> None:
        """The job ended (a no-op when its limit already retired it)."""
        end = self.limit_end.pop(job_id, None)
        if end is None:
            return
        ids = self.held.pop(job_id)
        i = self.running_ends.index((end, job_id, len(ids)))
        del self.running_ends[i]
        self.free += len(ids)
        for n in ids:
            heapq.heappush(self.free_ids, n)

    def _start(self, job: CountJob, now: float, started: list[tuple[int, list[int]]]) -> None:
        ids = [heapq.heappop(self.free_ids) for _ in range(job.need)]
        ids.sort()
        self.free -= job.need
        end = now + job.limit
        self.held[job.id] = ids
        self.limit_end[job.id] = end
        insort(self.running_ends, (end, job.id, job.need))
        started.append((job.id, ids))

    # -- the pass --------------------------------------------------------------

    def schedule(self, now: float, backfill: bool = True) -> list[tuple[int, list[int]]]:
        """Start what the policy allows now: [(job id, node ids)]."""
        started: list[tuple[int, list[int]]] = []
        self._retire(now)
        q = self.queue
        k = 0
        while k < len(q) and q[k].need <= self.free:
            self._start(q[k], now, started)
            k += 1
        del q[:k]
        if not q or not backfill or self.mode is BackfillMode.NONE:
            return started
        if self.mode is BackfillMode.EASY:
            self._easy(now, started)
        else:
            self._conservative(now, started)
        return started

    def _shadow(self, now: float, need: int) -> tuple[float, int]:
        """When the head can start (running jobs end at their limits) and the
        nodes to spare at that moment (every job ending then included)."""
        avail = self.free
        ends = self.running_ends
        for i, (end, _, n) in enumerate(ends):
            avail += n
            if avail >= need:
                for later, _, m in ends[i + 1 :]:
                    if later != end:
                        break
                    avail += m
                return max(end, now), avail - need
        return float("inf"), 0

    def _easy(self, now: float, started: list[tuple[int, list[int]]]) -> None:
        q = self.queue
        shadow, extra = self._shadow(now, q[0].need)
        keep = [q[0]]
        for job in q[1:]:
            if job.need <= self.free:
                if now + job.limit <= shadow:
                    self._start(job, now, started)
                    continue
                if job.need <= extra:
                    extra -= job.need
                    self._start(job, now, started)
                    continue
            keep.append(job)
        self.queue = keep

    def _conservative(self, now: float, started: list[tuple[int, list[int]]]) -> None:
        times, free = self._profile(now)
        queue = self.queue
        # smallest need from each position on: once the nodes free now are
        # fewer than that, nothing behind can start now and the pass may stop
        # (the plan is rebuilt at the next pass anyway)
        floor = [0] * len(queue)
        low = 1 << 60
        for k in range(len(queue) - 1, -1, -1):
            low = min(low, queue[k].need)
            floor[k] = low
        keep = []
        for k, job in enumerate(queue):
            if self.free < floor[k]:
                keep.extend(queue[k:])
                break
            i = _earliest(times, free, job.need, job.limit)
            if i is None:
                keep.append(job)
                continue
            t = times[i]
            _take(times, free, i, t + job.limit, job.need)
            if t <= now and job.need <= self.free:  # a limit ending now may not have ended yet
                self._start(job, now, started)
            else:
                keep.append(job)
        self.queue = keep

    def _profile(self, now: float) -> tuple[list[float], list[int]]:
        times, free = [now], [self.free]
        for end, _, n in self.running_ends:
            if end <= times[-1]:
                free[-1] += n
            else:
                times.append(end)
                free.append(free[-1] + n)
        return times, free

    def planned(self, now: float) -> dict[int, float]:
        """Planned start of every queued job (the conservative plan), for reports."""
        times, free = self._profile(now)
        out: dict[int, float] = {}
        for job in self.queue:
            i = _earliest(times, free, job.need, job.limit)
            if i is not None:
                out[job.id] = times[i]
                _take(times, free, i, times[i] + job.limit, job.need)
        return out


def _earliest(times: list[float], free: list[int], need: int, length: float) -> int | None:
    """First segment index i where `need` fits from times[i] for `length`."""
    n = len(times)
    i = 0
    while i < n:
        if free[i] < need:
            i += 1
            continue
        end = times[i] + length
        j = i
        while j + 1 < n and times[j + 1] < end:
            if free[j + 1] < need:
                break
            j += 1
        else:
            return i
        i = j + 1
    return None


def _take(times: list[float], free: list[int], i: int, end: float, need: int) -> None:
    """Subtract `need` from the segments from i up to `end` (splitting at `end`).
    The job holds its nodes until `end`, not after: a segment that starts at
    `end` keeps them."""
    j = bisect_left(times, end, lo=i)  # the first segment starting at or after end
    if j == len(times) or times[j] != end:
        times.insert(j, end)
        free.insert(j, free[j - 1])
    for k in range(i, j):
        free[k] -= need
