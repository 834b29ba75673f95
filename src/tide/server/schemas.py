"""Request bodies of the REST API (pydantic). Responses are plain JSON dicts
built by tide.server.views, documented by example in docs/server.md."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class SubmitBody(BaseModel):
    """A job: an sbatch script (its #SBATCH lines are read) plus sbatch options
    in `argv`, and/or a JSON job spec in `job` (JobRequest fields, which win)."""

    script: str = Field("", description="batch script body, starting with #!")
    argv: list[str] = Field(default_factory=list, description="sbatch options, e.g. ['-N2']")
    script_args: list[str] = Field(default_factory=list, description="arguments of the script")
    job: dict[str, Any] | None = Field(None, description="JobRequest fields (see docs)")
    wrap: str = Field("", description="a command to wrap in a sh script (sbatch --wrap)")
    env: dict[str, str] = Field(default_factory=dict, description="the submitter's environment")
    cwd: str = Field("", description="submit directory (SLURM_SUBMIT_DIR)")
    user: str = Field("", description="operators only: submit as this user")


class BatchBody(BaseModel):
    """Many submissions in one request (a workflow tool, a sweep): each is checked
    on its own; the good ones are stored in one transaction."""

    jobs: list[SubmitBody] = Field(..., min_length=1, max_length=10_000)


class UpdateBody(BaseModel):
    time_limit: int | None = Field(None, description="seconds")
    priority: int | None = Field(None, description="operators: fixed priority (0 holds)")
    nice: int | None = None
    site_factor: int | None = Field(None, description="operators: multifactor SiteFactor")
    name: str | None = None
    partition: str | None = None
    qos: str | None = None
    account: str | None = None


class NotifyBody(BaseModel):
    event: str = Field("step", description="'step', 'tasks_running' or 'checkpoint'")
    step: int | None = Field(None, ge=0, description="training step number for 'step'")
    tokens: float | None = Field(
        None, ge=0, le=1e15, allow_inf_nan=False,
        description="'step': tokens processed since the previous step report",
    )
    flops_per_token: float | None = Field(
        None, gt=0, le=1e21, allow_inf_nan=False,
        description="'step': the model's training FLOPs per token (declares it for MFU)",
    )
    params: float | None = Field(
        None, gt=0, le=1e16, allow_inf_nan=False,
        description="'step': the model's parameters (FLOPs per token = 6 x params)",
    )


class ReasonBody(BaseModel):
    reason: str = ""


class AccountBody(BaseModel):
    name: str
    parent: str = "root"
    fairshare: int = 1
    description: str = ""
    organization: str = ""
    qos: list[str] = Field(default_factory=list)
    default_qos: str = ""
    limits: dict[str, Any] = Field(default_factory=dict)


class UserBody(BaseModel):
    name: str
    admin_level: str = "None"
    default_account: str = ""
    accounts: list[str] = Field(default_factory=list)


class AssocBody(BaseModel):
    user: str
    account: str
    fairshare: int = 1
    qos: list[str] = Field(default_factory=list)
    default_qos: str = ""
    limits: dict[str, Any] = Field(default_factory=dict)
    default_account: bool = False


class QosBody(BaseModel):
    name: str
    priority: int = 0
    limits: dict[str, Any] = Field(default_factory=dict)
    preempt: list[str] = Field(default_factory=list)
    preempt_mode: str = ""
    grace_time: int = 0
    preempt_exempt_time: int | None = Field(None, description="seconds; none = no exemption")
    usage_factor: float = 1.0
    flags: list[str] = Field(default_factory=list)


class TokenBody(BaseModel):
    user: str
    name: str = ""
    expires_in: int | None = Field(None, description="seconds; none = never")


class ReservationBody(BaseModel):
    name: str
    start: float | None = Field(None, description="epoch seconds; none = now")
    duration: int | None = Field(None, description="seconds (or give end)")
    end: float | None = None
    nodes: list[str] = Field(default_factory=list, description="node names or hostlists")
    gpus: int = 0
    accounts: list[str] = Field(default_factory=list)
    users: list[str] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    partition: str = ""


class PriceBody(BaseModel):
    gpu_type: str = Field("", description="'' = GPUs without a type / default")
    per_gpu_hour: float
