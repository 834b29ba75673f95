"""The scheduling cycle: snapshot in, decisions out. Pure.

Phases (each a function below):
1. state    - free resources now: running allocations applied to the nodes;
2. priority - multifactor priorities (or FCFS / SJF order), fair-share first;
3. main     - jobs in order start where they fit now; the first job that does
              not fit blocks its partition, the rest of it waits (Priority);
4. backfill - (when the driver asks: every bf_interval) jobs in order, up to
              bf_max_job_test: start now if that delays no hold, else get a
              hold at their earliest start (conservative: every job; EASY:
              only the first that cannot start; none: no backfill).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tide.model import Job, Partition
from tide.model.sched_config import BackfillMode, QueueOrder, SchedulerConfig
from tide.sched import preempt as _preempt
from tide.sched.deps import DepState, DepWorld, evaluate
from tide.sched.eligibility import JobContext, build_context, quick_reason
from tide.sched.index import ClusterIndex, build_index
from tide.sched.limits import LimitChecker
from tide.sched.placement import Free, Pick, concrete, select_by_capacity, select_nodes
from tide.sched.plan import INF, Plan
from tide.sched.quota import borrow_pass, ledger_for
from tide.sched.state import Usage
from tide.sched.types import (
    Allocation,
    Decisions,
    NodeAlloc,
    PendingInfo,
    Reason,
    Snapshot,
    Start,
)

UNLIMITED = 365 * 86400  # planning horizon for jobs without a time limit
_PRIORITY = PendingInfo(Reason.PRIORITY)


@dataclass(slots=True)
class Cycle:
    """One cycle's working state (discarded at the end)."""

    snap: Snapshot
    ix: ClusterIndex
    usage: Usage
    limits: LimitChecker
    decisions: Decisions = field(default_factory=Decisions)
    contexts: dict[int, JobContext | None] = field(default_factory=dict)
    started: list[tuple[Allocation, float]] = field(default_factory=list)
    deps: DepWorld | None = None
    resv: Plan | None = None  # advance reservations, seen by the main pass
    resources_job: int | None = None  # the one job whose reason is Resources
    memo: dict[tuple, JobContext | None] = field(default_factory=dict)
    shared: dict[tuple, JobContext] = field(default_factory=dict)  # one cycle's request masks
    partitions: object | None = None
    victim_order: str = "lost_work"  # preemption victims: "lost_work" (tide) or "priority"


class Scheduler:
    """Keeps the cluster index between cycles (it depends only on the cluster)."""

    def __init__(self, cluster_index: ClusterIndex, victim_order: str = "lost_work") -> None:
        self.ix = cluster_index
        self.victim_order = victim_order  # docs/preemption.md
        # Memo of per-job contexts (shape, node masks, static reasons): they
        # depend only on the job, the accounts and which nodes are usable, so
        # the memo is dropped whenever either of those two changes.
        self._contexts: dict[tuple, JobContext | None] = {}
        self._memo_key: tuple[int, bytes] | None = None

    @classmethod
    def for_cluster(cls, snap_cluster) -> Scheduler:  # type: ignore[no-untyped-def]
        return cls(build_index(snap_cluster))

    def schedule(self, snap: Snapshot, usage: Usage | None = None) -> Decisions:
        cyc = _start_cycle(snap, self.ix, usage)
        key = (id(snap.accounts), cyc.usage.usable.tobytes())
        if key != self._memo_key:
            self._contexts.clear()
            self._memo_key = key
        cyc.memo = self._contexts
        cyc.victim_order = self.victim_order
        if "priority_partitions" not in self.ix.memo:
            from tide.sched.priority import partition_table

            self.ix.memo["priority_partitions"] = partition_table(snap.cluster)
        cyc.partitions = self.ix.memo["priority_partitions"]
        order = _priorities(cyc)
        _main_pass(cyc, order)
        mode = snap.config.backfill
        if snap.backfill and mode is not BackfillMode.NONE:
            _backfill_pass(cyc, order, easy=mode is BackfillMode.EASY)
        return cyc.decisions


def schedule(snap: Snapshot) -> Decisions:
    """One scheduling cycle on a snapshot (builds the cluster index each call;
    drivers that cycle often keep a Scheduler instead)."""
    return Scheduler(build_index(snap.cluster)).schedule(snap)


# --- 1. state ------------------------------------------------------------------


def usage_from(ix: ClusterIndex, snap: Snapshot) -> Usage:
    usage = Usage.empty(ix)
    for r in snap.running:
        usage.allocate(r.alloc)
    return usage


