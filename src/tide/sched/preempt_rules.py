"""Preemption rules: who may preempt whom, how, and what it costs.

Slurm's words and semantics (slurm.conf(5) PreemptType, PreemptMode,
PreemptExemptTime and PartitionName PriorityTier/PreemptMode/GraceTime;
sacctmgr(1) QOS Preempt, PreemptMode, PreemptExemptTime, GraceTime; the
"Preemption" page, slurm.schedmd.com/preempt.html):
- preempt/qos: a job may preempt running jobs whose QOS its own QOS lists in
  Preempt; the mode is the victim QOS's PreemptMode, else the cluster's.
- preempt/partition_prio: a job may preempt running jobs of partitions with a
  lower PriorityTier than the partition it would run in; the mode is the
  victim partition's PreemptMode, else the cluster's.
- Modes: REQUEUE, CANCEL, SUSPEND (flags GANG, WITHIN, PRIORITY are ignored);
  OFF means not preemptable. REQUEUE of a job that may not be requeued
  (--no-requeue, or its partition's Requeue=0) is a CANCEL, as in Slurm.
- GraceTime (the victim QOS's under preempt/qos, its partition's under
  partition_prio): seconds between the signal and the kill; SUSPEND has none.
- PreemptExemptTime (the victim QOS's, else the global one): a job that has
  run less than this is never preempted.
Cost of a victim: GPUs x seconds since its last completed checkpoint (the
snapshot's last_checkpoint, else its start); 0 for SUSPEND, which loses none.
Pure: everything comes from the snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tide.model import Job, Partition
from tide.model.account import AccountTree
from tide.model.cluster import Cluster
from tide.model.sched_config import SchedulerConfig
from tide.sched.requeue import lost_gpu_seconds as lost
from tide.sched.requeue import requeue_policy, requeueable
from tide.sched.types import Running

QOS, PARTITION = "preempt/qos", "preempt/partition_prio"
PREEMPT_START = "preempt_start"  # Job.meta: when the job last told victims to go
REQUEUE, CANCEL, SUSPEND, OFF = "REQUEUE", "CANCEL", "SUSPEND", "OFF"
_MODES = (REQUEUE, CANCEL, SUSPEND, OFF)


def main_mode(text: str) -> str:
    """The mode word of a PreemptMode value ('SUSPEND,GANG' -> SUSPEND); '' if none."""
    words = [w.strip().upper() for w in text.replace(" ", ",").split(",") if w.strip()]
    return next((w for w in words if w in _MODES), OFF if words else "")


def slurm_seconds(text: str) -> int | None:
    """Slurm's time formats (minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]) -> seconds."""
    text = text.strip()
    if not text or text.upper() in ("UNLIMITED", "INFINITE", "NONE"):
        return None
    days, _, rest = text.rpartition("-")
    try:
        parts = [int(p) for p in rest.split(":")]
        d = int(days) if days else 0
    except ValueError:
        return None
    if days:  # D-HH, D-HH:MM, D-HH:MM:SS
        h, m, s = [*parts, 0, 0][:3]
    elif len(parts) == 1:  # minutes
        h, m, s = 0, parts[0], 0
    elif len(parts) == 2:  # MM:SS
        h, m, s = 0, parts[0], parts[1]
    else:
        h, m, s = parts[:3]
    return ((d * 24 + h) * 60 + m) * 60 + s


def job_priority(job: Job, accounts: AccountTree) -> int:
    """A job's priority class: an operator override, else --priority, else its QOS priority."""
    if job.priority_override is not None:
        return job.priority_override
    if job.request.priority is not None:
        return job.request.priority
    qos = accounts.qos.get(job.qos)
    return qos.priority if qos is not None else 0


def partition_of(
    cluster: Cluster, job: Job, holds: Callable[[Partition], bool] | None = None
) -> Partition | None:
    """The partition a running job runs in: its chosen one, else the first of
    its --partition list that holds all its nodes (`holds`), else the default."""
    names = [job.partition] if job.partition else list(job.request.partitions)
    parts = [p for p in (cluster.partition(n) for n in names) if p is not None]
    for p in parts:
        if holds is None or holds(p):
            return p
    return parts[0] if parts else cluster.default_partition()


