"""Schedule: the live controller's thin adapter over the named policy.

The middle step of Load -> Schedule -> Apply (tide.server.snapshot,
here, tide.server.apply). The policy is the object the twin runs: built by
tide.sched.policies.policy_for from the cluster's SchedulerConfig (`policy`,
`victim_order`; `tide server --policy` overrides the name), or the pooled
policy over the slurm core when the cluster has serving pools. What a policy
keeps with its jobs between cycles is kept here, in memory, as the twin's
engine keeps it: pods bound before their job runs (Kubernetes-style
policies: they hold their GPUs), per-job bookkeeping (Decisions.meta) and,
for policies that plan with run-time predictions (Capabilities.predictions:
`tide`), the policy's run-time model (tide.sched.predict.RuntimeModel: each
job predicted when the driver first sees it, the model trained as jobs end;
kept in memory, so a restarted server learns again from the jobs that end).
"""

from __future__ import annotations

from dataclasses import replace

from tide.model import Cluster
from tide.model.sched_config import SchedulerConfig
from tide.model.service import PoolConfig
from tide.sched.cycle import usage_from
from tide.sched.index import build_index
from tide.sched.policies import Policy, policy_for
from tide.sched.predict import JobInfo, RuntimeModel, job_info
from tide.sched.serving.pools import PooledScheduler
from tide.sched.types import Allocation, Decisions, Snapshot


class PolicyDriver:
    """Runs one pass of the policy on a loaded snapshot (pure calls only)."""

    def __init__(
        self, cluster: Cluster, config: SchedulerConfig, pools: PoolConfig | None = None
    ) -> None:
        self.ix = build_index(cluster)
        self.pooled: PooledScheduler | None = None  # its lending status is shown
        if pools is not None and pools.pools:
            self.pooled = PooledScheduler(self.ix, pools)
            self.policy: Policy = self.pooled
        else:
            self.policy = policy_for(config, self.ix)
        self.bound: dict[int, Allocation] = {}  # pods bound for jobs not yet running
        self.meta: dict[int, dict[str, object]] = {}  # the policy's per-job bookkeeping
        # run-time predictions, for policies that plan with them (the twin's rule)
        caps = self.policy.capabilities
        self.predictor = RuntimeModel(caps.predictor) if caps.predictions else None
        self.predicted: dict[int, float] = {}  # job -> prediction made when first seen
        self._seen: dict[int, JobInfo] = {}  # what the model saw of each predicted job

    @property
    def name(self) -> str:
        return self.policy.name

    def __call__(self, snap: Snapshot) -> Decisions:
        """One cycle; may be called more than once on one pass (fault isolation),
        so it changes nothing the next call reads."""
        for job in snap.pending:
            kept = self.meta.get(job.id)
            if kept:
                job.meta = {**job.meta, **kept}
        usage = usage_from(self.ix, snap)
        for pods in self.bound.values():
            usage.allocate(pods)
        snap = replace(snap, bound=dict(self.bound), predicted=self._predictions(snap))
        return self.policy.schedule(snap, usage)

    def _predictions(self, snap: Snapshot) -> dict[int, float]:
        """As the twin's engine: each job predicted once, when first seen
        (pending, or running after a restart), kept while it waits and runs.
        Calling again with the same snapshot gives the same predictions."""
        if self.predictor is None:
            return {}
        running = [job_info(r.job, r.alloc.gpu_count) for r in snap.running]
        out = {}
        for job in [*snap.pending, *(r.job for r in snap.running)]:
            if job.id not in self._seen:
                info = self._seen[job.id] = job_info(job)
                p = self.predictor.predict(info, snap.now, running)
                if p is not None:
                    self.predicted[job.id] = p
            if job.id in self.predicted:
                out[job.id] = self.predicted[job.id]
        return out

    def job_ended(
        self, job_id: int, user: str, run_seconds: float, now: float | None = None
    ) -> None:
        """A job ended after `run_seconds` (tide.server.services.lifecycle):
        the model learns from it."""
        self.predicted.pop(job_id, None)
        info = self._seen.pop(job_id, None) or JobInfo(job_id, user, None, 1, 0.0)
        if self.predictor is not None:
            end = now if now is not None else info.submit + run_seconds
            self.predictor.observe(info, run_seconds, end)

    def keep(self, snap: Snapshot, d: Decisions) -> None:
        """After a pass: remember what the policy keeps between cycles; forget
        jobs that are no longer pending (started, cancelled, ended)."""
        pending = {j.id for j in snap.pending}
        for jid, values in d.meta.items():
            merged = {**self.meta.get(jid, {}), **values}
            self.meta[jid] = {k: v for k, v in merged.items() if v is not None}
        for jid in d.unbinds:
            self.bound.pop(jid, None)
        for jid, pods in d.binds.items():
            old = self.bound.get(jid)
            self.bound[jid] = Allocation(jid, (old.nodes if old else ()) + pods.nodes)
        started = {s.job_id for s in d.starts}
        if self.predictor is not None:  # jobs gone without an end (cancelled)
            here = pending | {r.job.id for r in snap.running} | started
            for jid in [j for j in self._seen if j not in here]:
                self._seen.pop(jid)
                self.predicted.pop(jid, None)
                self.predictor.forget(jid)
        for kept in (self.bound, self.meta):
            for jid in [j for j in kept if j not in pending or j in started]:
                del kept[jid]
