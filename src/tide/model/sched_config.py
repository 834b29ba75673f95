"""Scheduling configuration: the slurm.conf keys that steer the core.

Defaults are Slurm 22.05's documented defaults unless noted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class BackfillMode(StrEnum):
    NONE = "none"  # sched/builtin: strict priority order
    EASY = "easy"  # reservation for the first blocked job only
    CONSERVATIVE = "conservative"  # sched/backfill: a reservation for every tested job


class QueueOrder(StrEnum):
    PRIORITY = "priority"  # multifactor priority (Slurm)
    FCFS = "fcfs"  # submit order
    SJF = "sjf"  # shortest time limit first


@dataclass(slots=True)
class PriorityWeights:
    age: int = 0
    fairshare: int = 0
    job_size: int = 0
    partition: int = 0
    qos: int = 0
    assoc: int = 0
    tres: dict[str, float] = field(default_factory=dict)  # PriorityWeightTRES


@dataclass(slots=True)
class SchedulerConfig:
    # the named policy both the live controller and the twin run (tide.sched.policies)
    policy: str = "slurm"
    # preemption victims: "lost_work" or "priority"; "" = the policy's own default
    victim_order: str = ""
    scheduler_type: str = "sched/backfill"
    backfill: BackfillMode = BackfillMode.CONSERVATIVE
    order: QueueOrder = QueueOrder.PRIORITY
    # SchedulerParameters
    bf_window: int = 86400  # seconds (Slurm: minutes, default 1440)
    bf_resolution: int = 60  # seconds
    bf_max_job_test: int = 500
    bf_interval: int = 30  # seconds
    bf_continue: bool = False
    default_queue_depth: int = 100
    # sched_min_interval (seconds; slurm.conf gives microseconds): main passes are at
    # least this far apart, and ends closer together share one (tide.sched.triggers)
    sched_min_interval: float = 0.0
    # batch_sched_delay: submissions get a main pass from slurmctld's background
    # thread at most every this many seconds; applied where that thread's phase is
    # known (background_phase: a recorded Slurm run), else a submission gets one at once
    batch_sched_delay: int = 3
    background_phase: float | None = None
    # priority/multifactor
    priority_type: str = "priority/multifactor"
    weights: PriorityWeights = field(default_factory=PriorityWeights)
    decay_half_life: int = 7 * 86400  # seconds; 0 = no decay
    priority_calc_period: int = 300  # seconds between priority/fair-share recalculations
    # when (scheduler clock) one recalculation ran; the others follow every period
    # (Slurm's run from slurmctld's start); None: from the first cycle
    priority_phase: float | None = None
    # TRESBillingWeights for fair-share usage ({"cpu": 1.0} bills CPUs as Slurm
    # does without weights); None bills GPU-seconds, tide's default
    billing_weights: dict[str, float] | None = None
    max_age: int = 7 * 86400  # seconds
    favor_small: bool = False
    priority_flags: tuple[str, ...] = ()
    # placement
    topology_plugin: str = "topology/flat"
    select_type: str = "select/cons_tres"
    select_type_parameters: tuple[str, ...] = ("CR_Core_Memory",)
    max_switch_wait: int = 300  # seconds (SchedulerParameters max_switch_wait)
    # Emulate Slurm's select plugin will-run test, which removes running jobs in
    # time batches (30 s, then doubling) so reservations land at batch ends;
    # set for configurations read from a slurm.conf (see docs/core.md)
    will_run_batches: bool = False
    # Slurm 22.05's backfill thread starts the tasks of job arrays, its main scheduler
    # does not (every array task of the recorded peer runs: docs/slurm-peer.md)
    array_tasks_by_backfill: bool = False
    bf_phase: float = 0.0  # seconds past each multiple of bf_interval at which backfill runs
    epoch: float = 0.0  # Unix time of the scheduler clock's zero (the twin's trace start)
    # preemption (issue 7 fills these in)
    preempt_type: str = "preempt/none"
    preempt_mode: str = "OFF"
    # KillWait and MessageTimeout (seconds): Slurm's preemptor takes no new victims
    # for their sum after it last did (node_scheduler.c select_nodes; the `slurm` policy)
    kill_wait: int = 30
    message_timeout: int = 10
    # SchedulerParameters preempt_youngest_first: Slurm's victims youngest first
    # instead of by the preempt plugin's priority (tier or QOS, then node count)
    preempt_youngest_first: bool = False
    # the twin's model of a killed job's COMPLETING state (not a Slurm key): seconds
    # after the kill until its batch host (the first node) and its other nodes are
    # free again; a live cluster reports its own (docs/slurm-peer.md)
    kill_completing: tuple[float, float] = (0.0, 0.0)
    # submission limits (slurm.conf MaxArraySize, SchedulerParameters max_script_size)
    max_array_size: int = 1001  # array task ids run 0..max_array_size-1
    max_script_size: int = 4 * 1024 * 1024  # bytes of a batch script
    # unknown / passthrough keys kept for round-trips
    extra: dict[str, str] = field(default_factory=dict)