def _start_cycle(snap: Snapshot, ix: ClusterIndex, usage: Usage | None) -> Cycle:
    usage = usage.copy() if usage is not None else usage_from(ix, snap)
    usage.usable = ix.up & np.array([n.state.schedulable for n in snap.cluster.nodes])
    limits = LimitChecker(snap.accounts, ledger_for(snap.quotas, snap.accounts, ix.gpu_type))
    for r in snap.running:
        limits.add(r.job, r.alloc.gpu_count)
    cyc = Cycle(snap, ix, usage, limits)
    if any(r.end > snap.now for r in snap.reservations):
        cyc.resv = Plan.build(ix, usage, [], snap.now, share=True)
        _add_reservation_holds(cyc, cyc.resv)
    return cyc


# --- 2. priority ---------------------------------------------------------------


def _priorities(cyc: Cycle) -> list[int]:
    """Indices into snap.pending in evaluation order."""
    snap = cyc.snap
    jobs = snap.pending
    cfg = snap.config
    if not jobs:
        return []
    if cfg.order is QueueOrder.FCFS:
        return sorted(range(len(jobs)), key=lambda i: (jobs[i].submit, jobs[i].id))
    if cfg.order is QueueOrder.SJF:
        return sorted(
            range(len(jobs)), key=lambda i: (_limit(jobs[i], snap), jobs[i].submit, jobs[i].id)
        )
    from tide.sched.fairshare import fair_tree_factors
    from tide.sched.priority import compute_priorities

    fs = fair_tree_factors(snap.accounts, snap.usage) if cfg.weights.fairshare else {}
    result = compute_priorities(
        jobs,
        snap.cluster,
        cfg,
        snap.accounts,
        fs,
        snap.now if snap.priority_time is None else snap.priority_time,
        cyc.partitions,  # type: ignore[arg-type]
    )
    cyc.decisions.priorities = dict(
        zip(result.job_ids.tolist(), result.total.tolist(), strict=True)
    )
    return result.order().tolist()


def _limit(job: Job, snap: Snapshot) -> int:
    return time_limit(
        job, snap.cluster.partition(job.partition) or snap.cluster.default_partition(), snap.config
    )


def time_limit(job: Job, part: Partition | None, cfg: SchedulerConfig) -> int:
    """--time, else the partition's DefaultTime, else its MaxTime, else unlimited."""
    del cfg
    req = job.request.time_limit
    if req is not None:
        return int(req)
    if part is not None and part.default_time is not None:
        return part.default_time
    if part is not None and part.max_time is not None:
        return part.max_time
    return UNLIMITED


# --- 3. main pass --------------------------------------------------------------


def _main_pass(cyc: Cycle, order: list[int]) -> None:
    blocked: set[str] = set()
    pending = cyc.snap.pending
    default = cyc.snap.cluster.default_partition()
    every = {p.name for p in cyc.snap.cluster.partitions}
    preempting = cyc.snap.config.preempt_type not in ("", "preempt/none")
    if cyc.limits.quota is not None:  # borrowers wait for the borrow pass (quota.py)
        cyc.limits.quota.borrowing_open = False
    for k, i in enumerate(order):
        if every and every <= blocked:
            # every partition waits behind a blocked job: nothing else can start now
            _behind(cyc, [pending[j] for j in order[k:]])
            break
        job = pending[i]
        if blocked and quick_reason(job, cyc.snap.now) is None:
            names = [job.partition] if job.partition else job.request.partitions
            if all(n in blocked for n in names or [default.name if default else ""]):
                cyc.decisions.pending[job.id] = _PRIORITY  # behind a blocked job
                continue
        ctx = _ready(cyc, job)
        if ctx is None:
            if cyc.limits.quota is not None:  # waits for lent quota: reclaim it
                _preempt.plan_reclaim(cyc, job)
            continue
        if all(p.name in blocked for p in ctx.parts):
            cyc.decisions.pending[job.id] = _PRIORITY
            continue
        started = _try_start_now(cyc, ctx, plan=cyc.resv, backfilled=False)
        if not started:
            blocked.update(p.name for p in ctx.parts)
            _blocked_reason(cyc, ctx.job.id)
            if preempting:
                _preempt.plan_preemption(cyc, ctx)
    borrow_pass(cyc, blocked)


def _behind(cyc: Cycle, jobs: list[Job]) -> None:
    """Jobs queued behind blocked partitions: Priority, unless held or
    waiting for their begin time (the cheap reasons; the rest waits for the
    cycle that examines them, as in Slurm)."""
    now, out = cyc.snap.now, cyc.decisions.pending
    out.update(dict.fromkeys([job.id for job in jobs], _PRIORITY))
    for job in jobs:
        req = job.request
        if job.held or req.hold or req.begin is not None:
            reason = quick_reason(job, now)
            if reason is not None:
                out[job.id] = PendingInfo(reason)


