"""The controller's tables (SQLAlchemy 2 typed declarative models).

Times are epoch seconds (float). Structured values that the scheduler reads
whole (a JobRequest, an Allocation, Limits) are kept as JSON text: they are
written once and read back whole, never queried field by field. Columns that
are filtered or sorted on (state, user, account, partition, times) are real
columns with indexes.
"""

from __future__ import annotations

from sqlalchemy import Float, ForeignKey, Index, Integer, String, Table, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class JobRow(Base):
    __tablename__ = "jobs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String(256), default="sbatch")
    user: Mapped[str] = mapped_column(String(128), index=True)
    account: Mapped[str] = mapped_column(String(128), index=True)
    partition: Mapped[str] = mapped_column(String(256), default="")  # requested, comma list
    run_partition: Mapped[str] = mapped_column(String(128), default="")  # where it ran
    qos: Mapped[str] = mapped_column(String(64), default="normal")
    state: Mapped[str] = mapped_column(String(16), index=True)
    reason: Mapped[str] = mapped_column(String(64), default="None")
    held: Mapped[str] = mapped_column(String(8), default="")  # "", "user", "admin"
    priority: Mapped[float] = mapped_column(Float, default=0.0)
    priority_override: Mapped[int | None] = mapped_column(Integer, nullable=True)
    site_factor: Mapped[int] = mapped_column(Integer, default=0)
    nice: Mapped[int] = mapped_column(Integer, default=0)
    array_job_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    array_task_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    dependency: Mapped[str] = mapped_column(Text, default="")  # as written, for display
    request: Mapped[str] = mapped_column(Text)  # JobRequest JSON (tide.store.codec)
    rev: Mapped[int] = mapped_column(Integer, default=0)  # bumped when request changes
    script: Mapped[str] = mapped_column(Text, default="")
    script_args: Mapped[str] = mapped_column(Text, default="[]")  # JSON list
    env: Mapped[str] = mapped_column(Text, default="{}")  # JSON dict (exported env)
    workdir: Mapped[str] = mapped_column(Text, default="")
    submit_dir: Mapped[str] = mapped_column(Text, default="")
    time_limit: Mapped[int | None] = mapped_column(Integer, nullable=True)  # seconds
    gpus_req: Mapped[int] = mapped_column(Integer, default=0)  # requested, for display
    nodes_req: Mapped[int] = mapped_column(Integer, default=1)
    # phase timestamps
    submit_time: Mapped[float] = mapped_column(Float, index=True)
    eligible_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    start_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    tasks_running_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    first_step_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    end_time: Mapped[float | None] = mapped_column(Float, nullable=True, index=True)
    # plan (from the last scheduling pass)
    planned_start: Mapped[float | None] = mapped_column(Float, nullable=True)
    planned_nodes: Mapped[str] = mapped_column(Text, default="")
    switch_wait_start: Mapped[float | None] = mapped_column(Float, nullable=True)
    # outcome
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    exit_signal: Mapped[int | None] = mapped_column(Integer, nullable=True)
    derived_exit: Mapped[str] = mapped_column(String(32), default="")
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    cancel_requested: Mapped[str] = mapped_column(String(64), default="")  # who asked
    allocation: Mapped[str] = mapped_column(Text, default="")  # Allocation JSON
    nodelist: Mapped[str] = mapped_column(Text, default="")  # compressed hostlist
    gpus_alloc: Mapped[int] = mapped_column(Integer, default=0)
    cpus_alloc: Mapped[int] = mapped_column(Integer, default=0)  # AllocCPUS (threads)
    gpu_type: Mapped[str] = mapped_column(String(32), default="")
    gpu_seconds: Mapped[float] = mapped_column(Float, default=0.0)  # over all attempts
    stdout_path: Mapped[str] = mapped_column(Text, default="")
    stderr_path: Mapped[str] = mapped_column(Text, default="")
    warnings: Mapped[str] = mapped_column(Text, default="[]")  # JSON list
    # recovery (docs/recovery.md; last_checkpoint and lost_gpu_seconds are below):
    # the step and checkpoint the job last reported, why its first failure happened
    last_step_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_checkpoint_step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    fail_cause: Mapped[str] = mapped_column(Text, default="", server_default="")
    # preemption (tide.server.services.preemption; docs/preemption.md)
    last_checkpoint: Mapped[float | None] = mapped_column(Float, nullable=True)
    preempted_by: Mapped[int | None] = mapped_column(Integer, nullable=True)  # last preemptor
    preempt_reason: Mapped[str] = mapped_column(Text, default="")
    preempt_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    preempt_mode: Mapped[str] = mapped_column(String(16), default="")
    # "" | "grace" (signalled, killed at preempt_kill_at) | "suspended" |
    # "parked" (requeued, kept out of the queue while its preemptor waits)
    preempt_phase: Mapped[str] = mapped_column(String(16), default="", index=True)
    preempt_kill_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    preempt_lost: Mapped[float] = mapped_column(Float, default=0.0)  # GPU-s, last preemption
    lost_gpu_seconds: Mapped[float] = mapped_column(Float, default=0.0)  # over all preemptions
    preemptions: Mapped[int] = mapped_column(Integer, default=0)
    suspended_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    preempt_eligible: Mapped[float | None] = mapped_column(Float, nullable=True)  # kept age


