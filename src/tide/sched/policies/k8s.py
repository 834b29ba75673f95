"""`k8s-default`: the default kube-scheduler, one pod at a time, no gang.

What it reproduces (Kubernetes docs, "Scheduling Framework" and
"kube-scheduler"; "Resource Bin Packing" for NodeResourcesFit's strategies):
- QueueSort (PrioritySort): pods leave the scheduling queue by priority, then
  by creation time. The pods of a job are created together when the job is
  submitted, so pod k of every job is older than pod k+1 of any job submitted
  at the same time: the queue key is (priority desc, submit, pod index, job).
  That is what interleaves the pods of simultaneous jobs.
- Each scheduling cycle takes one pod: Filter (NodeResourcesFit: the node has
  the pod's GPUs, cores and memory free), Score (NodeResourcesFit
  LeastAllocated: the most free first), bind. The next pod sees that binding.
- No gang: a pod binds as soon as it fits and holds its GPUs, idle, until its
  siblings bind (Decisions.binds); a job runs when all its pods are bound
  (a Start whose allocation holds every pod). A pod that does not fit stays
  in the queue and is tried again at the next cycle (the real scheduler moves
  it to the unschedulable queue until a cluster event, e.g. a pod ending).
- Pods on a node that goes down are evicted (Decisions.unbinds; the real
  node lifecycle controller does so after the NoExecute toleration) and are
  placed again.
Seed 000 (two 2-pod jobs on 2 x 8 GPUs): pods 0 of both jobs bind, one per
node (LeastAllocated), pods 1 find no room: both jobs wait forever holding
8 GPUs each; the twin reports them deadlocked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tide.model import Job
from tide.sched.cycle import Cycle, CycleMemo, close_cycle, open_cycle, ready
from tide.sched.eligibility import JobContext
from tide.sched.index import ClusterIndex
from tide.sched.policies.base import Capabilities
from tide.sched.policies.pods import (
    GPU_ONLY,
    Scorer,
    bind_pod,
    merged,
    pod_shapes,
    remaining,
    start_of,
)
from tide.sched.preempt_rules import job_priority
from tide.sched.shape import Shape, job_gpus
from tide.sched.state import Usage
from tide.sched.types import Allocation, Decisions, NodeAlloc, PendingInfo, Reason, Snapshot


@dataclass(slots=True)
class Waiting:
    """A job with pods in the scheduling queue."""

    ctx: JobContext
    left: list[tuple[int, Shape]]  # (pod index, shape) not bound yet
    bound: tuple[NodeAlloc, ...]  # pods bound in earlier cycles
    created: float  # the pods' creation time (submit; Kueue: admission)
    priority: int
    new: list[NodeAlloc] = field(default_factory=list)
    started: bool = False

    @property
    def job(self) -> Job:
        return self.ctx.job


def waiting_for(
    cyc: Cycle, ix: ClusterIndex, ctx: JobContext, created: float, bound: Allocation | None
) -> Waiting:
    left = remaining(pod_shapes(ctx, ix), bound)
    prio = job_priority(ctx.job, cyc.snap.accounts)
    return Waiting(ctx, left, bound.nodes if bound else (), created, prio)


def evict_lost_pods(cyc: Cycle) -> set[int]:
    """Jobs with a bound pod on a node that may not run work: their pods are
    released (unbinds); returns their ids."""
    lost = set()
    for jid, pods in cyc.snap.bound.items():
        if any(not cyc.usage.usable[na.node] for na in pods.nodes):
            cyc.decisions.unbinds.append(jid)
            cyc.usage.release(pods)
            lost.add(jid)
    return lost


def bind_round(cyc: Cycle, scorer: Scorer, waiting: Sequence[Waiting]) -> None:
    """Bind pods one at a time in queue order; start the jobs whose pods are all
    bound, report the others' new pods as binds. A job starts only within the
    association/QOS limits, counted with the jobs started before it this cycle
    (pods are not bound for a job those limits hold back)."""
    queue = sorted(
        ((-w.priority, w.created, idx, w.job.id), k, shape)
        for k, w in enumerate(waiting)
        for idx, shape in w.left
    )
    failed: set[tuple] = set()  # pod shapes that found no node this cycle
    masks = [w.ctx.eligible[0] for w in waiting]
    keys = [m.tobytes() for m in masks]
    blocked: set[int] = set()
    for k in sorted(range(len(waiting)), key=lambda k: (-waiting[k].priority, waiting[k].created)):
        if not waiting[k].left and not _complete(cyc, waiting[k]):  # all bound earlier
            blocked.add(k)
    for _, k, shape in queue:
        w = waiting[k]
        if k in blocked:
            continue
        if not w.new and _over_limit(cyc, w):
            blocked.add(k)
            continue
        sig = (shape.gpus_per_node, shape.cpus_per_node, shape.mem_per_node,
               shape.enforce_binding, shape.cpus_per_gpu, keys[k])  # fmt: skip
        if sig in failed:
            continue
        na = bind_pod(scorer, cyc.usage, shape, masks[k], w.job.id)
        if na is None:
            failed.add(sig)
            continue
        w.new.append(na)
        if len(w.new) == len(w.left) and not _complete(cyc, w):
            blocked.add(k)
    for k, w in enumerate(waiting):
        _settle(cyc, w, k in blocked)


def _over_limit(cyc: Cycle, w: Waiting) -> bool:
    """Association/QOS limits, counted with the jobs started this cycle."""
    reason = cyc.limits.reason(w.job, job_gpus(w.job))
    if reason is not None:
        cyc.decisions.pending[w.job.id] = PendingInfo(reason)
    return reason is not None


def _complete(cyc: Cycle, w: Waiting) -> bool:
    """All pods are bound: the job starts if the limits still let it."""
    if _over_limit(cyc, w):
        return False
    w.started = True
    cyc.limits.add(w.job, job_gpus(w.job))
    return True


def _settle(cyc: Cycle, w: Waiting, blocked: bool) -> None:
    jid = w.job.id
    if w.started:
        alloc = merged(jid, (*w.bound, *w.new))
        cyc.decisions.starts.append(start_of(w.ctx, cyc.ix, alloc))
        cyc.decisions.pending.pop(jid, None)
        return
    if w.new:
        cyc.decisions.binds[jid] = Allocation(jid, tuple(w.new))
    if not blocked:
        cyc.decisions.pending[jid] = PendingInfo(Reason.RESOURCES)


class K8sDefaultPolicy:
    name = "k8s-default"
    capabilities = Capabilities(preemption="none", coalesce_ties=True)

    def __init__(
        self, index: ClusterIndex, resources: Sequence[tuple[str, int]] = GPU_ONLY
    ) -> None:
        self.ix = index
        self.memo = CycleMemo()
        self.scorer = Scorer(index, most=False, resources=resources)

    def schedule(self, snap: Snapshot, usage: Usage) -> Decisions:
        cyc = open_cycle(snap, self.ix, usage, self.memo)
        lost = evict_lost_pods(cyc)
        waiting = []
        for job in snap.pending:
            ctx = ready(cyc, job)
            if ctx is None:
                continue
            bound = None if job.id in lost else snap.bound.get(job.id)
            waiting.append(waiting_for(cyc, self.ix, ctx, job.submit, bound))
        bind_round(cyc, self.scorer, waiting)
        _record_priorities(cyc, waiting)
        return close_cycle(cyc)


def _record_priorities(cyc: Cycle, waiting: Sequence[Waiting]) -> None:
    cyc.decisions.priorities.update({w.job.id: float(w.priority) for w in waiting})


__all__ = ["K8sDefaultPolicy", "Waiting", "bind_round", "evict_lost_pods", "waiting_for"]
