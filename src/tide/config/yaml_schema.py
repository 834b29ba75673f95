"""The schema of tide's cluster YAML (pydantic, used only at the edge).

Names follow the model (and so Slurm): see docs/cluster.md for the full
reference with examples. Unknown keys are allowed by pydantic here and
reported as warnings by yaml_load, like unknown keys in Slurm files.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from tide.config.durations import parse_duration
from tide.config.values import tres_name
from tide.config.yaml_quotas import QuotasSpec
from tide.hostlist import HostlistError, expand, parse_index_ranges
from tide.model import NodeState, TopologyKind
from tide.model.sched_config import BackfillMode, QueueOrder


def _names(value: Any) -> list[str]:
    """'node[01-04],gpu1' or a list of such strings -> names."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ValueError("expected a hostlist such as 'node[01-16]' or a list of names")
    try:
        return [n for item in items for n in expand(item)]
    except HostlistError as e:
        raise ValueError(f"{e}; write a hostlist such as 'node[01-16]'") from None


def _cores(value: Any) -> tuple[int, ...]:
    """'0-15,32-47' or [0, 1, 2] -> core ids."""
    if isinstance(value, str):
        try:
            return tuple(parse_index_ranges(value))
        except Exception:
            raise ValueError(f"{value!r} is not a core list; write e.g. '0-15'") from None
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return tuple(value)
    raise ValueError("expected core ids such as '0-15' or [0, 1, 2]")


def _tres(value: Any) -> dict[str, int]:
    """{'gres/gpu': 8} or 'cpu=64,gres/gpu=8' -> {'cpu': 64, 'gres/gpu': 8}."""
    if isinstance(value, str):
        pairs = [p.split("=", 1) for p in value.split(",") if p.strip()]
        if not all(len(p) == 2 for p in pairs):
            raise ValueError(f"{value!r} is not NAME=COUNT,...; write e.g. 'gres/gpu=8'")
        value = {k: v for k, v in pairs}
    if not isinstance(value, dict):
        raise ValueError("expected TRES counts such as {gres/gpu: 8, cpu: 64}")
    out = {}
    for k, v in value.items():
        try:
            out[tres_name(str(k))] = int(v)
        except (TypeError, ValueError):
            raise ValueError(f"TRES {k}: {v!r} is not a whole number") from None
    return out