JOBS: Table = JobRow.__table__  # type: ignore[assignment]  # for Core bulk statements


class JobEventRow(Base):
    """One state transition of one job (the history `tide show job` prints)."""

    __tablename__ = "job_events"
    __table_args__ = (Index("ix_job_events_job_time", "job_id", "time"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[int] = mapped_column(Integer, ForeignKey("jobs.id", ondelete="CASCADE"))
    time: Mapped[float] = mapped_column(Float)
    from_state: Mapped[str] = mapped_column(String(16), default="")
    to_state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    actor: Mapped[str] = mapped_column(String(128), default="")


class AttemptRow(Base):
    """Accounting: one row per run of a job (a requeued job has several)."""

    __tablename__ = "job_attempts"
    __table_args__ = (
        UniqueConstraint("job_id", "attempt"),
        Index("ix_job_attempts_end", "end_time"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[int] = mapped_column(Integer, ForeignKey("jobs.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    user: Mapped[str] = mapped_column(String(128), index=True)
    account: Mapped[str] = mapped_column(String(128), index=True)
    partition: Mapped[str] = mapped_column(String(128), default="")
    start_time: Mapped[float] = mapped_column(Float, index=True)
    end_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    state: Mapped[str] = mapped_column(String(16), default="RUNNING")
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    exit_signal: Mapped[int | None] = mapped_column(Integer, nullable=True)
    allocation: Mapped[str] = mapped_column(Text, default="")
    nodelist: Mapped[str] = mapped_column(Text, default="")
    gpus: Mapped[int] = mapped_column(Integer, default=0)
    gpu_type: Mapped[str] = mapped_column(String(32), default="")
    cpus: Mapped[int] = mapped_column(Integer, default=0)
    gpu_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    # recovery: the attempt's last checkpoint, the GPU-seconds its end lost, and why
    last_checkpoint_step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_checkpoint_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    lost_gpu_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    cause: Mapped[str] = mapped_column(Text, default="", server_default="")


class NodeRow(Base):
    """Administrative state of a node; the static description is the cluster file."""

    __tablename__ = "nodes"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    state: Mapped[str] = mapped_column(String(16), default="IDLE")
    reason: Mapped[str] = mapped_column(Text, default="")
    reason_user: Mapped[str] = mapped_column(String(128), default="")
    reason_time: Mapped[float | None] = mapped_column(Float, nullable=True)


class AccountRow(Base):
    __tablename__ = "accounts"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    parent: Mapped[str | None] = mapped_column(String(128), nullable=True)
    fairshare: Mapped[int] = mapped_column(Integer, default=1)  # -1 = "parent"
    priority: Mapped[int | None] = mapped_column(Integer, nullable=True)  # assoc Priority=
    limits: Mapped[str] = mapped_column(Text, default="{}")  # Limits JSON
    description: Mapped[str] = mapped_column(Text, default="")
    organization: Mapped[str] = mapped_column(Text, default="")
    qos: Mapped[str] = mapped_column(Text, default="")  # comma list
    default_qos: Mapped[str] = mapped_column(String(64), default="")


class UserRow(Base):
    """A user: the AdminLevel that gives a role, and the default account."""

    __tablename__ = "users"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    admin_level: Mapped[str] = mapped_column(String(16), default="None")
    default_account: Mapped[str] = mapped_column(String(128), default="")


class AssocRow(Base):
    """A user's association with an account (sacctmgr's user/account pair)."""

    __tablename__ = "associations"
    __table_args__ = (UniqueConstraint("user", "account"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user: Mapped[str] = mapped_column(String(128), index=True)
    account: Mapped[str] = mapped_column(String(128), index=True)
    fairshare: Mapped[int] = mapped_column(Integer, default=1)
    priority: Mapped[int | None] = mapped_column(Integer, nullable=True)
    limits: Mapped[str] = mapped_column(Text, default="{}")
    qos: Mapped[str] = mapped_column(Text, default="")
    default_qos: Mapped[str] = mapped_column(String(64), default="")


class QosRow(Base):
    __tablename__ = "qos"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    priority: Mapped[int] = mapped_column(Integer, default=0)
    limits: Mapped[str] = mapped_column(Text, default="{}")
    preempt: Mapped[str] = mapped_column(Text, default="")
    preempt_mode: Mapped[str] = mapped_column(String(32), default="")
    grace_time: Mapped[int] = mapped_column(Integer, default=0)
    preempt_exempt_time: Mapped[int | None] = mapped_column(Integer, nullable=True)
    usage_factor: Mapped[float] = mapped_column(Float, default=1.0)
    flags: Mapped[str] = mapped_column(Text, default="")


class TokenRow(Base):
    """An API token. Only its SHA-256 digest is stored; the secret is shown once."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    user: Mapped[str] = mapped_column(String(128), index=True)
    name: Mapped[str] = mapped_column(String(128), default="")
    created: Mapped[float] = mapped_column(Float)
    expires: Mapped[float | None] = mapped_column(Float, nullable=True)
    revoked: Mapped[bool] = mapped_column(default=False)


class UsageRow(Base):
    """Decayed usage per association key ("account" or "account/user")."""

    __tablename__ = "usage"

    key: Mapped[str] = mapped_column(String(256), primary_key=True)
    value: Mapped[float] = mapped_column(Float, default=0.0)
    raw: Mapped[float] = mapped_column(Float, default=0.0)  # undecayed total
    updated: Mapped[float] = mapped_column(Float, default=0.0)


class ShareSampleRow(Base):
    """One association's fair-share state at one time (sshare -l's columns),
    sampled every PriorityCalcPeriod and thinned to hourly with age
    (tide.store.share_history); `every` is the sampling interval of its tier."""

    __tablename__ = "share_samples"
    __table_args__ = (Index("ix_share_samples_every_time", "every", "time"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    time: Mapped[float] = mapped_column(Float)
    every: Mapped[int] = mapped_column(Integer)  # seconds between samples of this tier
    account: Mapped[str] = mapped_column(String(128))
    user: Mapped[str] = mapped_column(String(128), default="")  # "" for an account
    raw_usage: Mapped[float] = mapped_column(Float, default=0.0)  # decayed billing-seconds
    eff_usage: Mapped[float] = mapped_column(Float, default=0.0)  # share of the parent's
    norm_shares: Mapped[float] = mapped_column(Float, default=0.0)
    level_fs: Mapped[float | None] = mapped_column(Float, nullable=True)
    fairshare: Mapped[float | None] = mapped_column(Float, nullable=True)  # users only


class ReservationRow(Base):
    __tablename__ = "reservations"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    start: Mapped[float] = mapped_column(Float)
    end: Mapped[float] = mapped_column(Float)
    nodes: Mapped[str] = mapped_column(Text, default="")  # comma list
    gpus: Mapped[int] = mapped_column(Integer, default=0)
    accounts: Mapped[str] = mapped_column(Text, default="")
    users: Mapped[str] = mapped_column(Text, default="")
    flags: Mapped[str] = mapped_column(Text, default="")
    partition: Mapped[str] = mapped_column(String(128), default="")


class PriceRow(Base):
    """Price of one GPU-hour per GPU type ("" = untyped / default)."""

    __tablename__ = "prices"

    gpu_type: Mapped[str] = mapped_column(String(32), primary_key=True)
    per_gpu_hour: Mapped[float] = mapped_column(Float, default=0.0)


class MetaRow(Base):
    """Small key/value facts about this store (cluster name, job id high-water mark)."""

    __tablename__ = "meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text, default="")


# --- inference services (docs/services.md; repository: tide.store.services) ---


class ServiceRow(Base):
    __tablename__ = "services"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    user: Mapped[str] = mapped_column(String(128), index=True)
    account: Mapped[str] = mapped_column(String(128), default="")
    qos: Mapped[str] = mapped_column(String(64), default="")
    partition: Mapped[str] = mapped_column(String(128), default="")
    spec: Mapped[str] = mapped_column(Text)  # the normalized document, JSON
    generation: Mapped[int] = mapped_column(Integer, default=1)  # bumps when replicas change
    desired: Mapped[int] = mapped_column(Integer, default=0)
    autoscaler: Mapped[str] = mapped_column(Text, default="")  # HpaState JSON
    router_port: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), default="Active")
    created: Mapped[float] = mapped_column(Float)
    updated: Mapped[float] = mapped_column(Float)
    last_scale_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_scale: Mapped[str] = mapped_column(Text, default="")  # reason of the last change


class ReplicaRow(Base):
    __tablename__ = "service_replicas"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    service: Mapped[str] = mapped_column(String(64), index=True)
    job_id: Mapped[int] = mapped_column(Integer, index=True)
    generation: Mapped[int] = mapped_column(Integer, default=1)
    host: Mapped[str] = mapped_column(String(256), default="")
    port: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), default="Pending", index=True)
    created: Mapped[float] = mapped_column(Float)
    decided: Mapped[float] = mapped_column(Float)  # the scale decision it answers
    started: Mapped[float | None] = mapped_column(Float, nullable=True)
    ready: Mapped[float | None] = mapped_column(Float, nullable=True)
    stopping: Mapped[float | None] = mapped_column(Float, nullable=True)
    ended: Mapped[float | None] = mapped_column(Float, nullable=True)
    reason: Mapped[str] = mapped_column(Text, default="")


class ServiceEventRow(Base):
    __tablename__ = "service_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    service: Mapped[str] = mapped_column(String(64), index=True)
    time: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(16))  # scale, replica, rollout, probe, apply
    message: Mapped[str] = mapped_column(Text, default="")
    value: Mapped[float | None] = mapped_column(Float, nullable=True)  # e.g. seconds to ready

class JobProgressRow(Base):
    """A job's training progress (tide.efficiency.Progress as JSON), written by
    its step reports; user and account are copied for per-account figures."""

    __tablename__ = "job_progress"

    job_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True
    )
    user: Mapped[str] = mapped_column(String(128), index=True)
    account: Mapped[str] = mapped_column(String(128), index=True)
    updated: Mapped[float] = mapped_column(Float, index=True)
    data: Mapped[str] = mapped_column(Text, default="{}")
