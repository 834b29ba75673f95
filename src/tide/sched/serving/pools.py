"""Pooled scheduling: service replicas and batch jobs on one cluster whose
serving pools lend what they do not use. Pure (docs/services.md, "Pools").

A policy like the others (`schedule(snapshot, usage) -> Decisions`), built
on the one core (tide.sched.scheduler.Scheduler). Each pass is two calls of it
on the same snapshot:

1. serving pass: only the pools' own pending jobs (service replicas, the
   jobs of a pool's partition). With GPU lending, a replica that does not
   fit preempts borrowed work through the core's preemption search
   (partition_prio: the pool's partition outranks its lend partition), so
   victims are the set losing the least work that frees the replica's whole
   placement; their grace is bounded by the reclaim objective
   (lending.reclaim_grace). With node lending, replicas see only SERVING
   nodes and preempt nothing: LENT nodes come back by draining.
2. batch pass: everything else, with the serving pass's starts applied and
   the pool capacity that is not lent held: GPU lending holds all but
   `budget - borrowed` of the pool's free GPUs (on the nodes that carry the
   most replicas first, so lent GPUs gather on emptier nodes); node lending
   holds every node that is not LENT.

Holds are allocations on a copy of the usage (never in Snapshot.running),
so they are never preemption victims and never show anywhere else.
The lending state (the spare history, the node sides) is kept in the policy
between passes; it depends only on the snapshots seen, so the twin and the
live controller, fed the same passes, lend the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from tide.model import Job
from tide.model.service import Pool, PoolConfig
from tide.sched.cycle import usage_from
from tide.sched.index import ClusterIndex
from tide.sched.policies.base import Capabilities
from tide.sched.preempt_rules import PARTITION, REQUEUE
from tide.sched.scheduler import Scheduler
from tide.sched.serving import lending
from tide.sched.state import Usage
from tide.sched.types import Allocation, Decisions, NodeAlloc, Snapshot

HOLD_JOB = -1  # the job id of hold allocations (never a real job)


@dataclass(slots=True)
class PoolStatus:
    """One pool after a pass, for metrics and `tide service pools`."""

    name: str
    gpus: int = 0
    replica_gpus: int = 0
    pending_gpus: int = 0
    borrowed_gpus: int = 0
    budget: int = 0  # GPUs borrowed work may hold (mode "gpu")
    held: int = 0  # free GPUs kept from borrowed work this pass
    grace: int = 0  # grace a reclaimed borrower gets now
    sides: dict[str, int] = field(default_factory=dict)  # mode "node": nodes per side
    moves: lending.NodeMoves | None = None


@dataclass(slots=True)
class _PoolView:
    pool: Pool
    mask: np.ndarray  # the pool's nodes
    replicas: list[Job] = field(default_factory=list)  # pending
    replica_gpus: np.ndarray | None = None  # per node, running replicas
    borrowed_gpus: np.ndarray | None = None  # per node, running borrowed work


class PooledScheduler:
    """The two-pass policy over pools (see the module docstring)."""

    name = "pooled"
    # replicas preempt borrowed work by the pool's own rule, whatever PreemptType says
    capabilities = Capabilities(preemption="own")

    def __init__(self, index: ClusterIndex, config: PoolConfig) -> None:
        self.ix = index
        self.config = config
        self.core = Scheduler(index, victim_order=config.victim_order)
        self.gpu_state: dict[str, lending.GpuLending] = {}
        self.node_state: dict[str, lending.NodeLending] = {}
        self.status: dict[str, PoolStatus] = {}

    def schedule(self, snap: Snapshot, usage: Usage | None = None) -> Decisions:
        base = usage.copy() if usage is not None else usage_from(self.ix, snap)
        views = [self._view(p, snap) for p in self.config.pools]
        own = {j.id for v in views for j in v.replicas}
        self.status = {}
        for v in views:
            self.status[v.pool.name] = self._observe(v, snap.now)
        serving = [j for j in snap.pending if j.id in own]
        d1 = self._serving_pass(snap, views, serving, base) if serving else Decisions()
        batch_usage = base.copy()
        for st in d1.starts:
            batch_usage.allocate(st.alloc)
        _hold_planned(d1, batch_usage)
        for v in views:
            self._hold_unlent(v, batch_usage)
        rest = [j for j in snap.pending if j.id not in own]
        d2 = self.core.schedule(replace(snap, pending=rest), batch_usage) if rest else Decisions()
        return merge(d1, d2)

    # --- what each pool looks like now ----------------------------------------

    def _view(self, pool: Pool, snap: Snapshot) -> _PoolView:
        mask = self.ix.partition_masks.get(pool.partition)
        if mask is None:
            mask = np.zeros(self.ix.n, dtype=bool)
        v = _PoolView(pool, mask)
        v.replica_gpus = np.zeros(self.ix.n, dtype=np.int64)
        v.borrowed_gpus = np.zeros(self.ix.n, dtype=np.int64)
        for r in snap.running:
            names = _partitions(r.job)
            target = None
            if pool.partition in names:
                target = v.replica_gpus
            elif pool.lend_partition and pool.lend_partition in names:
                target = v.borrowed_gpus
            if target is None:
                continue
            for na in r.alloc.nodes:
                if mask[na.node]:
                    target[na.node] += len(na.gpus)
        v.replicas = [j for j in snap.pending if _partitions(j)[:1] == (pool.partition,)]
        return v

    def _observe(self, v: _PoolView, now: float) -> PoolStatus:
        pool, ix = v.pool, self.ix
        assert v.replica_gpus is not None and v.borrowed_gpus is not None
        pending = sum(_gpus(j) for j in v.replicas)
        st = PoolStatus(
            pool.name,
            gpus=int(ix.gpus[v.mask].sum()),
            replica_gpus=int(v.replica_gpus.sum()),
            pending_gpus=pending,
            borrowed_gpus=int(v.borrowed_gpus.sum()),
        )
        decided = min((j.submit for j in v.replicas), default=now)
        st.grace = lending.reclaim_grace(pool, decided, now)
        if pool.mode == "node":
            nodes = [
                lending.NodeView(int(i), int(ix.gpus[i]), int(v.replica_gpus[i]),
                                 int(v.borrowed_gpus[i]))
                for i in np.flatnonzero(v.mask)
            ]  # fmt: skip
            old = self.node_state.get(pool.name, lending.NodeLending())
            new, moves = lending.observe_nodes(pool, old, now, nodes, pending)
            self.node_state[pool.name] = new
            st.moves = moves
            for _, side in new.sides:
                st.sides[side.state] = st.sides.get(side.state, 0) + 1
        else:
            spare = lending.spare_gpus(pool, st.gpus, st.replica_gpus, pending)
            old_g = self.gpu_state.get(pool.name, lending.GpuLending())
            st.budget, self.gpu_state[pool.name] = lending.observe_gpus(pool, old_g, now, spare)
            if not pool.lends:
                st.budget = 0
        return st

    # --- pass 1: replicas --------------------------------------------------------

    def _serving_pass(
        self, snap: Snapshot, views: list[_PoolView], jobs: list[Job], base: Usage
    ) -> Decisions:
        usage = base.copy()
        parts = {p.name: p for p in snap.cluster.partitions}
        reclaiming = False
        for v in views:
            pool = v.pool
            if pool.mode == "node":
                self._hold_nodes(v, usage, keep=lending.SERVING)
                continue
            if not pool.lends or pool.lend_partition not in parts or pool.partition not in parts:
                continue
            reclaiming = True
            grace = self.status[pool.name].grace
            own, lend = parts[pool.partition], parts[pool.lend_partition]
            top = max(own.priority_tier, 1)  # its own work outranks what it lent
            parts[pool.partition] = replace(own, priority_tier=top)
            parts[pool.lend_partition] = replace(
                lend, priority_tier=min(lend.priority_tier, top - 1), preempt_mode=REQUEUE,
                grace_time=grace,
            )  # fmt: skip
        config = snap.config
        if reclaiming:
            config = replace(config, preempt_type=PARTITION)
        else:
            config = replace(config, preempt_type="preempt/none")
        cluster = replace(snap.cluster, partitions=[parts[p.name] for p in snap.cluster.partitions])
        view = replace(snap, pending=jobs, cluster=cluster, config=config)
        return self.core.schedule(view, usage)

    # --- pass 2: holds for what is not lent ----------------------------------------

    def _hold_unlent(self, v: _PoolView, usage: Usage) -> None:
        if v.pool.mode == "node":
            self._hold_nodes(v, usage, keep=lending.LENT)
            return
        st = self.status[v.pool.name]
        free = usage.free_gpus * v.mask
        may_take = max(0, st.budget - st.borrowed_gpus)
        to_hold = max(0, int(free.sum()) - may_take)
        st.held = to_hold
        if to_hold == 0:
            return
        replica_gpus = v.replica_gpus
        assert replica_gpus is not None
        order = sorted(np.flatnonzero(free > 0), key=lambda i: (-int(replica_gpus[i]), int(i)))
        nodes = []
        for i in order:
            take = min(int(free[i]), to_hold)
            nodes.append(NodeAlloc(int(i), _free_gpu_indices(usage, int(i))[:take]))
            to_hold -= take
            if to_hold == 0:
                break
        usage.allocate(Allocation(HOLD_JOB, tuple(nodes)))

    def _hold_nodes(self, v: _PoolView, usage: Usage, keep: str) -> None:
        """Hold everything free on the pool's nodes whose side is not `keep`."""
        state = self.node_state.get(v.pool.name, lending.NodeLending())
        nodes = []
        held = 0
        for i in np.flatnonzero(v.mask):
            side = state.side(int(i))
            if (side.state if side else lending.SERVING) == keep:
                continue
            na = _everything_free(usage, int(i))
            if na is not None:
                nodes.append(na)
                held += len(na.gpus)
        if nodes:
            usage.allocate(Allocation(HOLD_JOB, tuple(nodes)))
        if keep == lending.LENT:
            self.status[v.pool.name].held = held


