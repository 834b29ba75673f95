"""The engine as its rule modules see it.

tide.sim.faults and tide.sim.preemption apply node failures and preemptions
to the engine's state; `EngineView` names what they read and change of it and
the engine methods they call. `tide.sim.engine.Engine` satisfies it, so those
modules need not import the engine, which imports them (no import circle).
"""

from __future__ import annotations

from typing import Protocol

from tide.model import Cluster, Job, NodeState
from tide.model.sched_config import SchedulerConfig
from tide.sched.index import ClusterIndex
from tide.sched.requeue import RequeuePolicy
from tide.sched.state import Usage
from tide.sched.types import Allocation
from tide.sim.active import Active, ActiveJobs
from tide.sim.events import Fault, Suspension
from tide.sim.records import JobResult


class EngineView(Protocol):
    cluster: Cluster
    config: SchedulerConfig
    ix: ClusterIndex
    usage: Usage
    faults: list[Fault]
    save_on_warning: bool
    requeue_rules: RequeuePolicy
    pending: dict[int, Job]
    active: ActiveJobs
    results: dict[int, JobResult]  # jobs submitted and not yet finished
    finished: dict[str, str]
    seq: int  # event sequence (ties at equal times)
    token: int  # attempt tokens (stale END events)
    predicted: dict[int, float]
    preempting: dict[int, tuple[int, int, str, float]]
    warned: dict[int, float]
    suspended: dict[int, Suspension]
    parked: dict[int, tuple[int, Job]]
    completing: dict[int, Allocation]

    def _push(self, t: float, kind: int, data: int) -> None: ...

    def retire_result(self, job_id: int) -> None: ...

    def held(self, act: Active) -> Allocation: ...

    def paused_at(self, act: Active) -> float: ...

    def close_training(self, act: Active, t: float, work: float, lost: float = 0.0) -> None: ...

    def set_node_state(self, node: int, state: NodeState) -> None: ...
