"""`slurm`: Slurm's semantics, as configured in the snapshot's SchedulerConfig.

Multifactor priority, main pass, backfill, cons_tres, topology/tree or
block: the phases of tide.sched.cycle composed as Slurm runs them
(tide.sched.scheduler). Victims of preemption are chosen lowest priority
first, as Slurm's preempt plugins do (docs/preemption.md), unless the
policy is built with another victim order.
"""

from __future__ import annotations

from tide.sched.cycle import PRIORITY_ORDER
from tide.sched.index import ClusterIndex
from tide.sched.policies.base import Capabilities
from tide.sched.scheduler import Scheduler
from tide.sched.state import Usage
from tide.sched.types import Decisions, Snapshot


class SlurmPolicy:
    name = "slurm"
    capabilities = Capabilities(time_invariant=True, idle_quiet=True)

    def __init__(self, index: ClusterIndex, victim_order: str = PRIORITY_ORDER) -> None:
        self._scheduler = Scheduler(index, victim_order=victim_order)

    @property
    def victim_order(self) -> str:
        return self._scheduler.victim_order

    def schedule(self, snap: Snapshot, usage: Usage | None = None) -> Decisions:
        return self._scheduler.schedule(snap, usage)


__all__ = ["SlurmPolicy"]
