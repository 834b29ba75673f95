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


def open_cycle(snap: Snapshot, ix: ClusterIndex, usage: Usage | None) -> Cycle:
    """The cycle's working state: a private copy of `usage` (bound pods
    included, as the driver keeps them), node states, running jobs' limits."""
    return _cycle._start_cycle(snap, ix, usage)


def ready(cyc: Cycle, job: Job) -> JobContext | None:
    """The job's context when the site rules let it start now; else None, with
    its pending reason recorded in the cycle's decisions."""
    return _cycle._ready(cyc, job)


def gpus_of(job: Job) -> int:
    """GPUs the job asks for in all (its smallest node count)."""
    req = job.request
    return req.total_gpus(req.node_range()[0])
