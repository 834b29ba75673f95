"""Schedule: the live controller's thin adapter over the named policy.

The middle step of Load -> Schedule -> Apply (tide.server.snapshot,
here, tide.server.apply). The policy is the object the twin runs: built by
tide.sched.policies.policy_for from the cluster's SchedulerConfig (`policy`,
`victim_order`; `tide server --policy` overrides the name), or the pooled
policy over the slurm core when the cluster has serving pools. What a policy
keeps with its jobs between cycles is kept here, in memory, as the twin's
engine keeps it: pods bound before their job runs (Kubernetes-style
policies: they hold their GPUs) and per-job bookkeeping (Decisions.meta).
"""

from __future__ import annotations

from dataclasses import replace

from tide.model import Cluster
from tide.model.sched_config import SchedulerConfig
from tide.model.service import PoolConfig
from tide.sched.cycle import usage_from
from tide.sched.index import build_index
from tide.sched.policies import Policy, policy_for
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
        return self.policy.schedule(replace(snap, bound=dict(self.bound)), usage)

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
        for kept in (self.bound, self.meta):
            for jid in [j for j in kept if j not in pending or j in started]:
                del kept[jid]
