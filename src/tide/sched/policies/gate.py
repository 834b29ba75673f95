"""The site rules every policy model shares with the Slurm cycle.

Holds, --begin, dependencies, partitions, constraints, node states and the
association/QOS limits are the site's rules, not a scheduler's: every model
(k8s-default, volcano, kueue, tide) applies them exactly as the `slurm` cycle
does, by reusing its state and readiness phases, so a comparison between
models measures scheduling and nothing else.
"""

from __future__ import annotations

from tide.model import Job
from tide.sched import cycle as _cycle
from tide.sched.cycle import Cycle
from tide.sched.eligibility import JobContext
from tide.sched.index import ClusterIndex
from tide.sched.state import Usage
from tide.sched.types import Snapshot


class Opener:
    """Starts cycles as Scheduler.schedule does, keeping its context memo and
    partition table between cycles (they depend on the cluster, the accounts
    and which nodes are usable only; the memo is dropped when those change)."""

    def __init__(self, ix: ClusterIndex) -> None:
        self.ix = ix
        self._contexts: dict[tuple, JobContext | None] = {}
        self._key: tuple[int, bytes] | None = None
        self._partitions: object | None = None

    def start_cycle(self, snap: Snapshot, usage: Usage | None) -> Cycle:
        """The cycle's working state: a private copy of `usage` (bound pods
        included, as the driver keeps them), node states, running jobs' limits."""
        cyc = _cycle._start_cycle(snap, self.ix, usage)
        key = (id(snap.accounts), cyc.usage.usable.tobytes())
        if key != self._key:
            self._contexts.clear()
            self._key = key
        cyc.memo = self._contexts
        if self._partitions is None:
            from tide.sched.priority import partition_table

            self._partitions = partition_table(snap.cluster)
        cyc.partitions = self._partitions
        return cyc


def ready(cyc: Cycle, job: Job) -> JobContext | None:
    """The job's context when the site rules let it start now; else None, with
    its pending reason recorded in the cycle's decisions. Contexts may be shared
    between cycles: never modify one."""
    return _cycle._ready(cyc, job)


def context(cyc: Cycle, job: Job) -> JobContext | None:
    """The job's context (shape, node masks, static reason), memoised."""
    return _cycle._context(cyc, job)


def gpus_of(job: Job) -> int:
    """GPUs the job asks for in all (its smallest node count)."""
    req = job.request
    return req.total_gpus(req.node_range()[0])
