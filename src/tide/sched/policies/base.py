"""Policies: named strategies that turn a snapshot into decisions.

Every policy is pure (no clock, no I/O) and is driven the same way by the
live controller and by the twin: `schedule(snapshot, usage)` where `usage`
is the driver's incrementally kept view of free resources (the policy must
not modify it).
"""

from __future__ import annotations

from typing import Protocol

from tide.sched.index import ClusterIndex
from tide.sched.state import Usage
from tide.sched.types import Decisions, Snapshot


class Policy(Protocol):
    name: str

    def schedule(self, snap: Snapshot, usage: Usage) -> Decisions: ...


class SlurmPolicy:
    """Slurm semantics: multifactor priority, main pass, backfill, cons_tres,
    topology/tree or block, as configured in the snapshot's SchedulerConfig."""

    name = "slurm"

    def __init__(self, index: ClusterIndex) -> None:
        from tide.sched.cycle import Scheduler

        # Slurm's preempt plugins take victims lowest priority first (docs/preemption.md)
        self._scheduler = Scheduler(index, victim_order="priority")

    def schedule(self, snap: Snapshot, usage: Usage) -> Decisions:
        return self._scheduler.schedule(snap, usage)
