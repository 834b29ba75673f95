"""The cycle state, and the phase that opens a cycle. Pure.

A scheduling cycle is a short sequence of public phases over one `Cycle`:

1. open      - `open_cycle` (here): free resources now (the driver's usage,
               copied, with node states applied), limits counted from the
               running jobs, advance reservations held;
2. priority  - `passes.priorities`: multifactor (or FCFS / SJF) order;
3. main      - `passes.main_pass`: jobs in order start where they fit now;
               the first that does not fit blocks its partition; when
               preemption is configured it may choose victims for it
               (`preempt.plan_preemption`); then the quota borrow pass
               (`passes.borrow_pass`);
4. backfill  - `passes.backfill_pass`: start now what delays no hold, hold
               the rest at their earliest start (EASY: only the first);
5. close     - `close_cycle` (here): the decisions, with the next time they
               can change by time alone (Decisions.wake, tide.sched.wake).

`tide.sched.scheduler.Scheduler` composes them as Slurm does; the other
policies (tide.sched.policies) compose the same phases differently. Every
phase reads the snapshot and writes only the cycle: its usage, limits,
per-job contexts and decisions.

Between cycles a `CycleMemo` (one per policy) keeps what depends only on
the cluster, the accounts and which nodes are usable: the partition table
and every job's context (shape, node masks, static reasons). It is the one
owner of that memo; `ready` and `context` below are the only readers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from tide.model import AccountTree, Job
from tide.sched.deps import DepState, DepWorld, evaluate
from tide.sched.eligibility import JobContext, build_context, quick_reason
from tide.sched.fairshare import fair_tree_factors
from tide.sched.index import ClusterIndex
from tide.sched.kept_order import KeptOrder
from tide.sched.limits import LimitChecker, RunningGroups, no_static_limits, unlimited
from tide.sched.placement import Free, select_nodes
from tide.sched.plan import Plan
from tide.sched.priority import partition_table
from tide.sched.priority_one import PriorityBasis
from tide.sched.quota import ledger_for
from tide.sched.releases import Releases
from tide.sched.shape import Shape
from tide.sched.state import Usage
from tide.sched.types import Allocation, Decisions, PendingInfo, Reason, Snapshot
from tide.sched.wake import TimedJobs, eligible_since, next_wake

INF = float("inf")
_STATE = attrgetter("state")
LOST_WORK, PRIORITY_ORDER = "lost_work", "priority"  # victim orders (docs/preemption.md)
VICTIM_ORDERS = (LOST_WORK, PRIORITY_ORDER)


@dataclass(slots=True)
class Cycle:
    """One cycle's working state, discarded at its end.

    Read-only for the phases: `snap`, `ix`, `memo`, `victim_order` (the
    priority phase may replace `snap` by one with the same pending jobs in
    evaluation order: passes.priorities).
    Written by the phases: `usage` (what is still free: starts and holds
    take from it), `limits` (counters grow with every start), `decisions`
    (the cycle's output), `contexts` (job id -> its context this cycle),
    `started` (allocations started this cycle, with their planned end),
    `resources_job` (the one job shown waiting for Resources), `preempt_places`.
    Built on first use: `deps` (the dependency world), `shared` (node masks
    that jobs asking for the same thing share, this cycle only).
    """

    snap: Snapshot
    ix: ClusterIndex
    usage: Usage
    limits: LimitChecker
    memo: CycleMemo
    victim_order: str = LOST_WORK  # preemption victims: LOST_WORK (tide) or PRIORITY_ORDER
    decisions: Decisions = field(default_factory=Decisions)
    contexts: dict[int, JobContext | None] = field(default_factory=dict)
    started: list[tuple[Allocation, float]] = field(default_factory=list)
    deps: DepWorld | None = None
    resv: Plan | None = None  # advance reservations, seen by the main pass
    resources_job: int | None = None  # the one job whose reason is Resources
    shared: dict[tuple, JobContext] = field(default_factory=dict)
    # the policy's node order for a job started now (lower first; None: the
    # core's best fit), e.g. tide's fragmentation-aware placement
    order_for: Callable[[Free, Shape], np.ndarray | None] | None = None
    # Slurm's preemptors this cycle -> the nodes of the place chosen for them
    # (free now or their victims'); the backfill pass holds them from now
    preempt_places: dict[int, tuple[int, ...]] = field(default_factory=dict)

    @property
    def partitions(self) -> object:
        """The priority partition table (tide.sched.priority.partition_table)."""
        return self.memo.partition_table(self.snap)


class CycleMemo:
    """What a policy keeps from one cycle to the next (its only such state
    inside the core): the partition table, and per job its context.

    A context depends on the job (its request object, partition, account,
    user, QOS, eligibility), on the accounts and on which nodes are usable.
    Contexts are dropped when the accounts change (another AccountTree, or
    the same one with a new `version`) or the usable nodes do. The memo holds
    the accounts and each request it keyed on, so no identity it compares
    can be reused by another object while it is kept. It also keeps the
    running jobs grouped for the limits (tide.sched.limits.RunningGroups), the
    node-state mask and the Fair Tree factors, each with what it depends on.
    """

    def __init__(self) -> None:
        self._contexts: dict[int, tuple[object, tuple, JobContext | None]] = {}
        # the node masks and partition checks kept contexts share (build_context's
        # `shared`), kept with them for the cluster they were built on
        self._bases: dict[tuple, JobContext] = {}
        self._bases_of: object | None = None
        self._accounts: AccountTree | None = None
        self._version = -1
        self._usable = b""
        self._partitions: object | None = None
        self._seen: dict[int, tuple[object, float | None]] = {}  # `smallest`'s jobs
        self._prio_shared: tuple | None = None  # `priorities`: what the kept rows share
        self._prio: dict[int, tuple] = {}
        self._fair_share: dict[str, float] | None = None  # with `_prio`
        self._basis: PriorityBasis | None = None  # with `_prio`
        self.order = KeptOrder()  # the pending jobs sorted by `_prio`: kept with it
        self.timed = TimedJobs()  # the pending jobs with a begin time or a switch wait
        self.running = RunningGroups()  # the running jobs the limits count
        self._releases: Releases | None = None  # `releases`
        self._least: tuple[float, float] = (INF, INF)
        self._states: list[object] = []  # `schedulable`: node states it was computed for
        self._up = b""
        self._schedulable = np.zeros(0, dtype=bool)
        self._states_gen: tuple[int | None, object] = (None, None)  # `schedulable`'s
        self._limit_kinds: tuple[object, int, tuple[bool, bool]] = (None, -1, (False, False))

    def releases(self, n: int) -> Releases:
        """The running jobs' release table kept between backfill passes
        (tide.sched.releases), for a cluster of n nodes."""
        if self._releases is None or self._releases.n != n:
            self._releases = Releases(n)
        return self._releases

    def validate(self, accounts: AccountTree, usable: np.ndarray) -> None:
        """Forget every context when the accounts or the usable nodes changed."""
        mask = usable.tobytes()
        if (
            accounts is not self._accounts
            or accounts.version != self._version
            or (mask != self._usable)
        ):
            self._contexts.clear()
            self._bases.clear()
            self._seen.clear()
            self._accounts, self._version, self._usable = accounts, accounts.version, mask

    def limit_shortcuts(self, accounts: AccountTree) -> tuple[bool, bool]:
        """(tide.sched.limits.unlimited, no_static_limits), kept while the
        accounts are the same object at the same version (as the contexts,
        which read limits too)."""
        kept = self._limit_kinds
        if kept[0] is not accounts or kept[1] != accounts.version:
            kinds = (unlimited(accounts), no_static_limits(accounts))
            self._limit_kinds = kept = (accounts, accounts.version, kinds)
        return kept[2]

    def schedulable(self, snap: Snapshot, ix: ClusterIndex) -> np.ndarray:
        """A fresh mask of the nodes that take new work (up, and a state that
        schedules); computed again only when a node's state or ix.up changed,
        which a cycle over a thousand nodes otherwise pays every time. With
        the driver's count of node state changes (Snapshot.node_states_gen)
        the states are not even read while that count stays the same."""
        up = ix.up.tobytes()
        gen, kept = snap.node_states_gen, self._states_gen
        if gen is None or gen != kept[0] or snap.cluster is not kept[1] or up != self._up:
            states = list(map(_STATE, snap.cluster.nodes))
            if states != self._states or up != self._up:
                self._states, self._up = states, up
                self._schedulable = ix.up & np.array([st.schedulable for st in states], dtype=bool)
            self._states_gen = (gen, snap.cluster)
        return self._schedulable.copy()

    def smallest(
        self, cyc: Cycle, jobs: Sequence[Job], needs: Callable[[Cycle, Job], tuple[float, float]]
    ) -> tuple[float, float]:
        """Lower bounds, over `jobs`, of each member of `needs(cyc, job)`, kept
        between cycles: jobs gone only raise the true minima, so kept ones stay
        bounds; a job is folded in again when its request or eligibility
        changed, or while its context is not kept (it may change); all are
        recomputed when the kept set outgrows the jobs or the contexts go."""
        seen = self._seen
        if len(seen) > 2 * len(jobs) + 1024:
            seen.clear()
        least = self._least if seen else (INF, INF)
        for job in jobs:
            kept = seen.get(job.id)
            if kept is not None and kept[0] is job.request and kept[1] == job.eligible:
                continue
            a, b = needs(cyc, job)
            least = (min(least[0], a), min(least[1], b))
            req = job.request
            if a < INF and job.eligible is not None and not (req.reservation or req.nodelist):
                seen[job.id] = (req, job.eligible)
        self._least = least
        return least

    def priorities(self, snap: Snapshot, at: float) -> dict[int, tuple]:
        """Job id -> (its priority key, priority, tier), kept while what every
        job's priority shares is the same: the time ages are measured to, the
        fair-share usage (by identity: drivers give a new mapping when it
        changes), the accounts and their version, the config and the cluster.
        The kept order (`order`) goes with them."""
        shared = (at, snap.usage, snap.accounts, snap.accounts.version, snap.config, snap.cluster)
        kept = self._prio_shared
        if (
            kept is None
            or len(kept) != len(shared)
            or any(a is not b and a != b for a, b in zip(kept, shared, strict=True))
        ):
            self._prio_shared, self._prio, self._fair_share = shared, {}, None
            self._basis = None
            self.order.clear()
        elif len(self._prio) > 2 * len(snap.pending) + 1024:
            alive = {j.id for j in snap.pending}
            self._prio = {k: v for k, v in self._prio.items() if k in alive}
        return self._prio

    def fair_share(self, snap: Snapshot) -> dict[str, float]:
        """Fair Tree factors of the snapshot's accounts and usage, kept as long as
        the priorities are (`priorities`, called first, drops both together)."""
        if self._fair_share is None:
            self._fair_share = fair_tree_factors(snap.accounts, snap.usage)
        return self._fair_share

    def priority_basis(self, snap: Snapshot) -> PriorityBasis:
        """What one job's priority shares with every other (priority_one), kept
        as long as the priorities are (`priorities`, called first, drops it)."""
        if self._basis is None:
            fs = self.fair_share(snap) if snap.config.weights.fairshare else {}
            table = self.partition_table(snap)
            self._basis = PriorityBasis.of(snap.cluster, snap.config, snap.accounts, fs,
                                           table)  # type: ignore[arg-type]  # fmt: skip
        return self._basis

    def partition_table(self, snap: Snapshot) -> object:
        if self._partitions is None:
            self._partitions = partition_table(snap.cluster)
        return self._partitions

    def context(self, cyc: Cycle, job: Job) -> JobContext | None:
        req = job.request
        if req.reservation or req.nodelist or job.eligible is None:
            return _build(cyc, job)  # depends on the time or on node states: never kept
        key = (job.partition, job.account, job.user, job.qos, job.eligible)
        kept = self._contexts.get(job.id)
        if kept is not None and kept[0] is req and kept[1] == key:
            return kept[2]
        ctx = _build(cyc, job, self._kept_bases(cyc.snap) if cyc.snap.shortcuts else None)
        self._contexts[job.id] = (req, key, ctx)
        if len(self._contexts) > 2 * len(cyc.snap.pending) + 1024:
            self._forget_gone(cyc.snap)
        return ctx

    def _kept_bases(self, snap: Snapshot) -> dict[tuple, JobContext]:
        """build_context's `shared` for contexts the memo keeps: what a kept
        context may be built from in a later cycle is what it would be built
        from anew (the same usable nodes and accounts: `validate`; the same
        cluster object; no reservation or --nodelist, which depend on the time
        and on node states). A new job then reuses the masks of an earlier one
        that asked for the same thing instead of building them again."""
        if snap.cluster is not self._bases_of or len(self._bases) > 4096:
            self._bases.clear()
            self._bases_of = snap.cluster
        return self._bases

    def _forget_gone(self, snap: Snapshot) -> None:
        alive = {j.id for j in snap.pending}
        for jid in [j for j in self._contexts if j not in alive]:
            del self._contexts[jid]


def _build(
    cyc: Cycle, job: Job, bases: dict[tuple, JobContext] | None = None
) -> JobContext | None:
    """build_context, sharing masks through `bases` (default: this cycle's)."""
    shared = bases if bases is not None else cyc.shared
    return build_context(job, cyc.snap, cyc.ix, cyc.usage, cyc.limits, shared)


# --- 1. open ----------------------------------------------------------------------


def usage_from(ix: ClusterIndex, snap: Snapshot) -> Usage:
    """Free resources with the snapshot's running jobs applied."""
    usage = Usage.empty(ix)
    for r in snap.running:
        usage.allocate(r.alloc)
    return usage


def open_cycle(
    snap: Snapshot,
    ix: ClusterIndex,
    usage: Usage | None,
    memo: CycleMemo,
    victim_order: str = LOST_WORK,
) -> Cycle:
    """The cycle's working state: a private copy of `usage` (the driver's, bound
    pods included; None: built from snap.running), node states, the running
    jobs counted against the limits, advance reservations held."""
    usage = usage.copy() if usage is not None else usage_from(ix, snap)
    usage.usable = memo.schedulable(snap, ix)
    quota = ledger_for(snap.quotas, snap.accounts, ix.gpu_type)
    unlimited, no_static = memo.limit_shortcuts(snap.accounts) if snap.shortcuts else (False, False)
    limits = LimitChecker(snap.accounts, quota, unlimited, no_static)
    if limits.quota is None:
        limits.add_groups(memo.running.update(snap.running, snap.running_delta))
    else:
        limits.add_running(snap.running)
    memo.validate(snap.accounts, usage.usable)
    cyc = Cycle(snap, ix, usage, limits, memo, victim_order)
    if any(r.end > snap.now for r in snap.reservations):
        cyc.resv = Plan.build(ix, usage, [], snap.now, share=True)
        add_reservation_holds(cyc, cyc.resv)
    return cyc


def add_reservation_holds(cyc: Cycle, plan: Plan) -> None:
    """Advance reservations hold their nodes (or GPUs) for their window."""
    ix, now = cyc.ix, cyc.snap.now
    for res in cyc.snap.reservations:
        if res.end <= now:
            continue
        tag = "" if res.maint else res.name
        if res.nodes:
            for name in res.nodes:
                if name in ix.pos:
                    plan.holds.add(ix.pos[name], res.start, res.end, 0, 0, 0, True, tag)
        elif res.gpus:
            _hold_gpu_count(cyc, plan, res.gpus, res.start, res.end, tag)


def _hold_gpu_count(cyc: Cycle, plan: Plan, gpus: int, start: float, end: float, tag: str) -> None:
    shape = Shape(1, cyc.ix.n, 0, gpus, True, 1, 0, 0, 0, False, "", False, int(end - start))
    t = max(start, cyc.snap.now)
    pick = select_nodes(cyc.ix, plan.free_at(t, end - t), shape, cyc.usage.usable)
    for p in pick.nodes if pick else ():
        plan.holds.add(p.node, start, end, p.gpus, 0, 0, False, tag)


def close_cycle(cyc: Cycle) -> Decisions:
    """The cycle's decisions, with the earliest time after now at which time
    alone can change them (begin times, backoffs, --switches waits,
    reservations, grace ends, exemptions; tide.sched.wake): every policy
    ends its cycle here, so both drivers know when to run the next one."""
    d = cyc.decisions
    d.wake = next_wake(cyc.snap, d, cyc.memo.timed.of(cyc.snap))
    return d


# --- readiness: the site's rules, shared by every policy ------------------------------


def ready(cyc: Cycle, job: Job) -> JobContext | None:
    """The job's context when the site rules (holds, --begin, dependencies,
    partitions, constraints, node states, association/QOS limits) let it start
    now; else None, with its pending reason recorded. Every policy applies
    these rules through this function, so a comparison between policies
    measures scheduling and nothing else. Contexts may be shared between
    cycles: never modify one."""
    snap = cyc.snap
    reason = quick_reason(job, snap.now)
    if reason is None and job.request.dependency is not None:
        state = evaluate(job, dep_world(cyc))
        if state is DepState.NEVER:
            reason = Reason.DEPENDENCY_NEVER_SATISFIED
            cyc.decisions.never.append(job.id)
        elif state is DepState.WAITING:
            reason = Reason.DEPENDENCY
    if reason is not None:
        cyc.decisions.pending[job.id] = PendingInfo(reason)
        return None
    if job.eligible is None:
        cyc.decisions.eligible[job.id] = eligible_since(job, snap.now)
    if job.id not in cyc.contexts:
        cyc.contexts[job.id] = context(cyc, job)
    ctx = cyc.contexts[job.id]
    if ctx is None or ctx.reason is not None:
        why = ctx.reason if ctx is not None and ctx.reason is not None else Reason.BAD_CONSTRAINTS
        cyc.decisions.pending[job.id] = PendingInfo(why)
        return None
    limit_reason = cyc.limits.reason(job, ctx.shape.gpus)
    if limit_reason is not None:
        cyc.decisions.pending[job.id] = PendingInfo(limit_reason)
        return None
    return ctx


def context(cyc: Cycle, job: Job) -> JobContext | None:
    """The job's context (shape, node masks, static reason), from the memo."""
    return cyc.memo.context(cyc, job)


def dep_world(cyc: Cycle) -> DepWorld:
    """What dependencies are evaluated against (built once per cycle)."""
    if cyc.deps is None:
        snap = cyc.snap
        running = {r.job.display_id for r in snap.running}
        known = set(snap.finished) | running | {j.display_id for j in snap.pending}
        arrays: dict[str, list[str]] = {}
        for j in [*snap.pending, *(r.job for r in snap.running)]:
            if j.array_job_id is not None:
                arrays.setdefault(str(j.array_job_id), []).append(j.display_id)
        for did in snap.finished:
            base, sep, _ = did.partition("_")
            if sep:
                arrays.setdefault(base, []).append(did)
        cyc.deps = DepWorld(
            finished=snap.finished,
            started=running | set(snap.finished),
            known=known,
            arrays=arrays,
            running_names={(r.job.user, r.job.request.name) for r in snap.running},
        )
    return cyc.deps


__all__ = [
    "LOST_WORK",
    "PRIORITY_ORDER",
    "VICTIM_ORDERS",
    "Cycle",
    "CycleMemo",
    "add_reservation_holds",
    "close_cycle",
    "context",
    "dep_world",
    "open_cycle",
    "ready",
    "usage_from",
]
