"""Jobs: what a user asks for (JobRequest, parsed from sbatch options) and the
job as the scheduler sees it (Job). Spellings follow Slurm: states, reasons,
option names, so squeue/sacct habits carry over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class JobState(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    REQUEUED = "REQUEUED"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    DEADLINE = "DEADLINE"

    @property
    def finished(self) -> bool:
        return self in _FINISHED


_FINISHED = {
    JobState.COMPLETED,
    JobState.FAILED,
    JobState.CANCELLED,
    JobState.TIMEOUT,
    JobState.NODE_FAIL,
    JobState.PREEMPTED,
    JobState.OUT_OF_MEMORY,
    JobState.DEADLINE,
}


class DependencyType(StrEnum):
    AFTER = "after"  # the other job started (or was cancelled)
    AFTERANY = "afterany"
    AFTEROK = "afterok"
    AFTERNOTOK = "afternotok"
    AFTERCORR = "aftercorr"
    SINGLETON = "singleton"


@dataclass(slots=True, frozen=True)
class DependencyItem:
    type: DependencyType
    job_ids: tuple[str, ...] = ()  # job ids as written ("123", "123_4")
    delay: int = 0  # seconds, for after:job+time


@dataclass(slots=True, frozen=True)
class Dependency:
    """--dependency: items joined by ',' (all) or '?' (any)."""

    items: tuple[DependencyItem, ...] = ()
    any_of: bool = False  # True when joined with '?'


@dataclass(slots=True, frozen=True)
class ArraySpec:
    """--array=0-15:2%4: the task ids and the throttle (max running at once)."""

    task_ids: tuple[int, ...]
    max_running: int | None = None


@dataclass(slots=True, frozen=True)
class SignalSpec:
    """--signal=[{R|B}:]SIG[@secs]: send SIG `lead` seconds before the limit."""

    signal: str = "USR1"
    lead: int = 60
    batch_only: bool = False  # B: only the batch shell
    reservation: bool = False  # R: also on reservation end


@dataclass(slots=True)
class JobRequest:
    """Everything sbatch expresses for a GPU job. None means 'not given': the
    partition or cluster default applies where Slurm has one."""

    name: str = "sbatch"
    nodes_min: int | None = None
    nodes_max: int | None = None
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    gpus: int | None = None  # --gpus (whole job)
    gpus_per_node: int | None = None  # --gpus-per-node / --gres=gpu:N
    gpus_per_task: int | None = None
    gpu_type: str = ""  # --gres=gpu:TYPE:N, --gpus=TYPE:N
    cpus_per_task: int = 1
    cpus_per_gpu: int | None = None
    mem_per_node: int | None = None  # MB (--mem)
    mem_per_gpu: int | None = None  # MB
    mem_per_cpu: int | None = None  # MB
    time_limit: int | None = None  # seconds (--time)
    time_min: int | None = None  # seconds (--time-min)
    partitions: tuple[str, ...] = ()
    account: str = ""
    qos: str = ""
    nice: int = 0
    exclusive: bool = False
    constraint: str = ""  # feature expression, e.g. "a100&ib" or "a|b"
    nodelist: tuple[str, ...] = ()  # required nodes (expanded hostlist)
    exclude: tuple[str, ...] = ()
    switches: int | None = None  # --switches=N
    switches_wait: int | None = None  # seconds; None = the cluster max
    enforce_binding: bool = False  # --gres-flags=enforce-binding
    begin: float | None = None  # absolute time (seconds, scheduler clock)
    dependency: Dependency | None = None
    array: ArraySpec | None = None
    requeue: bool | None = None  # None = partition/cluster default
    signal: SignalSpec | None = None
    hold: bool = False
    output: str = ""
    error: str = ""
    chdir: str = ""
    export: str = "ALL"
    reservation: str = ""
    priority: int | None = None  # operator-set (scontrol update priority)
    comment: str = ""  # --comment; may declare the model (flops_per_token=, params=)
    warnings: tuple[str, ...] = ()  # unsupported options seen while parsing

    # --- derived shape used by the scheduler -------------------------------

    def node_range(self) -> tuple[int, int]:
        """(min, max) node count; max may equal min."""
        lo = self.nodes_min or 0
        hi = self.nodes_max or lo
        if lo == 0:
            lo = hi = self._implied_nodes()
        return lo, max(lo, hi)

    def _implied_nodes(self) -> int:
        if self.ntasks and self.ntasks_per_node:
            return max(1, -(-self.ntasks // self.ntasks_per_node))
        return 1

    def total_gpus(self, nodes: int) -> int:
        """GPUs the job holds on `nodes` nodes: the one count placement, limits,
        quotas, priority, accounting and views use (tide.sched.shape allocates
        exactly this: --gpus-per-task gives every node the GPUs of its most
        loaded node's tasks, as each node gets the same share)."""
        if self.gpus_per_node is not None:
            return self.gpus_per_node * nodes
        if self.gpus is not None:
            return self.gpus
        if self.gpus_per_task is not None:
            return self.gpus_per_task * self.tasks_per_node(nodes) * nodes
        return 0

    def tasks_per_node(self, nodes: int) -> int:
        """Tasks placement provides room for on each node (the most any node gets)."""
        if self.ntasks_per_node is not None:
            return self.ntasks_per_node
        if self.ntasks is not None:
            return max(1, -(-self.ntasks // max(1, nodes)))
        return 1

    def task_count(self, nodes: int) -> int:
        if self.ntasks is not None:
            return self.ntasks
        if self.ntasks_per_node is not None:
            return self.ntasks_per_node * nodes
        return nodes


@dataclass(slots=True)
class Job:
    """A job as the scheduling core sees it. Times are seconds on the
    caller's clock (epoch for the server, trace seconds for the twin)."""

    id: int
    request: JobRequest
    user: str = "root"
    account: str = "root"
    partition: str = ""  # chosen partition once decided; "" = from request
    qos: str = "normal"
    submit: float = 0.0
    state: JobState = JobState.PENDING
    array_job_id: int | None = None
    array_task_id: int | None = None
    held: str = ""  # "" | "user" | "admin"
    restarts: int = 0
    # scheduler bookkeeping the controller persists between cycles
    eligible: float | None = None  # first time the job was eligible
    switch_wait_start: float | None = None
    priority_override: int | None = None
    site_factor: int = 0  # scontrol update SiteFactor= (multifactor's site_factor)
    meta: dict[str, object] = field(default_factory=dict)

    @property
    def display_id(self) -> str:
        if self.array_job_id is not None and self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        return str(self.id)
