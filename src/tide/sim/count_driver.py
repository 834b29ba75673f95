"""The twin's fast driver for clusters of interchangeable nodes.

Same events, same tie order, same results as the general engine, but the
decisions come from the core's count backend (tide.sched.count), which
keeps its plan incrementally instead of rebuilding a snapshot per event.
The engine picks it by itself when `count_applicable` says the cluster and
the policy allow it, and falls back to the general path on the first job
that does not fit the model (the trace is read again from the start).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable

from tide.model import JobRequest, JobState
from tide.model.sched_config import QueueOrder, SchedulerConfig
from tide.sched.count import CountBackend, CountJob
from tide.sched.index import ClusterIndex
from tide.sim.metrics import JobResult, Sample
from tide.sim.workload.base import SimJob

SUBMIT, END, BACKFILL = 0, 3, 5
PLOT_PERIOD = 900.0  # seconds of virtual time between per-account samples


class NotCountable(Exception):
    """A job the count backend cannot represent: use the general path."""


def count_applicable(ix: ClusterIndex, config: SchedulerConfig, has_limits: bool) -> bool:
    if ix.n_leaves != 1 or ix.n == 0 or has_limits:
        return False
    if config.order not in (QueueOrder.FCFS, QueueOrder.SJF):
        return False
    same = (ix.gpus == ix.gpus[0]).all() and (ix.cores == ix.cores[0]).all()
    return bool(
        same and (ix.mem == ix.mem[0]).all() and (ix.weight == ix.weight[0]).all() and ix.up.all()
    )


def nodes_needed(req: JobRequest, ix: ClusterIndex) -> int:
    """Whole nodes this request takes, or NotCountable."""
    gpn = int(ix.gpus[0])
    lo, hi = req.node_range()
    simple = (
        lo == hi
        and req.dependency is None
        and not req.hold
        and req.begin is None
        and not req.constraint
        and not req.nodelist
        and not req.exclude
        and req.switches is None
        and not req.reservation
        and not req.gpu_type
        and req.cpus_per_task * (req.ntasks_per_node or 1) <= int(ix.cores[0] * ix.tpc[0])
        and (req.mem_per_node or 0) <= int(ix.mem[0])
        and not req.partitions
    )
    per_node = req.gpus_per_node
    if per_node is None and req.gpus is not None and lo == hi:
        per_node = req.gpus // lo if req.gpus % lo == 0 else None
    if not simple or per_node != gpn or req.time_limit is None:
        raise NotCountable(req.name)
    return lo


class CountDriver:
    def __init__(self, ix: ClusterIndex, config: SchedulerConfig, partition: str) -> None:
        self.ix = ix
        self.config = config
        self.partition = partition
        self.backend = CountBackend(ix.n, config.backfill, config.order)
        self.gpn = int(ix.gpus[0])
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.results: dict[int, JobResult] = {}
        self.sims: dict[int, SimJob] = {}
        self.nodes_of: dict[int, list[int]] = {}
        self.by_account: dict[str, int] = {}
        self.account_seconds: dict[str, float] = {}
        self._plot_t = -float("inf")
        self.samples: list[Sample] = []
        self.cycles = 0
        self.events = 0

    def run(self, jobs: Iterable[SimJob]) -> None:
        it = iter(jobs)
        self._feed(it)
        bf_interval = self.config.bf_interval
        next_bf: float | None = None
        heap, pop = self.heap, heapq.heappop
        while heap:
            t, kind, _, jid = pop(heap)
            self.events += 1
            if kind == SUBMIT:
                self._feed(it)
                go = self._submit(t, jid)
            elif kind == END:
                self._end(t, jid)
                go = True
            else:
                next_bf = None
                go = bool(self.backend.queue)
            if go:
                backfill = bf_interval <= 0 or kind == BACKFILL
                if bf_interval > 0 and next_bf is None and self.backend.queue:
                    next_bf = t + bf_interval
                    self._push(next_bf, BACKFILL, 0)
                self.cycles += 1
                for job_id, ids in self.backend.schedule(t, backfill):
                    self._start(t, job_id, ids)
                if kind == BACKFILL and len(heap) == 1 and heap[0][1] == BACKFILL:
                    # nothing runs and nothing is left to arrive: every later pass
                    # would see the same idle cluster and start nothing (the queue
                    # holds only jobs wider than it), so the run ends here
                    heap.pop()
                    next_bf = None
            self._sample(t)

    def _push(self, t: float, kind: int, jid: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, jid))

    def _feed(self, it: Iterable[SimJob]) -> None:
        sim = next(it, None)  # type: ignore[call-overload]
        if sim is not None:
            self.sims[sim.id] = sim
            self._push(sim.submit, SUBMIT, sim.id)

    def _submit(self, t: float, jid: int) -> bool:
        sim = self.sims[jid]
        req = sim.request
        need = nodes_needed(req, self.ix)
        account = sim.account or req.account or "root"
        self.results[jid] = JobResult(
            job_id=jid, name=sim.name or req.name, user=sim.user, account=account,
            qos=req.qos or "normal", submit=t, eligible=t, gpus=need * self.gpn, nodes=need,
            partition=self.partition,
        )  # fmt: skip
        job = CountJob(jid, need, float(req.time_limit or 0), t, self.seq)
        return self.backend.submit(job, t)

    def _start(self, t: float, jid: int, ids: list[int]) -> None:
        sim, res = self.sims[jid], self.results[jid]
        limit = float(sim.request.time_limit or math.inf)
        end = t + min(sim.duration, limit)
        res.start = t
        res.end = end
        res.state = JobState.RUNNING.value
        self.nodes_of[jid] = ids
        self.by_account[res.account] = self.by_account.get(res.account, 0) + res.gpus
        self.account_seconds[res.account] = self.account_seconds.get(
            res.account, 0.0
        ) + res.gpus * (end - t)
        self._push(end, END, jid)

    def _end(self, t: float, jid: int) -> None:
        self.backend.end(jid)
        res = self.results[jid]
        timed_out = self.sims[jid].duration > float(self.sims[jid].request.time_limit or math.inf)
        res.state = (JobState.TIMEOUT if timed_out else JobState.COMPLETED).value
        self.by_account[res.account] -= res.gpus
        del self.sims[jid]

    def _sample(self, t: float) -> None:
        b = self.backend
        allocated = (self.ix.n - b.free) * self.gpn
        blocked = bool(b.queue) and b.queue[0].need > b.free
        idle = b.free * self.gpn if blocked else 0
        last = self.samples[-1] if self.samples else None
        if last is not None and (last.allocated_gpus, last.blocked_idle_gpus, last.queue_len) == (
            allocated,
            idle,
            len(b.queue),
        ):
            return
        # per-account figures are for plots: one copy per PLOT_PERIOD is plenty
        plot = t - self._plot_t >= PLOT_PERIOD
        if plot:
            self._plot_t = t
        accounts = {a: g for a, g in self.by_account.items() if g} if plot else {}
        self.samples.append(Sample(t, allocated, idle, len(b.queue), accounts))
