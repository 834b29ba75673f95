"""The executor interface: how the controller's decisions become processes.

The controller (tide.server) owns the store and the scheduling loop; an
executor only runs, signals and reports. It must not assume one machine:
the local executor runs every virtual node on this host, the Ray executor
(a later issue) runs each node's share on that Ray node.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class NodeLaunch:
    """One node's share of a job: where and with what."""

    node: str  # tide node name
    address: str  # host address tasks on this node should use (MASTER_ADDR)
    gpus: tuple[int, ...]  # GPU device indices -> CUDA_VISIBLE_DEVICES
    cores: tuple[int, ...]  # core ids to pin tasks to where the OS allows
    mem_mb: int
    ntasks: int  # tasks srun starts on this node by default
    threads_per_core: int = 1  # a core is this many CPUs (Slurm counts CPUs, not cores)

    @property
    def cpus(self) -> int:
        """CPUs held on this node, as Slurm counts them (SLURM_CPUS_ON_NODE, AllocCPUS)."""
        return len(self.cores) * max(1, self.threads_per_core)


@dataclass(slots=True)
class LaunchSpec:
    """Everything needed to start a batch job (the script runs on nodes[0])."""

    job_id: int
    name: str
    user: str
    account: str
    partition: str
    script: str  # the batch script body (with its #! line)
    workdir: str  # --chdir, else the submit dir
    submit_dir: str
    nodes: list[NodeLaunch]
    env: dict[str, str] = field(default_factory=dict)  # the user's exported env
    output: str = ""  # pattern (%j %x %u %A %a %N), "" = slurm-%j.out
    error: str = ""
    time_limit: int | None = None  # seconds
    signal: str | None = None  # e.g. "USR1" (--signal)
    signal_lead: int = 60
    array_job_id: int | None = None
    array_task_id: int | None = None
    restart_count: int = 0
    cpus_per_task: int = 1
    ntasks: int = 1
    checkpoint_dir: str = ""
    script_args: tuple[str, ...] = ()  # `sbatch script.sh ARGS...`: $1.. of the script
    qos: str = ""
    array_tasks: tuple[int, ...] = ()  # every task id of the array (SLURM_ARRAY_TASK_COUNT...)
    gpus_per_node: int | None = None  # --gpus-per-node as asked (SLURM_GPUS_PER_NODE)
    # --mem, --mem-per-cpu, --mem-per-gpu as asked, MB (SLURM_MEM_PER_NODE/CPU/GPU: sbatch
    # sets the one given; an --exclusive job asking for none has all the memory and none set)
    mem_per_node: int | None = None
    mem_per_cpu: int | None = None
    mem_per_gpu: int | None = None
    # sbatch sets SLURM_NTASKS/NPROCS only when -n or --ntasks-per-node was given, and
    # SLURM_NTASKS_PER_NODE only for --ntasks-per-node (Slurm 22.05)
    tasks_asked: bool = True
    ntasks_per_node: int | None = None
    # The OS user the job runs as (tide.exec.identity); "" = the executor's own user
    # (single-user mode). An executor that cannot become this user refuses the job.
    os_user: str = ""


@dataclass(slots=True, frozen=True)
class ExitReport:
    """A job's end, as the executor saw it."""

    job_id: int
    exit_code: int  # the script's exit status (0-255)
    signal: int = 0  # terminating signal, 0 if none
    reason: str = ""  # "timeout", "cancelled", "node_fail", "" for a normal end
    node: str = ""  # node of the first failure, if any


class PartlyUnknown(RuntimeError):
    """running() could not ask some nodes (alive, but their agent did not
    answer): `running` holds what the others said. The caller must not take a
    job on those nodes for gone (ending it would run it a second time)."""

    def __init__(self, running: set[int], nodes: list[str]) -> None:
        super().__init__(f"no answer from node(s) {', '.join(nodes)}")
        self.running = running
        self.nodes = nodes


class Executor(ABC):
    """Runs jobs. Every method is non-blocking; `poll` collects what ended."""

    @abstractmethod
    def launch(self, spec: LaunchSpec) -> None: ...

    @abstractmethod
    def signal(self, job_id: int, sig: int) -> None:
        """Deliver a signal to every process of the job on every node."""

    @abstractmethod
    def cancel(self, job_id: int, grace: float = 30.0) -> None:
        """SIGTERM everything of the job, SIGKILL after `grace` seconds."""

    @abstractmethod
    def poll(self) -> list[ExitReport]:
        """Jobs that ended since the last call."""

    @abstractmethod
    def running(self) -> set[int]:
        """Job ids with live processes (used to re-adopt after a restart)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; running jobs keep running under their supervisor."""
