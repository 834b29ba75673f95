"""The core's input and output: a snapshot in, decisions out.

The core is a pure function of a `Snapshot`: no I/O, no clock (`now` is an
input), no unseeded randomness. The live controller and the twin build the
snapshot, call `tide.sched.schedule`, and apply the returned decisions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from tide.model import AccountTree, Cluster, Job, Reservation
from tide.model.quota import QuotaTree
from tide.model.sched_config import SchedulerConfig


class Reason(StrEnum):
    """Pending reasons, with Slurm's exact spellings (squeue %r)."""

    NONE = "None"
    PRIORITY = "Priority"
    RESOURCES = "Resources"
    DEPENDENCY = "Dependency"
    DEPENDENCY_NEVER_SATISFIED = "DependencyNeverSatisfied"
    BEGIN_TIME = "BeginTime"
    JOB_HELD_USER = "JobHeldUser"
    JOB_HELD_ADMIN = "JobHeldAdmin"
    PARTITION_TIME_LIMIT = "PartitionTimeLimit"
    PARTITION_NODE_LIMIT = "PartitionNodeLimit"
    PARTITION_DOWN = "PartitionDown"
    PARTITION_INACTIVE = "PartitionInactive"
    REQ_NODE_NOT_AVAIL = "ReqNodeNotAvail"
    RESERVATION = "Reservation"
    BAD_CONSTRAINTS = "BadConstraints"
    ASSOC_GRP_GRES = "AssocGrpGRES"
    ASSOC_GRP_JOBS_LIMIT = "AssocGrpJobsLimit"
    ASSOC_GRP_CPU_LIMIT = "AssocGrpCpuLimit"
    ASSOC_GRP_NODE_LIMIT = "AssocGrpNodeLimit"
    ASSOC_MAX_JOBS_LIMIT = "AssocMaxJobsLimit"
    ASSOC_MAX_WALL = "AssocMaxWallDurationPerJobLimit"
    ASSOC_MAX_GRES_PER_JOB = "AssocMaxGRESPerJob"
    QOS_MAX_GRES_PER_USER = "QOSMaxGRESPerUser"
    QOS_MAX_JOBS_PER_USER = "QOSMaxJobsPerUserLimit"
    QOS_GRP_GRES = "QOSGrpGRES"
    QOS_GRP_JOBS_LIMIT = "QOSGrpJobsLimit"
    QOS_MAX_WALL = "QOSMaxWallDurationPerJobLimit"
    QOS_MAX_GRES_PER_JOB = "QOSMaxGRESPerJob"
    INVALID_ACCOUNT = "InvalidAccount"
    INVALID_QOS = "InvalidQOS"
    ACCOUNT_NOT_ALLOWED = "AccountNotAllowed"
    QOS_NOT_ALLOWED = "QOSNotAllowed"
    JOB_ARRAY_TASK_LIMIT = "JobArrayTaskLimit"
    NODE_DOWN = "NodeDown"
    # quotas (docs/preemption.md): over nominal quota with nothing left to borrow
    # in the cohort, or at nominal + borrowingLimit
    COHORT_QUOTA = "CohortQuota"
    QUOTA_BORROWING_LIMIT = "QuotaBorrowingLimit"
    SWITCHES = "Resources"  # Slurm shows Resources while waiting for --switches


@dataclass(slots=True, frozen=True)
class NodeAlloc:
    """What one job holds on one node."""

    node: int  # index into Cluster.nodes
    gpus: tuple[int, ...] = ()  # GPU device indices
    cores: tuple[int, ...] = ()  # core ids (CR_Core unit)
    mem: int = 0  # MB

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)


@dataclass(slots=True, frozen=True)
class Allocation:
    job_id: int
    nodes: tuple[NodeAlloc, ...]
    # counted once: every cycle reads it for every running job (limits, samples)
    gpu_count: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpu_count", sum(len(n.gpus) for n in self.nodes))

    @property
    def node_indices(self) -> tuple[int, ...]:
        return tuple(n.node for n in self.nodes)


