"""Request bodies of the REST API (pydantic). Responses are plain JSON dicts
built by tide.server.views, documented by example in docs/server.md.

Every field is checked here, at the boundary: types are strict (no "1" for 1,
no 2.5 for a count, no "yes" for a bool), numbers have ranges, strings have
lengths and may hold no NUL and no lone surrogate (what no store, file name
or environment can take). What needs the cluster or the site's limits
(MaxArraySize, partition sizes) is checked by the services.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tide.defaults import TIME_INFINITE
from tide.efficiency import BUCKET_MAX, BUCKET_MIN, SKETCH_MAX
from tide.model import DependencyType

INT_MAX = 2**31 - 1  # sbatch's counts are C ints
NICE_MAX = 2147483645  # sbatch(1) --nice
PRIORITY_MAX = INT_MAX  # scontrol's 0xfffffffe does not fit the store's INTEGER column
MAX_SECONDS = INT_MAX  # 68 years: what the store's INTEGER columns hold
MAX_EPOCH = 253402300799.0  # 9999-12-31: begin and reservation times
MAX_SCRIPT = 64 * 1024 * 1024  # bytes; the site's max_script_size (4 MiB) applies later
MAX_ITEMS = 10_000  # argv words, env variables, list entries
StepBucket = Annotated[int, Field(ge=BUCKET_MIN, le=BUCKET_MAX)]  # a JSON key: "23" is 23
StepCount = Annotated[int, Field(strict=True, ge=1, le=10**9)]


def _clean(text: str) -> str:
    if "\x00" in text:
        raise ValueError("holds a NUL character; remove it")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("is not valid UTF-8 (it holds a lone surrogate)") from None
    return text


_Clean = AfterValidator(_clean)


# lengths as the store's columns hold them (PostgreSQL refuses longer values)
# names of accounts, partitions, users, nodes, signals
Word = Annotated[str, Field(max_length=128), _Clean]
Short = Annotated[str, Field(max_length=64), _Clean]  # QOS and reservation names
GpuType = Annotated[str, Field(max_length=32), _Clean]
# the name of a thing made by a request (user, account, QOS, reservation): not empty,
# and no blank, comma or slash (lists are comma-separated, names go into URLs)
Ident = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[^\s,/]+$"),
                  AfterValidator(_clean)]  # fmt: skip
ShortIdent = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\s,/]+$"),
                       AfterValidator(_clean)]  # fmt: skip
JobName = Annotated[str, Field(max_length=256), _Clean]
Name = Annotated[str, Field(max_length=1024), _Clean]  # descriptions, reasons, constraints
Path = Annotated[str, Field(max_length=4096), _Clean]  # file and directory paths
Value = Annotated[str, Field(max_length=128 * 1024), _Clean]  # one environment value, one argv word
Script = Annotated[str, Field(max_length=MAX_SCRIPT), _Clean]
Count = Annotated[int, Field(strict=True, ge=1, le=INT_MAX)]
Count0 = Annotated[int, Field(strict=True, ge=0, le=INT_MAX)]
Seconds = Annotated[int, Field(strict=True, ge=0, le=MAX_SECONDS)]
Limit = Annotated[int, Field(strict=True, ge=1, le=MAX_SECONDS)]  # a time limit
# a job's time limit: 0 asks for no limit, as --time=0 does (stored as TIME_INFINITE)
JobLimit = Annotated[
    int, Field(strict=True, ge=0, le=MAX_SECONDS), AfterValidator(lambda v: v or TIME_INFINITE)
]
Epoch = Annotated[float, Field(strict=True, ge=0, le=MAX_EPOCH, allow_inf_nan=False)]
Nice = Annotated[int, Field(strict=True, ge=-NICE_MAX, le=NICE_MAX)]
Priority = Annotated[int, Field(strict=True, ge=0, le=PRIORITY_MAX)]
Bool = Annotated[bool, Field(strict=True)]
JobRef = Annotated[str, Field(pattern=r"^[1-9][0-9]{0,17}(_[0-9]{1,9})?$")]  # 12 or 12_3
Env = Annotated[dict[Word, Value], Field(max_length=MAX_ITEMS)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DependencyItemSpec(Strict):
    type: DependencyType
    job_ids: list[JobRef] = Field(default_factory=list, max_length=MAX_ITEMS)
    delay: Seconds = 0


class DependencySpec(Strict):
    items: list[DependencyItemSpec] = Field(..., min_length=1, max_length=1000)
    any_of: Bool = False


class ArrayBody(Strict):
    task_ids: list[Annotated[int, Field(strict=True, ge=0, le=4_000_000)]] = Field(
        ..., min_length=1, max_length=4_000_001
    )
    max_running: Count | None = None


class SignalBody(Strict):
    signal: Word = "USR1"
    lead: Annotated[int, Field(strict=True, ge=0, le=65535)] = 60
    batch_only: Bool = False
    reservation: Bool = False


class JobSpec(Strict):
    """JobRequest fields as JSON (`job` in a submission): sbatch's options by
    their tide names; a field left out is not given (the default applies)."""

    name: JobName = "sbatch"
    nodes_min: Count | None = None
    nodes_max: Count | None = None
    ntasks: Count | None = None
    ntasks_per_node: Count | None = None
    gpus: Count0 | None = None
    gpus_per_node: Count0 | None = None
    gpus_per_task: Count0 | None = None
    gpu_type: GpuType = ""
    cpus_per_task: Count = 1
    cpus_per_gpu: Count | None = None
    mem_per_node: Count0 | None = Field(None, description="MB")
    mem_per_gpu: Count0 | None = Field(None, description="MB")
    mem_per_cpu: Count0 | None = Field(None, description="MB")
    time_limit: JobLimit | None = Field(
        None,
        description="seconds; none = the partition's DefaultTime; 0 (or 2147483647) = no "
        "limit, like --time=0/UNLIMITED (the job pends in a partition with a MaxTime)",
    )
    time_min: Limit | None = None
    partitions: list[Word] = Field(default_factory=list, max_length=64)
    account: Word = ""
    qos: Short = ""
    nice: Nice = 0
    exclusive: Bool = False
    constraint: Name = ""
    nodelist: list[Word] = Field(default_factory=list, max_length=MAX_ITEMS)
    exclude: list[Word] = Field(default_factory=list, max_length=MAX_ITEMS)
    switches: Count0 | None = None
    switches_wait: Seconds | None = None
    enforce_binding: Bool = False
    begin: Epoch | None = Field(None, description="epoch seconds")
    dependency: DependencySpec | None = None
    array: ArrayBody | None = None
    requeue: Bool | None = None
    signal: SignalBody | None = None
    hold: Bool = False
    output: Path = ""
    error: Path = ""
    chdir: Path = ""
    export: Value = "ALL"
    reservation: Short = ""
    priority: Priority | None = Field(None, description="operators only")


class SubmitBody(Strict):
    """A job: an sbatch script (its #SBATCH lines are read) plus sbatch options
    in `argv`, and/or a JSON job spec in `job` (JobRequest fields, which win)."""

    script: Script = Field("", description="batch script body, starting with #!")
    argv: list[Value] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="sbatch options, e.g. ['-N2']"
    )
    script_args: list[Value] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="arguments of the script"
    )
    job: JobSpec | None = Field(None, description="JobRequest fields (see docs)")
    wrap: Value = Field("", description="a command to wrap in a sh script (sbatch --wrap)")
    env: Env = Field(default_factory=dict, description="the submitter's environment")
    cwd: Path = Field("", description="submit directory (SLURM_SUBMIT_DIR)")
    user: Word = Field("", description="operators only: submit as this user")


class BatchBody(Strict):
    """Many submissions in one request (a workflow tool, a sweep): each is checked
    on its own; the good ones are stored in one transaction."""

    jobs: list[SubmitBody] = Field(..., min_length=1, max_length=10_000)


class UpdateBody(Strict):
    time_limit: JobLimit | None = Field(None, description="seconds; 0 = no limit (operators)")
    priority: Priority | None = Field(None, description="operators: fixed priority (0 holds)")
    nice: Nice | None = None
    site_factor: Annotated[int, Field(strict=True, ge=-NICE_MAX, le=NICE_MAX)] | None = Field(
        None, description="operators: multifactor SiteFactor"
    )
    name: JobName | None = None
    partition: Name | None = None
    qos: Short | None = None
    account: Word | None = None


class NotifyBody(Strict):
    event: Word = Field("step", description="'step', 'tasks_running' or 'checkpoint'")
    step: Count0 | None = Field(None, description="training step number for 'step'")
    tokens: float | None = Field(
        None, ge=0, le=1e15, allow_inf_nan=False,
        description="'step': tokens processed since the previous step report",
    )  # fmt: skip
    flops_per_token: float | None = Field(
        None, gt=0, le=1e21, allow_inf_nan=False,
        description="'step': the model's training FLOPs per token (declares it for MFU)",
    )  # fmt: skip
    params: float | None = Field(
        None, gt=0, le=1e16, allow_inf_nan=False,
        description="'step': the model's parameters (FLOPs per token = 6 x params)",
    )  # fmt: skip
    step_times: dict[StepBucket, StepCount] | None = Field(
        None, max_length=SKETCH_MAX,
        description="'step': the job's own times of the steps since its previous report, "
        "as steps per bucket k (a step of t seconds is in k = floor(log(t) / log(1.02))); "
        "tide.job sends it",
    )  # fmt: skip


class ReasonBody(Strict):
    reason: Name = ""


TresMap = dict[Word, Annotated[int, Field(strict=True, ge=-1, le=2**53)]]
LimitValue = Annotated[int, Field(strict=True, ge=-1, le=2**53)] | None | TresMap
Limits = Annotated[dict[Word, LimitValue], Field(max_length=64)]
Shares = Annotated[int, Field(strict=True, ge=0, le=INT_MAX)]


class AccountBody(Strict):
    name: Ident
    parent: Word = "root"
    fairshare: Shares = 1
    description: Name = ""
    organization: Name = ""
    qos: list[Short] = Field(default_factory=list, max_length=1000)
    default_qos: Short = ""
    limits: Limits = Field(default_factory=dict)


class UserBody(Strict):
    name: Ident
    admin_level: Word = "None"
    default_account: Word = ""
    accounts: list[Word] = Field(default_factory=list, max_length=1000)


class AssocBody(Strict):
    user: Ident
    account: Ident
    fairshare: Shares = 1
    qos: list[Short] = Field(default_factory=list, max_length=1000)
    default_qos: Short = ""
    limits: Limits = Field(default_factory=dict)
    default_account: Bool = False


class QosBody(Strict):
    name: ShortIdent
    priority: Annotated[int, Field(strict=True, ge=0, le=INT_MAX)] = 0
    limits: Limits = Field(default_factory=dict)
    preempt: list[Short] = Field(default_factory=list, max_length=1000)
    preempt_mode: Annotated[str, Field(max_length=32), AfterValidator(_clean)] = ""
    grace_time: Seconds = 0
    preempt_exempt_time: Seconds | None = Field(None, description="seconds; none = no exemption")
    usage_factor: Annotated[float, Field(strict=True, ge=0, le=1e6, allow_inf_nan=False)] = 1.0
    flags: list[Word] = Field(default_factory=list, max_length=100)


class TokenBody(Strict):
    user: Ident
    name: Word = ""
    expires_in: Limit | None = Field(None, description="seconds (> 0); none = never")


class ReservationBody(Strict):
    name: ShortIdent
    start: Epoch | None = Field(None, description="epoch seconds; none = now")
    duration: Limit | None = Field(None, description="seconds (or give end)")
    end: Epoch | None = None
    nodes: list[Name] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="node names or hostlists"
    )
    gpus: Count0 = 0
    accounts: list[Word] = Field(default_factory=list, max_length=1000)
    users: list[Word] = Field(default_factory=list, max_length=1000)
    flags: list[Word] = Field(default_factory=list, max_length=100)
    partition: Word = ""


class PriceBody(Strict):
    gpu_type: GpuType = Field("", description="'' = GPUs without a type / default")
    per_gpu_hour: Annotated[float, Field(strict=True, ge=0, le=1e9, allow_inf_nan=False)]