def merge(a: Decisions, b: Decisions) -> Decisions:
    """The decisions of two passes over disjoint pending jobs, as one."""
    wakes = [w for w in (a.wake, b.wake) if w is not None]
    return Decisions(
        starts=[*a.starts, *b.starts],
        pending={**a.pending, **b.pending},
        priorities={**a.priorities, **b.priorities},
        eligible={**a.eligible, **b.eligible},
        never=[*a.never, *b.never],
        binds={**a.binds, **b.binds},
        unbinds=[*a.unbinds, *b.unbinds],
        meta={**a.meta, **b.meta},
        wake=min(wakes) if wakes else None,
        preemptions=[*a.preemptions, *b.preemptions],
    )


def _hold_planned(d: Decisions, usage: Usage) -> None:
    """Replicas waiting for their victims to leave keep the free part of
    their future nodes (the core holds it within its own call)."""
    nodes = sorted({n for info in d.pending.values() for n in info.planned_nodes})
    held = [na for n in nodes if (na := _gpus_free(usage, n)) is not None]
    if held:
        usage.allocate(Allocation(HOLD_JOB, tuple(held)))


def _gpus_free(usage: Usage, node: int) -> NodeAlloc | None:
    gpus = _free_gpu_indices(usage, node)
    return NodeAlloc(node, gpus) if gpus else None


def _partitions(job: Job) -> tuple[str, ...]:
    return (job.partition,) if job.partition else tuple(job.request.partitions)


def _gpus(job: Job) -> int:
    req = job.request
    return req.total_gpus(req.node_range()[0])


def _free_gpu_indices(usage: Usage, node: int) -> tuple[int, ...]:
    mask = int(usage.gpu_mask[node])
    return tuple(b for b in range(int(usage.index.gpus[node])) if mask >> b & 1)


def _everything_free(usage: Usage, node: int) -> NodeAlloc | None:
    gpus = _free_gpu_indices(usage, node)
    cmask = usage.core_mask[node]
    cores = tuple(c for c in range(int(usage.index.cores[node])) if cmask >> c & 1)
    mem = int(usage.free_mem[node])
    if not gpus and not cores and mem <= 0:
        return None
    return NodeAlloc(node, gpus, cores, mem)