@dataclass(slots=True)
class Running:
    """A running (or suspended) job as the core sees it."""

    job: Job
    alloc: Allocation
    start: float
    end: float  # start + time limit: the plan trusts limits


@dataclass(slots=True, frozen=True)
class PendingDelta:
    """What a driver that keeps its Job objects between cycles (the twin) says
    changed in its queue since its snapshot `since`: the pending jobs it added
    (again) or changed in place since then (a field the core reads: eligible,
    request, hold, ...), and the ids of the jobs that left the queue (some may
    be back among `changed`). Every other pending job is the same object,
    unchanged. `gen` names this snapshot (unique: a later delta's `since`); the
    core then updates what it kept, else recomputes it all."""

    since: int
    gen: int
    changed: tuple[Job, ...]
    gone: frozenset[int] = frozenset()


@dataclass(slots=True, frozen=True)
class RunningDelta:
    """What a driver that keeps its `Running` objects between cycles (the twin)
    says changed in snap.running since its snapshot `since`: the objects it
    added (a start, or a job's view given anew) and those it took out (an
    end, or the old view). Every other one is the same object as then. `gen`
    names this snapshot; the core updates what it counted, else counts all."""

    since: int
    gen: int
    started: tuple[Running, ...]
    gone: tuple[Running, ...]


@dataclass(slots=True)
class Snapshot:
    cluster: Cluster
    config: SchedulerConfig
    now: float
    # in queue order; read, never kept past the cycle (the twin's is a view
    # of its queue, not a copy: tide.sim.pending.QueueView)
    pending: Sequence[Job] = field(default_factory=list)
    running: list[Running] = field(default_factory=list)
    accounts: AccountTree = field(default_factory=AccountTree)
    # decayed usage (GPU-seconds or TRES-billing-seconds) per association key:
    # "account" for accounts, "account/user" for users
    usage: dict[str, float] = field(default_factory=dict)
    reservations: list[Reservation] = field(default_factory=list)
    # outcome of finished jobs, for dependencies: display id -> final state name
    finished: dict[str, str] = field(default_factory=dict)
    # whether to run the backfill pass this cycle (the driver owns bf_interval)
    backfill: bool = True
    # when priorities were last recalculated (Slurm does it every
    # PriorityCalcPeriod): age is measured to this time; None = now
    priority_time: float | None = None
    # Kubernetes-style models: pods already bound for jobs not yet running
    # (their resources are in the driver's usage, held idle)
    bound: dict[int, Allocation] = field(default_factory=dict)
    # runtime predictions (seconds of run) made at the edge, for policies that
    # use them (tide's); jobs absent here are planned with their time limits
    predicted: dict[int, float] = field(default_factory=dict)
    # preemption (docs/preemption.md): running job id -> time of its last
    # completed checkpoint (absent = its start time: all its work would be lost)
    last_checkpoint: dict[int, float] = field(default_factory=dict)
    # running jobs already told to go (Decisions.preemptions applied, grace
    # running) -> the preemptor they make room for; never chosen again, and
    # counted as released for that preemptor. The driver also sets such a
    # job's Running.end to its kill time (now + grace at the decision).
    preempting: dict[int, int] = field(default_factory=dict)
    # what killed jobs hold until they have completed (Slurm's COMPLETING state;
    # already busy in the driver's usage): the `slurm` policy's backfill thread
    # counts them free when it places a job, then waits. The twin gives a killed
    # job's nodes (gone from `running`); the live server every COMPLETING job's
    # allocation, the same object it keeps in `running` until the job is gone
    completing: tuple[Allocation, ...] = ()
    # False: only Slurm's backfill thread runs at this time (its tick, no event);
    # the `slurm` policy's preemptor then acts as backfill's _start_job does
    main_pass: bool = True
    # Kueue-style quotas per account and cohort (tide.model.quota); None = none
    quotas: QuotaTree | None = None
    # the driver reads only starts and eligibility from this cycle, not every
    # pending job's reason and planned start (the twin): backfill may stop once
    # no job left can start now (tide.sched.passes)
    starts_only: bool = False
    # the pending jobs added or changed since the driver's last snapshot (the
    # twin; PendingDelta); None: not known (the live server builds fresh jobs),
    # the core compares every pending job with what it kept
    pending_delta: PendingDelta | None = None
    # the same for the running jobs (RunningDelta); None: not known
    running_delta: RunningDelta | None = None
    # the core may take its exact shortcuts (one new job's priority in plain
    # Python, tide.sched.priority_one; running jobs counted for the limits only
    # where a limit is set, static limits looked for only where one is set,
    # tide.sched.limits; kept contexts' masks shared with later jobs asking the
    # same, CycleMemo._kept_bases); False: the general
    # path every time (the engine's property tests compare both)
    shortcuts: bool = True
    # the driver's count of node state changes (the twin's; None: not kept):
    # while it is the one of the last cycle, no node's state is read again
    node_states_gen: int | None = None


