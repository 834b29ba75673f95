"""Volcano's preempt and reclaim actions for the `volcano` model (docs/preemption.md).

What it reproduces (Volcano docs: "Actions" (preempt, reclaim) and the
proportion plugin; v1.15's gang-aware preemption: victims are whole jobs):
- Queues: one per account; a queue's deserved share is the cluster's GPUs
  split by the accounts' normalized shares (the proportion plugin's weights;
  the same split as the `kueue` model's nominal quotas).
- preempt: a job the allocate action could not place may evict running jobs
  of its own queue with a lower priority.
- reclaim: a job whose queue is within its deserved share (with the job) may
  evict running jobs of queues above their deserved share, while the
  victim's queue stays above it.
- Placement decides, pod by pod: a pod that finds no node evicts candidates
  on one node at a time (nodes in name order, candidates lowest priority
  first, then the most recently started) until it fits there; the job's pods
  are placed on a tentative copy and the evictions happen only if every pod
  found a place (the gang's statement). Lost work plays no part.
Evicted jobs are requeued (REQUEUE, after their QOS GraceTime). Enabled when
the snapshot's PreemptType is not preempt/none, unless VolcanoPolicy's
`preemption` option says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tide.model import JobState
from tide.sched.cycle import Cycle
from tide.sched.eligibility import JobContext
from tide.sched.index import ClusterIndex
from tide.sched.policies.kueue import nominal_quotas
from tide.sched.policies.kueue_preempt import enabled
from tide.sched.policies.pods import Scorer, bind_pod, pod_shapes
from tide.sched.preempt_rules import job_priority, lost_gpu_seconds
from tide.sched.shape import job_gpus
from tide.sched.state import Usage
from tide.sched.types import Preemption, Reason, Running


def preempt_and_reclaim(flag: bool | None, scorer: Scorer, cyc: Cycle,
                        ctxs: Sequence[JobContext]) -> None:  # fmt: skip
    """After allocate: jobs left waiting on resources try preempt, then reclaim
    (`flag`: the policy's own switch, None: as the cluster's PreemptType)."""
    if not enabled(flag, cyc):
        return
    snap = cyc.snap
    started = {s.job_id for s in cyc.decisions.starts}
    waiting = [c for c in ctxs if c.job.id not in started and _short(cyc, c.job.id)]
    if not waiting:
        return
    accounts = {r.job.account for r in snap.running} | {c.job.account for c in ctxs}
    deserved = nominal_quotas(snap.accounts, accounts, int(cyc.ix.gpus.sum()))
    allocated: dict[str, int] = {}
    for r in snap.running:
        allocated[r.job.account] = allocated.get(r.job.account, 0) + r.alloc.gpu_count
    account_of = {c.job.id: c.job.account for c in ctxs}
    for s in cyc.decisions.starts:  # this session's allocations count as the queue's
        q = account_of[s.job_id]
        allocated[q] = allocated.get(q, 0) + s.alloc.gpu_count
    usage = cyc.usage.copy()
    for ctx in waiting:
        if any(p.preemptor == ctx.job.id for p in cyc.decisions.preemptions):
            continue
        if any(v == ctx.job.id for v in snap.preempting.values()):
            continue  # victims already told to go for it
        for action in ("preempt", "reclaim"):
            cands = _candidates(cyc, ctx, action, deserved, allocated)
            got = _evict_until_placed(scorer, usage, ctx, cands, cyc.ix)
            if got is not None:  # the tentative state (victims gone, pods placed) holds on
                victims, usage = got
                _record(cyc, ctx, victims, action, allocated)
                break


def _short(cyc: Cycle, job_id: int) -> bool:
    info = cyc.decisions.pending.get(job_id)
    return info is not None and info.reason is Reason.RESOURCES


def _candidates(cyc: Cycle, ctx: JobContext, action: str, deserved: dict[str, int],
                allocated: dict[str, int]) -> list[Running]:  # fmt: skip
    snap, job = cyc.snap, ctx.job
    prio = job_priority(job, snap.accounts)
    taken = set(snap.preempting) | {p.victim for p in cyc.decisions.preemptions}
    if action == "reclaim":
        mine = allocated.get(job.account, 0) + job_gpus(job)
        if mine > deserved.get(job.account, 0):
            return []
    out = []
    for r in snap.running:
        if r.job.id in taken or r.job.state is JobState.SUSPENDED:
            continue
        if r.start >= snap.now:  # started this very instant: evicting it can only loop
            continue
        q = r.job.account
        if action == "preempt":
            ok = q == job.account and job_priority(r.job, snap.accounts) < prio
        else:
            # the victim's queue must stay at or above its deserved share once the
            # victim is gone, or two queues would reclaim from each other forever
            left = allocated.get(q, 0) - r.alloc.gpu_count
            ok = q != job.account and left >= deserved.get(q, 0)
        if ok:
            out.append(r)
    out.sort(key=lambda r: (job_priority(r.job, snap.accounts), -r.start, r.job.id))
    return out


def _evict_until_placed(scorer: Scorer, usage: Usage, ctx: JobContext, cands: list[Running],
                        ix: ClusterIndex) -> tuple[list[Running], Usage] | None:  # fmt: skip
    """Victims that let every pod of the job find a node, with the tentative
    usage they leave; None when no eviction places the whole gang."""
    if not cands:
        return None
    trial = usage.copy()
    mask = ctx.eligible[0]
    chosen: list[Running] = []
    for pod in pod_shapes(ctx, ix):
        if bind_pod(scorer, trial, pod, mask, ctx.job.id) is not None:
            continue
        placed = False
        nodes = sorted({n for r in cands if r not in chosen for n in r.alloc.node_indices},
                       key=lambda n: ix.names[n])  # fmt: skip
        for node in nodes:
            one = np.zeros(ix.n, dtype=bool)
            one[node] = bool(mask[node])
            evicted = []
            for r in (r for r in cands if r not in chosen and node in r.alloc.node_indices):
                trial.release(r.alloc)
                evicted.append(r)
                if bind_pod(scorer, trial, pod, one, ctx.job.id) is not None:
                    placed = True
                    break
            if placed:
                chosen += evicted
                break
            for r in evicted:
                trial.allocate(r.alloc)
        if not placed:
            return None
    return (chosen, trial) if chosen else None


def _record(cyc: Cycle, ctx: JobContext, victims: list[Running], action: str,
            allocated: dict[str, int]) -> None:  # fmt: skip
    snap, job = cyc.snap, ctx.job
    for r in victims:
        qos = snap.accounts.qos.get(r.job.qos)
        cyc.decisions.preemptions.append(Preemption(
            r.job.id, job.id, "REQUEUE", qos.grace_time if qos is not None else 0,
            lost_gpu_seconds(r, snap.now, snap.last_checkpoint, "REQUEUE"),
            f"Volcano {action}: evicted for job {job.id} of queue {job.account}",
            "priority" if action == "preempt" else "reclaim",
        ))  # fmt: skip
        allocated[r.job.account] = allocated.get(r.job.account, 0) - r.alloc.gpu_count
    allocated[job.account] = allocated.get(job.account, 0) + job_gpus(job)


__all__ = ["preempt_and_reclaim"]