def _ready(cyc: Cycle, job: Job) -> JobContext | None:
    """The job's context when it may start now as far as rules go; else None
    with its pending reason recorded."""
    snap = cyc.snap
    reason = quick_reason(job, snap.now)
    if reason is None and job.request.dependency is not None:
        state = evaluate(job, _dep_world(cyc))
        if state is DepState.NEVER:
            reason = Reason.DEPENDENCY_NEVER_SATISFIED
            cyc.decisions.never.append(job.id)
        elif state is DepState.WAITING:
            reason = Reason.DEPENDENCY
    if reason is not None:
        cyc.decisions.pending[job.id] = PendingInfo(reason)
        return None
    if job.eligible is None:
        cyc.decisions.eligible[job.id] = snap.now
    if job.id not in cyc.contexts:
        cyc.contexts[job.id] = _context(cyc, job)
    ctx = cyc.contexts[job.id]
    if ctx is None or ctx.reason is not None:
        cyc.decisions.pending[job.id] = PendingInfo(ctx.reason if ctx else Reason.BAD_CONSTRAINTS)
        return None
    limit_reason = cyc.limits.reason(job, ctx.shape.gpus)
    if limit_reason is not None:
        cyc.decisions.pending[job.id] = PendingInfo(limit_reason)
        return None
    return ctx


def _context(cyc: Cycle, job: Job) -> JobContext | None:
    req = job.request
    if req.reservation or req.nodelist or job.eligible is None:
        return build_context(job, cyc.snap, cyc.ix, cyc.usage, cyc.limits, cyc.shared)
    key = (
        job.id,
        id(req),
        req.time_limit,
        job.partition,
        job.account,
        job.user,
        job.qos,
        job.eligible,
    )
    if key not in cyc.memo:
        cyc.memo[key] = build_context(job, cyc.snap, cyc.ix, cyc.usage, cyc.limits, cyc.shared)
    return cyc.memo[key]


def _dep_world(cyc: Cycle) -> DepWorld:
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


def _try_start_now(cyc: Cycle, ctx: JobContext, plan: Plan | None, backfilled: bool) -> bool:
    """Start the job now if it fits (and delays no hold). Records the outcome."""
    now = cyc.snap.now
    u = cyc.usage
    bare = Free(u.free_gpus, u.free_cores, u.free_mem)
    for part, eligible in zip(ctx.parts, ctx.eligible, strict=True):
        # holds only take capacity away: what does not fit without them never fits
        if select_nodes(cyc.ix, bare, ctx.shape, eligible, ctx.max_leaves(now)) is None:
            continue
        free = _free_now(cyc, ctx, plan)
        pick = select_nodes(cyc.ix, free, ctx.shape, eligible, ctx.max_leaves(now))
        if pick is None:
            continue
        alloc = _concrete(cyc, ctx, pick, eligible, free, now)
        if alloc is None:
            continue
        _record_start(cyc, ctx, part, alloc, pick, backfilled)
        return True
    # Slurm shows Resources also while a job waits for its --switches count
    cyc.decisions.pending[ctx.job.id] = PendingInfo(Reason.RESOURCES)
    return False


def _blocked_reason(cyc: Cycle, job_id: int) -> None:
    """The highest-priority blocked job waits for Resources, the rest for Priority."""
    info = cyc.decisions.pending[job_id]
    if cyc.resources_job is None:
        cyc.resources_job = job_id
    elif cyc.resources_job != job_id:
        cyc.decisions.pending[job_id] = PendingInfo(
            Reason.PRIORITY, info.planned_start, info.planned_nodes
        )


def _free_now(cyc: Cycle, ctx: JobContext, plan: Plan | None) -> Free:
    if plan is not None and len(plan.holds):
        return plan.free_at(cyc.snap.now, ctx.shape.time_limit, skip=ctx.reservation)
    u = cyc.usage
    return Free(u.free_gpus, u.free_cores, u.free_mem)


def _concrete(
    cyc: Cycle, ctx: JobContext, pick: Pick, eligible: np.ndarray, free: Free, now: float
) -> Allocation | None:
    """GPU indices and cores for the picked nodes; a node that cannot honour
    binding is dropped and the pick redone (a few times at most)."""
    elig = eligible
    binding = ctx.shape.enforce_binding or ctx.shape.cpus_per_gpu > 0
    for _ in range(4):
        nodes: list[NodeAlloc] = []
        bad: list[int] = []
        for p in pick.nodes:
            na = concrete(cyc.ix, cyc.usage.gpu_mask, cyc.usage.core_mask, p, binding)
            (bad.append(p.node) if na is None else nodes.append(na))
        if not bad:
            return Allocation(ctx.job.id, tuple(nodes))
        elig = elig.copy()
        elig[bad] = False
        new = select_nodes(cyc.ix, free, ctx.shape, elig, ctx.max_leaves(now))
        if new is None:
            return None
        pick = new
    return None


