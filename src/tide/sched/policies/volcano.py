"""`volcano`: Volcano's scheduler with the gang, priority and binpack plugins.

What it reproduces (Volcano docs: "Plugins" (gang, priority, binpack) and
"Actions" (allocate); the binpack score as its plugin documents it):
- Every job is a PodGroup whose minMember is all its pods (the gang plugin's
  all-or-nothing): in a session the allocate action places the job's pods one
  by one on a tentative copy of the nodes and commits them only when every pod
  found a node; otherwise it discards them and the job waits, holding nothing.
- A session runs at every cycle; jobs are visited by priority (the priority
  plugin's job order: PriorityClass), then creation time, then id.
- Each pod goes to the node with the best binpack score: for the configured
  resources, weight x (used + requested) / allocatable, averaged over the
  weights (default GPUs only, binpack.resources nvidia.com/gpu): the fullest
  node that fits first, ties to the node name.
- There is no time-based reservation: a job that does not fit is passed over
  and smaller jobs behind it keep starting, so a large gang may wait long.
Not modelled: queues and the proportion/drf plugins (one queue), the enqueue
action's overcommit check, Volcano's own backfill
action (it only places pods that request no resources). The preempt and
reclaim actions are in volcano_preempt.py (issue 7).
"""

from __future__ import annotations

from collections.abc import Sequence

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
    start_of,
)
from tide.sched.policies.volcano_preempt import preempt_and_reclaim
from tide.sched.preempt_rules import job_priority
from tide.sched.shape import job_gpus
from tide.sched.state import Usage
from tide.sched.types import Allocation, Decisions, NodeAlloc, PendingInfo, Reason, Snapshot

_RESOURCES = PendingInfo(Reason.RESOURCES)


class VolcanoPolicy:
    name = "volcano"
    capabilities = Capabilities(preemption="own", coalesce_ties=True)

    def __init__(
        self,
        index: ClusterIndex,
        resources: Sequence[tuple[str, int]] = GPU_ONLY,
        preemption: bool | None = None,  # None: as the cluster's PreemptType
    ) -> None:
        self.ix = index
        self.preemption = preemption
        self.memo = CycleMemo()
        self.scorer = Scorer(index, most=True, resources=resources, integer=False)

    def schedule(self, snap: Snapshot, usage: Usage) -> Decisions:
        cyc = open_cycle(snap, self.ix, usage, self.memo)
        jobs = []
        for job in snap.pending:
            ctx = ready(cyc, job)
            if ctx is not None:
                prio = job_priority(job, snap.accounts)
                cyc.decisions.priorities[job.id] = float(prio)
                jobs.append(((-prio, job.submit, job.id), ctx))
        jobs.sort(key=lambda e: e[0])
        failed: set[tuple] = set()  # gangs of this shape did not fit: skip alike
        for _, ctx in jobs:
            self._allocate(cyc, ctx, failed)
        ctxs = [ctx for _, ctx in jobs]
        preempt_and_reclaim(self.preemption, self.scorer, cyc, ctxs)  # volcano_preempt.py
        return close_cycle(cyc)

    def _allocate(self, cyc: Cycle, ctx: JobContext, failed: set[tuple]) -> None:
        """The allocate action for one job: all its pods, or none."""
        job = ctx.job
        reason = cyc.limits.reason(job, job_gpus(job))
        if reason is not None:
            cyc.decisions.pending[job.id] = PendingInfo(reason)
            return
        pods = pod_shapes(ctx, self.ix)
        mask = ctx.eligible[0]
        sig = (tuple((p.gpus_per_node, p.cpus_per_node, p.mem_per_node) for p in pods),
               mask.tobytes())  # fmt: skip
        free_gpus = int(cyc.usage.free_gpus[mask & cyc.usage.usable].sum())
        if sig in failed or free_gpus < sum(p.gpus_per_node for p in pods):
            cyc.decisions.pending[job.id] = _RESOURCES
            return
        placed: list[NodeAlloc] = []
        for pod in pods:
            na = bind_pod(self.scorer, cyc.usage, pod, mask, job.id)
            if na is None:
                break
            placed.append(na)
        if len(placed) < len(pods):  # discard the statement: release what was placed
            for na in placed:
                cyc.usage.release(Allocation(job.id, (na,)))
            failed.add(sig)
            cyc.decisions.pending[job.id] = _RESOURCES
            return
        alloc = merged(job.id, placed)
        cyc.decisions.starts.append(start_of(ctx, self.ix, alloc))
        cyc.decisions.pending.pop(job.id, None)
        cyc.limits.add(job, alloc.gpu_count)


__all__ = ["VolcanoPolicy"]
