"""Kueue's preemption for the `kueue` model (docs/preemption.md).

What it reproduces (Kueue docs: "Preemption" and "Cluster Queue" .spec.preemption):
- A pending workload that does not fit its ClusterQueue's quota may preempt
  admitted workloads to free quota, never to fix placement (Kueue reasons in
  quota only):
  - withinClusterQueue=LowerPriority: lower-priority workloads of its own queue;
  - reclaimWithinCohort=Any (or LowerPriority): when the workload fits within
    its queue's nominal quota, workloads of other queues of the cohort that
    are borrowing (only while their queue still borrows);
  - borrowWithinCohort=LowerPriority: when it must borrow, lower-priority
    workloads of borrowing queues.
- Candidates in Kueue's order: other queues' workloads first, then lowest
  priority, then the most recently started; they are removed in that order
  until the workload fits, then put back in reverse order when not needed.
- Evicted workloads are requeued (REQUEUE, after their QOS GraceTime as the
  pods' termination grace); the preemptor is admitted once their quota is
  released. Lost work plays no part in the choice (it is reported).
Enabled when the snapshot's PreemptType is not preempt/none (the scenario's
slurm.conf), unless `KueuePreemption.enabled` says otherwise; the policy
words are that class's fields (KueuePolicy(preemption=...)).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tide.model import JobState
from tide.sched.cycle import Cycle
from tide.sched.eligibility import JobContext
from tide.sched.preempt_rules import job_priority, lost_gpu_seconds
from tide.sched.shape import job_gpus
from tide.sched.types import Preemption, Running


@dataclass(slots=True, frozen=True)
class KueuePreemption:
    """A ClusterQueue's .spec.preemption (the same for every queue here)."""

    enabled: bool | None = None  # None: as the snapshot's PreemptType says
    within_cluster_queue: str = "LowerPriority"  # Never | LowerPriority
    reclaim_within_cohort: str = "Any"  # Never | LowerPriority | Any
    borrow_within_cohort: str = "Never"  # Never | LowerPriority


def enabled(flag: bool | None, cyc: Cycle) -> bool:
    """The policy's own switch when set, else the cluster's PreemptType."""
    if flag is not None:
        return flag
    return cyc.snap.config.preempt_type not in ("", "preempt/none")


def preempt_for_quota(policy: KueuePreemption, cyc: Cycle, ctxs: Mapping[int, JobContext],
                      cohort: Any, admitted: Mapping[int, float]) -> None:  # fmt: skip
    """After admission: workloads still over quota look for victims."""
    if not enabled(policy.enabled, cyc):
        return
    snap = cyc.snap
    now = snap.now
    started = {s.job_id for s in cyc.decisions.starts}
    jobs = []
    for jid, ctx in ctxs.items():
        meta = cyc.decisions.meta.get(jid, ctx.job.meta)
        if jid in admitted or jid in started or float(meta.get("kueue.requeue_at") or 0.0) > now:  # type: ignore[arg-type]
            continue
        queued = float(meta.get("kueue.queued_at", ctx.job.submit))  # type: ignore[arg-type]
        jobs.append(((-job_priority(ctx.job, snap.accounts), queued, jid), ctx))
    for _, ctx in sorted(jobs, key=lambda e: e[0]):
        _one(policy, cyc, ctx, cohort)


def _one(policy: KueuePreemption, cyc: Cycle, ctx: JobContext, cohort: Any) -> None:
    snap, job = cyc.snap, ctx.job
    cq, gpus = job.account, job_gpus(job)
    if cohort.check(cq, gpus) is None:
        return  # its quota fits: it waits for something else
    taken = set(snap.preempting) | {p.victim for p in cyc.decisions.preemptions}
    mine = [r for r in snap.running if snap.preempting.get(r.job.id) == job.id]
    for r in mine:
        cohort.take(r.job.account, -r.alloc.gpu_count)
    try:
        if mine and cohort.check(cq, gpus) is None:
            return  # the victims told to go for it already suffice
        victims = _choose(policy, cyc, ctx, cohort, taken)
    finally:
        for r in mine:
            cohort.take(r.job.account, r.alloc.gpu_count)
    if not victims:
        return
    for r in victims:
        other = r.job.account != cq
        qos = snap.accounts.qos.get(r.job.qos)
        grace = qos.grace_time if qos is not None else 0
        rule = "reclaimWithinCohort" if other else "withinClusterQueue"
        cyc.decisions.preemptions.append(Preemption(
            r.job.id, job.id, "REQUEUE", grace,
            lost_gpu_seconds(r, snap.now, snap.last_checkpoint, "REQUEUE"),
            f"Kueue {rule}: evicted for workload {job.id} of ClusterQueue {cq}",
            "reclaim" if other else "priority",
        ))  # fmt: skip
        cohort.take(r.job.account, -r.alloc.gpu_count)
    cohort.take(cq, gpus)  # the freed quota is the preemptor's for the rest of the cycle


def _choose(policy: KueuePreemption, cyc: Cycle, ctx: JobContext, cohort: Any, taken: set[int]) -> (
    list[Running]
):  # fmt: skip
    snap, job = cyc.snap, ctx.job
    cq, gpus = job.account, job_gpus(job)
    prio = job_priority(job, snap.accounts)
    within = policy.within_cluster_queue
    reclaim = policy.reclaim_within_cohort
    borrow = policy.borrow_within_cohort
    fits_nominal = cohort.used.get(cq, 0) + gpus <= cohort.nominal.get(cq, 0)
    cands = []
    for r in snap.running:
        if r.job.id in taken or r.job.state is JobState.SUSPENDED:
            continue
        lower = job_priority(r.job, snap.accounts) < prio
        if r.job.account == cq:
            ok = within == "LowerPriority" and lower
        elif not cohort.borrows(r.job.account, 0):
            ok = False
        elif fits_nominal:
            ok = reclaim == "Any" or (reclaim == "LowerPriority" and lower)
        else:
            ok = borrow == "LowerPriority" and lower
        if ok:
            cands.append(r)
    cands.sort(key=lambda r: (r.job.account == cq, job_priority(r.job, snap.accounts),
                              -r.start, r.job.id))  # fmt: skip
    chosen: list[Running] = []
    for r in cands:
        if cohort.check(cq, gpus) is None:
            break
        if r.job.account != cq and not cohort.borrows(r.job.account, 0):
            continue  # that queue no longer borrows
        cohort.take(r.job.account, -r.alloc.gpu_count)
        chosen.append(r)
    if cohort.check(cq, gpus) is not None:
        for r in chosen:
            cohort.take(r.job.account, r.alloc.gpu_count)
        return []
    for r in reversed(chosen[:]):  # put back what is not needed
        cohort.take(r.job.account, r.alloc.gpu_count)
        if cohort.check(cq, gpus) is None:
            chosen.remove(r)
        else:
            cohort.take(r.job.account, -r.alloc.gpu_count)
    for r in chosen:
        cohort.take(r.job.account, r.alloc.gpu_count)
    return chosen


__all__ = ["enabled", "preempt_for_quota"]