@dataclass(slots=True, frozen=True)
class Start:
    job_id: int
    alloc: Allocation
    partition: str
    backfilled: bool = False
    switches_satisfied: bool = True  # False: --switches wait expired, spread
    leaf_switches: int = 0


@dataclass(slots=True, frozen=True)
class PendingInfo:
    reason: Reason
    planned_start: float | None = None
    planned_nodes: tuple[int, ...] = ()
    priority: float = 0.0


@dataclass(slots=True, frozen=True)
class Preemption:
    """One running job told to make room for a pending one (docs/preemption.md).

    The driver applies it at once: SUSPEND stops the victim's processes (its
    GPUs and memory stay held, its cores go to the preemptor); REQUEUE and
    CANCEL send the victim its --signal (else SIGTERM) now and kill it `grace`
    seconds later, then requeue it (REQUEUE, when the job may be requeued;
    else it ends PREEMPTED) or end it PREEMPTED (CANCEL). The preemptor is not
    started in this cycle: it starts in a later one, once the victims'
    resources are released."""

    victim: int  # running job id
    preemptor: int  # pending job id it makes room for
    mode: str  # "REQUEUE" | "CANCEL" | "SUSPEND"
    grace: int  # seconds from the signal to the kill (0 for SUSPEND)
    lost_gpu_seconds: float  # estimate: GPUs x seconds since its last checkpoint
    reason: str  # one line for `tide show job` on the victim
    kind: str = "qos"  # "qos" | "partition" | "reclaim" | "priority" | "queue"


@dataclass(slots=True)
class Decisions:
    starts: list[Start] = field(default_factory=list)
    pending: dict[int, PendingInfo] = field(default_factory=dict)
    priorities: dict[int, float] = field(default_factory=dict)
    # jobs to mark eligible now (first time their dependencies/begin passed)
    eligible: dict[int, float] = field(default_factory=dict)
    # jobs whose dependency can never be satisfied (kill_invalid_depend off: keep)
    never: list[int] = field(default_factory=list)
    # Kubernetes-style models: pods newly bound (job not started; additive to
    # Snapshot.bound), and jobs whose bound pods are released (evicted)
    binds: dict[int, Allocation] = field(default_factory=dict)
    unbinds: list[int] = field(default_factory=list)
    # per-job bookkeeping a policy keeps between cycles (e.g. Kueue's admission
    # time); the driver merges it into Job.meta, a None value removes the key
    meta: dict[int, dict[str, object]] = field(default_factory=dict)
    # the earliest time the policy needs another cycle even if no job arrives
    # or ends (a timeout, a requeue backoff); None = no such need
    wake: float | None = None
    # running jobs to preempt now, in the order chosen (docs/preemption.md)
    preemptions: list[Preemption] = field(default_factory=list)