def _megabytes(value: Any) -> int:
    """1024000 (MB, as RealMemory) or '1000G' / '512000M' / '2T' -> MB."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    units = {"M": 1, "G": 1024, "T": 1024 * 1024}
    if isinstance(value, str) and value[:-1].isdigit() and value[-1:].upper() in units:
        return int(value[:-1]) * units[value[-1].upper()]
    raise ValueError(f"{value!r} is not a memory size; write MB (1024000) or '1000G'")


def _word(yes: str, no: str) -> Any:
    """YAML 1.1 reads bare NO / OFF / YES as booleans; take them back as words."""

    def conv(value: Any) -> Any:
        if isinstance(value, bool):
            return yes if value else no
        return value

    return BeforeValidator(conv)


# a POSIX user name (useradd's default NAME_REGEX, with capitals and dots allowed)
_OS_USER = r"^[A-Za-z_][A-Za-z0-9_.-]*[$]?$"

Names = Annotated[list[str], BeforeValidator(_names)]
Cores = Annotated[tuple[int, ...], BeforeValidator(_cores)]
Tres = Annotated[dict[str, int], BeforeValidator(_tres)]
Megabytes = Annotated[int, BeforeValidator(_megabytes)]
Duration = Annotated[int | None, BeforeValidator(parse_duration)]
Seconds = Annotated[int, BeforeValidator(lambda v: parse_duration(v) or 0)]


class Spec(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class GpuDeviceSpec(Spec):
    index: int = Field(ge=0)
    type: str = ""
    socket: int | None = None
    cores: Cores = ()
    file: str = ""


class GpuSpec(Spec):
    """GPUs of every node in a group: a count and type, or a full device list."""

    count: int | None = Field(default=None, ge=0)
    type: str = ""
    sockets: list[int] | str | None = None  # socket per GPU, or "spread"
    cores: list[Cores] | None = None  # core list per GPU
    files: Names | None = None  # device files, e.g. /dev/nvidia[0-7]
    devices: list[GpuDeviceSpec] | None = None
    nvlink: str | dict[str, int] | list[list[int]] | None = None


class NodeGroupSpec(Spec):
    names: Names
    cpus: int | None = Field(default=None, ge=1)
    boards: int = Field(default=1, ge=1)
    sockets: int = Field(default=1, ge=1)
    cores_per_socket: int = Field(default=1, ge=1)
    threads_per_core: int = Field(default=1, ge=1)
    real_memory: Megabytes = Field(default=1, ge=1, alias="memory")  # MB
    gpus: GpuSpec | None = None
    features: list[str] = []
    weight: int = 1
    state: NodeState = NodeState.IDLE
    reason: str = ""
    addresses: Names | None = None


class SwitchSpec(Spec):
    name: str
    nodes: Names = []
    switches: Names = []
    link_speed: int = Field(default=1, ge=1)


class BlockSpec(Spec):
    name: str
    nodes: Names


class TopologySpec(Spec):
    kind: TopologyKind | None = None
    switches: list[SwitchSpec] = []
    blocks: list[BlockSpec] = []
    block_sizes: list[int] = []


class PartitionSpec(Spec):
    name: str
    nodes: str | list[str] = "ALL"
    default: bool = False
    max_time: Duration = None
    default_time: Duration = None
    max_nodes: int | None = Field(default=None, ge=1)
    min_nodes: int = Field(default=1, ge=0)
    priority_tier: int = 1
    priority_job_factor: int = 1
    allow_accounts: list[str] = []
    allow_qos: list[str] = []
    deny_accounts: list[str] = []  # DenyAccounts: used only without allow_accounts
    deny_qos: list[str] = []  # DenyQos: used only without allow_qos
    oversubscribe: Annotated[str, _word("YES", "NO")] = "NO"
    state: str = "UP"
    preempt_mode: Annotated[str, _word("ON", "OFF")] = ""
    requeue: bool | None = None
    grace_time: Seconds = 0  # GraceTime: seconds a preempted job gets (partition_prio)


class WeightsSpec(Spec):
    age: int = 0
    fairshare: int = 0
    job_size: int = 0
    partition: int = 0
    qos: int = 0
    assoc: int = 0
    tres: dict[str, float] = {}


class SchedulerSpec(Spec):
    policy: Literal["k8s-default", "volcano", "kueue", "slurm", "tide"] = "slurm"
    victim_order: Literal["", "lost_work", "priority"] = ""  # "": the policy's default
    scheduler_type: str | None = None  # default follows backfill
    backfill: BackfillMode = BackfillMode.CONSERVATIVE  # tide: none | easy | conservative
    order: QueueOrder = QueueOrder.PRIORITY
    bf_window: Seconds = 86400
    bf_resolution: Seconds = 60
    bf_max_job_test: int = 500
    bf_interval: Seconds = 30
    bf_continue: bool = False
    default_queue_depth: int = 100
    sched_min_interval: float = Field(0.0, ge=0)  # seconds between main passes
    batch_sched_delay: int = Field(3, ge=0)  # seconds (with a background phase only)
    priority_type: str = "priority/multifactor"
    weights: WeightsSpec = WeightsSpec()
    decay_half_life: Seconds = 7 * 86400
    max_age: Seconds = 7 * 86400
    favor_small: bool = False
    priority_flags: list[str] = []
    topology_plugin: str | None = None  # default follows topology.kind
    select_type: str = "select/cons_tres"
    select_type_parameters: list[str] = ["CR_Core_Memory"]
    max_switch_wait: Seconds = 300
    priority_calc_period: Seconds = 300
    will_run_batches: bool = False  # plan reservations like Slurm's will-run test
    array_tasks_by_backfill: bool = False  # array tasks start in backfill passes only
    billing_weights: dict[str, float] | None = None  # TRESBillingWeights; None = GPU-seconds
    epoch: float = 0.0
    preempt_type: str = "preempt/none"
    preempt_mode: Annotated[str, _word("ON", "OFF")] = "OFF"
    max_array_size: int = Field(1001, ge=0, le=4_000_001)  # slurm.conf MaxArraySize
    max_script_size: int = Field(4 * 1024 * 1024, ge=1)  # bytes
    extra: dict[str, Annotated[str, BeforeValidator(str)]] = {}


class LimitsSpec(Spec):
    grp_tres: Tres = {}
    grp_jobs: int | None = None
    grp_submit_jobs: int | None = None
    max_jobs: int | None = None
    max_submit_jobs: int | None = None
    max_tres_per_job: Tres = {}
    max_tres_per_user: Tres = {}
    max_tres_per_node: Tres = {}
    max_wall: Duration = None
    max_jobs_per_user: int | None = None
    max_submit_jobs_per_user: int | None = None


Fairshare = int | str  # a number of shares, or "parent"


class AccountSpec(Spec):
    parent: str | None = "root"
    fairshare: Fairshare = 1
    limits: LimitsSpec = LimitsSpec()
    description: str = ""
    organization: str = ""
    qos: list[str] = []
    default_qos: str = ""
    priority: int | None = None


class UserSpec(Spec):
    user: str
    account: str
    fairshare: Fairshare = 1
    limits: LimitsSpec = LimitsSpec()
    qos: list[str] = []
    default_qos: str = ""
    priority: int | None = None
    admin_level: str = "None"
    default_account: bool = False


class QosSpec(Spec):
    priority: int = 0
    limits: LimitsSpec = LimitsSpec()
    preempt: list[str] = []
    preempt_mode: Annotated[str, _word("ON", "OFF")] = ""
    preempt_exempt_time: Duration = None
    grace_time: Seconds = 0
    usage_factor: float = 1.0
    flags: list[str] = []


class ClusterSpec(Spec):
    name: str = "tide"
    nodes: list[NodeGroupSpec] = []
    partitions: list[PartitionSpec] = []
    topology: TopologySpec = TopologySpec()
    scheduler: SchedulerSpec = SchedulerSpec()
    accounts_cluster: str | None = None  # sacctmgr cluster name; default: name
    accounts: dict[str, AccountSpec] = {}
    users: list[UserSpec] = []
    qos: dict[str, QosSpec] = {}
    quotas: QuotasSpec | None = None  # Kueue-style quotas and cohorts (yaml_quotas)
    pools: dict[str, Any] | None = None  # serving pools that lend (yaml_pools)
    # GPU type -> peak TFLOPS per GPU, over tide.model.gpu_peaks (MFU's denominator)
    gpu_peak_tflops: dict[str, Annotated[float, Field(gt=0, allow_inf_nan=False)]] = {}
    # tide user -> the OS user its jobs run as (docs/security.md); unmapped: the same name
    user_map: dict[str, Annotated[str, Field(min_length=1, max_length=64, pattern=_OS_USER)]] = {}