@dataclass(slots=True, frozen=True)
class Rules:
    """The cluster's preemption configuration, read once per cycle."""

    kind: str  # QOS, PARTITION, or "" (preemption off)
    cluster_mode: str
    exempt: int | None  # global PreemptExemptTime, seconds
    job_requeue: bool = True  # JobRequeue (tide.sched.requeue)
    hold_off: int = 40  # KillWait + MessageTimeout: Slurm's preemptor's wait for its victims
    youngest_first: bool = False  # SchedulerParameters preempt_youngest_first

    @classmethod
    def of(cls, cfg: SchedulerConfig) -> Rules:
        kind = cfg.preempt_type.strip().lower()
        kind = kind if kind in (QOS, PARTITION) else ""
        exempt = cfg.extra.get("PreemptExemptTime") or cfg.extra.get("preemptexempttime")
        job_requeue = requeue_policy(cfg)[0].job_requeue
        return cls(kind, main_mode(cfg.preempt_mode) or OFF, slurm_seconds(exempt or ""),
                   job_requeue, cfg.kill_wait + cfg.message_timeout,
                   cfg.preempt_youngest_first)  # fmt: skip

    @property
    def enabled(self) -> bool:
        return bool(self.kind)

    def may_preempt(
        self, accounts: AccountTree, preemptor: Job, part: Partition, victim: Job,
        victim_part: Partition | None,
    ) -> bool:  # fmt: skip
        """Whether the configuration lets `preemptor` (running in `part`) preempt `victim`."""
        if self.kind == QOS:
            mine = accounts.qos.get(preemptor.qos)
            theirs = accounts.qos.get(victim.qos)
            if mine is None or victim.qos not in mine.preempt:
                return False
            # mutual lists would let two jobs preempt each other forever
            return theirs is None or preemptor.qos not in theirs.preempt
        if self.kind == PARTITION:
            tier = victim_part.priority_tier if victim_part is not None else 0
            return tier < part.priority_tier
        return False

    def mode(self, accounts: AccountTree, victim: Job, victim_part: Partition | None) -> str:
        """How the victim goes (OFF: it may not be preempted)."""
        own = ""
        if self.kind == QOS:
            qos = accounts.qos.get(victim.qos)
            own = qos.preempt_mode if qos is not None else ""
        elif victim_part is not None:
            own = victim_part.preempt_mode
        mode = main_mode(own) or self.cluster_mode
        if mode == REQUEUE and not requeueable(
            victim.request.requeue, victim_part, self.job_requeue
        ):
            return CANCEL
        return mode

    def grace(self, accounts: AccountTree, victim: Job, part: Partition | None, mode: str) -> int:
        if mode == SUSPEND:
            return 0
        if self.kind == PARTITION and part is not None:
            return part.grace_time
        qos = accounts.qos.get(victim.qos)
        return int(qos.grace_time) if qos is not None else 0

    def held_off(self, preempt_start: object, now: float) -> bool:
        """Slurm's rule for a preemptor that told victims to go at `preempt_start`
        (its job's meta, PREEMPT_START): until KillWait + MessageTimeout have passed
        it takes no new victims and waits for the ones it has (select_nodes,
        node_scheduler.c: kill_pending is false while preempt_start_time >
        now - kill_wait - msg_timeout)."""
        return isinstance(preempt_start, int | float) and now < preempt_start + self.hold_off

    def slurm_order(self, accounts: AccountTree, r: Running, part: Partition | None) -> tuple:
        """Where a candidate stands in Slurm's preemptee list (lowest first):
        youngest first with preempt_youngest_first (preempt.c _sort_by_youngest),
        else the plugin's priority (_sort_by_prio): PriorityTier (partition_prio)
        or QOS priority (preempt/qos), each capped at 0xffff, above the node count,
        so small jobs of the lowest tier go first; then the job list's order
        (creation: job id). cons_common's _run_now removes them in this order
        until the job fits."""
        if self.youngest_first:
            return (-r.start, r.job.id)
        if self.kind == QOS:
            qos = accounts.qos.get(r.job.qos)
            level = qos.priority if qos is not None else 0
        else:
            level = part.priority_tier if part is not None else 0
        nodes = len(r.alloc.nodes)
        return (min(max(level, 0), 0xFFFF) << 16 | min(nodes, 0xFFFF), r.job.id)

    def exempt_time(self, accounts: AccountTree, victim: Job) -> int | None:
        qos = accounts.qos.get(victim.qos)
        if qos is not None and qos.preempt_exempt_time is not None:
            return qos.preempt_exempt_time
        return self.exempt

    def is_exempt(self, accounts: AccountTree, r: Running, now: float) -> bool:
        limit = self.exempt_time(accounts, r.job)
        return limit is not None and now - r.start < limit


def lost_gpu_seconds(r: Running, now: float, last_checkpoint: dict[int, float], mode: str) -> float:
    """Work the victim would lose (tide.sched.requeue's rule); none if suspended."""
    if mode == SUSPEND:
        return 0.0
    return lost(r.alloc.gpu_count, r.start, last_checkpoint.get(r.job.id), now)


def rank(accounts: AccountTree, r: Running, part: Partition | None) -> tuple[int, int]:
    """How important a running job is (lower goes first): tier, then priority class."""
    tier = part.priority_tier if part is not None else 0
    return tier, job_priority(r.job, accounts)
