"""`kueue`: Kueue quota admission in front of the default kube-scheduler.

What it reproduces (Kueue docs: "Cluster Queue" (nominalQuota, cohort,
borrowingLimit, queueingStrategy) and "Setup All-or-nothing with ready Pods"
(waitForPodsReady)):
- One ClusterQueue per account with jobs, all in one cohort. Its nominal GPU
  quota is the cluster's GPUs split by the accounts' normalized shares
  (sshare's NormShares from the association tree; accounts the tree does not
  know get the mean share of those it knows, equal shares when it knows
  none), by largest remainder so the quotas add up to the cluster.
- Admission reserves quota for a whole workload (the job's GPUs). A workload
  fits when its ClusterQueue stays within nominal + borrowingLimit (unlimited
  by default) and the cohort within the sum of the nominal quotas: unused
  quota of one queue is borrowable by the others. Preemption:
  kueue_preempt.py (issue 7).
- BestEffortFIFO: each ClusterQueue orders its workloads by priority, then
  queue time (creation; after an eviction, the eviction time: requeuingStrategy
  timestamp=Eviction); a head that does not fit is set aside and the next one
  is tried, so it blocks nobody. Heads of different queues are taken in the
  order: those that fit within their nominal quota first, then priority, then
  queue time. `strict_fifo=True` gives StrictFIFO (a queue stops at its first
  head that does not fit).
- Admitted workloads' pods are created at admission and placed by the default
  kube-scheduler model (k8s.py: one pod at a time, LeastAllocated, no gang).
- waitForPodsReady: a workload whose pods are not all running `timeout`
  seconds (default 300, Kueue's 5 minutes) after its admission is evicted (its
  bound pods are released, its quota freed) and requeued after a backoff of
  backoff_base x 2^(n-1) seconds for its n-th eviction (60 s doubling, at most
  backoff_max = 3600 s), plus a small jitter; after backoff_limit evictions
  (None: never) it is no longer admitted. block_admission=True (Kueue's
  blockAdmission) admits nothing while an admitted workload is not ready.
Kueue's jitter is random; here it is a fixed function of the job id and the
eviction count, so replays are reproducible. A workload whose pods could not
be placed even on an empty cluster is never admitted (it would be evicted and
requeued forever).

State between cycles lives in the job's meta (Decisions.meta, merged by the
driver): kueue.admitted (time), kueue.attempt (restarts at admission: a job
requeued after a failure must be admitted again), kueue.evictions,
kueue.requeue_at, kueue.queued_at. The policy asks for a cycle at the next
timeout or requeue time (Decisions.wake).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tide.model import AccountTree, Job
from tide.sched.cycle import Cycle, CycleMemo, close_cycle, open_cycle, ready
from tide.sched.eligibility import JobContext
from tide.sched.fairshare import sshare_rows
from tide.sched.index import ClusterIndex
from tide.sched.policies.base import Capabilities
from tide.sched.policies.k8s import bind_round, evict_lost_pods, waiting_for
from tide.sched.policies.kueue_preempt import KueuePreemption, preempt_for_quota
from tide.sched.policies.pods import Scorer, fits_empty, pod_shapes
from tide.sched.preempt_rules import job_priority
from tide.sched.shape import job_gpus
from tide.sched.state import Usage
from tide.sched.types import Decisions, PendingInfo, Reason, Snapshot

ADMITTED, ATTEMPT, EVICTIONS = "kueue.admitted", "kueue.attempt", "kueue.evictions"
REQUEUE_AT, QUEUED_AT = "kueue.requeue_at", "kueue.queued_at"


def nominal_quotas(accounts: AccountTree, names: Iterable[str], total: int) -> dict[str, int]:
    """Account -> nominal GPU quota: `total` split by normalized shares."""
    names = sorted(set(names))
    if not names:
        return {}
    norm = {r.account: r.norm_shares for r in sshare_rows(accounts, {}) if not r.user}
    known = [norm[a] for a in names if a in norm and a != "root"]
    fill = sum(known) / len(known) if known else 1.0
    weights = {a: (norm[a] if a in norm and a != "root" else fill) for a in names}
    wsum = sum(weights.values())
    if wsum <= 0:
        weights, wsum = dict.fromkeys(names, 1.0), float(len(names))
    exact = {a: total * w / wsum for a, w in weights.items()}
    quota = {a: math.floor(x) for a, x in exact.items()}
    short = total - sum(quota.values())
    for a in sorted(names, key=lambda a: (-(exact[a] - quota[a]), a))[:short]:
        quota[a] += 1
    return quota


@dataclass(slots=True)
class Cohort:
    """Quota bookkeeping for one cycle."""

    nominal: dict[str, int]
    borrowing_limit: int | None
    used: dict[str, int] = field(default_factory=dict)

    @property
    def capacity(self) -> int:
        return sum(self.nominal.values())

    def take(self, cq: str, gpus: int) -> None:
        self.used[cq] = self.used.get(cq, 0) + gpus

    def borrows(self, cq: str, gpus: int) -> bool:
        return self.used.get(cq, 0) + gpus > self.nominal.get(cq, 0)

    def check(self, cq: str, gpus: int) -> Reason | None:
        """None when the workload fits, else why not."""
        limit = self.borrowing_limit
        own = self.nominal.get(cq, 0) + (limit if limit is not None else self.capacity)
        if self.used.get(cq, 0) + gpus > own:
            return Reason.ASSOC_GRP_GRES
        if sum(self.used.values()) + gpus > self.capacity:
            return Reason.RESOURCES
        return None


def admitted_at(job: Job) -> float | None:
    at = job.meta.get(ADMITTED)
    if at is None or job.meta.get(ATTEMPT) != job.restarts:
        return None
    return float(at)  # type: ignore[arg-type]


class KueuePolicy:
    name = "kueue"
    capabilities = Capabilities(preemption="own", coalesce_ties=True)

    def __init__(
        self,
        index: ClusterIndex,
        timeout: float = 300.0,
        backoff_base: float = 60.0,
        backoff_max: float = 3600.0,
        backoff_limit: int | None = None,
        borrowing_limit: int | None = None,
        block_admission: bool = False,
        strict_fifo: bool = False,
        preemption: KueuePreemption = KueuePreemption(),
    ) -> None:
        self.ix = index
        self.memo = CycleMemo()
        self.timeout = timeout
        self.backoff_base, self.backoff_max, self.backoff_limit = (
            backoff_base, backoff_max, backoff_limit,
        )  # fmt: skip
        self.borrowing_limit = borrowing_limit
        self.block_admission = block_admission
        self.strict_fifo = strict_fifo
        self.preemption = preemption
        self.scorer = Scorer(index, most=False)
        self._feasible: dict[tuple[int, int], bool] = {}  # (job, hash of its node mask)

    def schedule(self, snap: Snapshot, usage: Usage) -> Decisions:
        cyc = open_cycle(snap, self.ix, usage, self.memo)
        lost = evict_lost_pods(cyc)
        ctxs = {j.id: c for j in snap.pending if (c := ready(cyc, j)) is not None}
        accounts = {r.job.account for r in snap.running} | {j.account for j in snap.pending}
        cohort = Cohort(
            nominal_quotas(snap.accounts, accounts, int(self.ix.gpus.sum())), self.borrowing_limit
        )
        for r in snap.running:
            cohort.take(r.job.account, r.alloc.gpu_count)
        admitted = {j.id: t for j in snap.pending if (t := admitted_at(j)) is not None}
        for j in snap.pending:
            if j.id in admitted:
                cohort.take(j.account, job_gpus(j))
        self._timeouts(cyc, cohort, admitted)
        if not (self.block_admission and admitted):
            self._admit(cyc, ctxs, cohort, admitted)
        preempt_for_quota(self.preemption, cyc, ctxs, cohort, admitted)  # kueue_preempt.py
        waiting = [
            waiting_for(cyc, self.ix, ctxs[jid], t, None if jid in lost else snap.bound.get(jid))
            for jid, t in sorted(admitted.items())
            if jid in ctxs
        ]
        bind_round(cyc, self.scorer, waiting)
        self._wake(cyc, admitted)
        return close_cycle(cyc)

    # -- waitForPodsReady ------------------------------------------------------

    def _timeouts(self, cyc: Cycle, cohort: Cohort, admitted: dict[int, float]) -> None:
        now = cyc.snap.now
        jobs = {j.id: j for j in cyc.snap.pending}
        for jid, t in sorted(admitted.items()):
            if now < t + self.timeout:
                continue
            job = jobs[jid]
            pods = cyc.snap.bound.get(jid)
            if pods is not None and jid not in cyc.decisions.unbinds:
                cyc.decisions.unbinds.append(jid)
                cyc.usage.release(pods)
            n = int(job.meta.get(EVICTIONS, 0)) + 1  # type: ignore[call-overload]
            cyc.decisions.meta[jid] = {
                ADMITTED: None, ATTEMPT: None, EVICTIONS: n,
                REQUEUE_AT: now + self.backoff(jid, n), QUEUED_AT: now,
            }  # fmt: skip
            cohort.take(job.account, -job_gpus(job))
            del admitted[jid]

    def backoff(self, job_id: int, evictions: int) -> float:
        """Requeue delay after the n-th eviction (60 s, 120 s, ... at most 3600 s)."""
        delay = min(self.backoff_base * 2 ** (evictions - 1), self.backoff_max)
        jitter = ((job_id * 2654435761 + evictions * 40503) % 1000) / 1000  # in [0, 1)
        return delay * (1 + 0.05 * jitter)

    # -- admission -------------------------------------------------------------

    def _admit(
        self, cyc: Cycle, ctxs: Mapping[int, JobContext], cohort: Cohort, admitted: dict[int, float]
    ) -> None:
        queues = self._queues(cyc, ctxs, admitted)
        pos = dict.fromkeys(queues, 0)
        while True:
            heads = [(cq, queues[cq][pos[cq]]) for cq in queues if pos[cq] < len(queues[cq])]
            if not heads:
                return
            heads.sort(key=lambda h: (cohort.borrows(h[0], job_gpus(h[1][1])), h[1][0]))
            for cq, (_, job) in heads:
                pos[cq] += 1
                reason = cohort.check(cq, job_gpus(job))
                if reason is None and not self._placeable(ctxs[job.id]):
                    reason = Reason.RESOURCES
                if reason is not None:
                    cyc.decisions.pending[job.id] = PendingInfo(reason)
                    if self.strict_fifo:
                        pos[cq] = len(queues[cq])
                    continue
                cohort.take(cq, job_gpus(job))
                self._feasible.pop((job.id, hash(ctxs[job.id].eligible[0].tobytes())), None)
                admitted[job.id] = cyc.snap.now
                cyc.decisions.meta[job.id] = {ADMITTED: cyc.snap.now, ATTEMPT: job.restarts}

    def _queues(
        self, cyc: Cycle, ctxs: Mapping[int, JobContext], admitted: dict[int, float]
    ) -> dict[str, list[tuple[tuple[int, float, int], Job]]]:
        """ClusterQueue -> its admissible workloads in BestEffortFIFO order."""
        now, accounts = cyc.snap.now, cyc.snap.accounts
        queues: dict[str, list[tuple[tuple[int, float, int], Job]]] = {}
        for jid, ctx in ctxs.items():
            job = ctx.job
            meta = job.meta
            meta = cyc.decisions.meta.get(jid, meta)  # evicted this cycle: its new state
            if jid in admitted or float(meta.get(REQUEUE_AT) or 0.0) > now:  # type: ignore[arg-type]
                if jid not in admitted:
                    cyc.decisions.pending[jid] = PendingInfo(Reason.RESOURCES)
                continue
            evictions = int(meta.get(EVICTIONS, 0))  # type: ignore[call-overload]
            if self.backoff_limit is not None and evictions > self.backoff_limit:
                cyc.decisions.pending[jid] = PendingInfo(Reason.JOB_HELD_ADMIN)  # deactivated
                continue
            queued = float(meta.get(QUEUED_AT, job.submit))  # type: ignore[arg-type]
            key = (-job_priority(job, accounts), queued, jid)
            queues.setdefault(job.account, []).append((key, job))
        for q in queues.values():
            q.sort(key=lambda e: e[0])
        return queues

    def _placeable(self, ctx: JobContext) -> bool:
        mask = ctx.eligible[0]
        key = (ctx.job.id, hash(mask.tobytes()))
        if key not in self._feasible:
            self._feasible[key] = fits_empty(self.ix, pod_shapes(ctx, self.ix), mask)
        return self._feasible[key]

    # -- timers ----------------------------------------------------------------

    def _wake(self, cyc: Cycle, admitted: dict[int, float]) -> None:
        """The next timeout of a workload still waiting for pods, or requeue time."""
        now = cyc.snap.now
        started = {s.job_id for s in cyc.decisions.starts}
        times = [t + self.timeout for jid, t in admitted.items() if jid not in started]
        for job in cyc.snap.pending:
            meta = cyc.decisions.meta.get(job.id, job.meta)
            at = meta.get(REQUEUE_AT)
            if at is not None and float(at) > now:  # type: ignore[arg-type]
                times.append(float(at))  # type: ignore[arg-type]
        future = [t for t in times if t > now]
        cyc.decisions.wake = min(future) if future else None


__all__ = ["KueuePolicy", "nominal_quotas"]