def _record_start(
    cyc: Cycle, ctx: JobContext, part: Partition, alloc: Allocation, pick: Pick, backfilled: bool
) -> None:
    job, now = ctx.job, cyc.snap.now
    cyc.usage.allocate(alloc)
    cyc.limits.add(job, alloc.gpu_count)
    end = now + ctx.shape.time_limit
    cyc.started.append((alloc, end))
    if cyc.deps is not None:
        cyc.deps.running_names.add((job.user, job.request.name))
    switches = job.request.switches
    cyc.decisions.starts.append(
        Start(
            job_id=job.id,
            alloc=alloc,
            partition=part.name,
            backfilled=backfilled,
            switches_satisfied=switches is None or pick.leaves <= switches,
            leaf_switches=pick.leaves,
        )
    )
    cyc.decisions.pending.pop(job.id, None)


# --- 4. backfill ---------------------------------------------------------------


def _backfill_pass(cyc: Cycle, order: list[int], easy: bool) -> None:
    snap, cfg = cyc.snap, cyc.snap.config
    running = [(r.alloc, max(r.end, snap.now)) for r in snap.running] + cyc.started
    plan = Plan.build(cyc.ix, cyc.usage, running, snap.now)
    if cfg.will_run_batches:
        plan.batch_epoch = cfg.epoch
    _add_reservation_holds(cyc, plan)
    started_ids = {s.job_id for s in cyc.decisions.starts}
    tested, reserved = 0, False
    horizon = snap.now + cfg.bf_window
    # Within a pass capacity only shrinks: once a shape failed to start now
    # with some time limit, the same shape with a limit at least as long
    # fails too (the test pyss and Slurm's backfill also skip).
    failed: dict[tuple, float] = {}
    for i in order:
        if tested >= cfg.bf_max_job_test:
            break
        job = snap.pending[i]
        if job.id in started_ids:
            continue
        ctx = _ready(cyc, job)
        if ctx is None:
            continue
        tested += 1
        key = _shape_key(ctx)
        if ctx.shape.time_limit < failed.get(key, INF) and _try_start_now(
            cyc, ctx, plan, backfilled=True
        ):
            _hold_started(cyc, plan)
            continue
        failed[key] = min(failed.get(key, INF), ctx.shape.time_limit)
        cyc.decisions.pending[job.id] = PendingInfo(Reason.RESOURCES)
        if not (easy and reserved):
            reserved |= _reserve(cyc, ctx, plan, horizon)
        _blocked_reason(cyc, job.id)


def _shape_key(ctx: JobContext) -> tuple:
    """Jobs with equal keys compete for exactly the same nodes and amounts."""
    req = ctx.job.request
    return (
        ctx.shape,
        tuple(p.name for p in ctx.parts),
        req.constraint,
        req.nodelist,
        req.exclude,
        req.reservation,
        ctx.max_leaves(0.0) is not None,
    )


def _hold_started(cyc: Cycle, plan: Plan) -> None:
    """A job started by backfill joins the plan's running jobs until its limit."""
    alloc, end = cyc.started[-1]
    plan.start(alloc, end)


def _add_reservation_holds(cyc: Cycle, plan: Plan) -> None:
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
    from tide.sched.shape import Shape

    shape = Shape(1, cyc.ix.n, 0, gpus, True, 1, 0, 0, 0, False, "", False, int(end - start))
    t = max(start, cyc.snap.now)
    pick = select_nodes(cyc.ix, plan.free_at(t, end - t), shape, cyc.usage.usable)
    for p in pick.nodes if pick else ():
        plan.holds.add(p.node, start, end, p.gpus, 0, 0, False, tag)


def _reserve(cyc: Cycle, ctx: JobContext, plan: Plan, horizon: float) -> bool:
    """Find the job's earliest start in the plan and hold its nodes then."""
    shape = ctx.shape
    res = cyc.snap.config.bf_resolution
    for eligible in ctx.eligible:
        times, ready = plan.reservation_candidates(shape, eligible, ctx.reservation, horizon, res)
        late_first = -ready  # nodes free sooner stay open for backfill
        for t in times:
            if shape.spread:
                free = plan.free_at(t, shape.time_limit, skip=ctx.reservation)
                pick = select_nodes(cyc.ix, free, shape, eligible, ctx.max_leaves(t), late_first)
            else:
                cap = plan.fit_at(t, shape, eligible, ready, ctx.reservation)
                pick = select_by_capacity(cyc.ix, cap, shape, ctx.max_leaves(t), late_first)
            if pick is None:
                continue
            for p in pick.nodes:  # node-granular, like Slurm's backfill map
                plan.hold(p.node, t, t + shape.time_limit)
            nodes = tuple(p.node for p in pick.nodes)
            cyc.decisions.pending[ctx.job.id] = PendingInfo(Reason.RESOURCES, t, nodes)
            return True
    return False
