"""The cycle's passes: priority order, main pass, borrow pass, backfill. Pure.

Each is a public function over a `Cycle` (tide.sched.cycle documents its
state and the order of the phases); policies compose them.

- `priorities`: indices into snap.pending in evaluation order (multifactor,
  FCFS or SJF as configured); records the priorities in the decisions.
- `main_pass`: jobs in order start where they fit now; the first job that
  does not fit blocks its partition, the rest of it waits (Priority). With
  preemption configured, a blocked job may choose victims
  (tide.sched.preempt); a job waiting for lent quota may reclaim it. Ends
  with `borrow_pass`.
- `borrow_pass`: jobs the main pass deferred because they would borrow quota
  start lowest weighted share first (tide.sched.quota).
- `backfill_pass`: jobs in order, up to bf_max_job_test: start now if that
  delays no hold, else get a hold at their earliest start (conservative:
  every job; EASY: only the first that cannot start).
- `try_start_now` / `blocked_reason`: the two steps every pass shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace
from operator import attrgetter

import numpy as np

from tide.model import Job, Partition
from tide.model.sched_config import QueueOrder
from tide.sched import preempt
from tide.sched.cycle import Cycle, add_reservation_holds, context, ready
from tide.sched.eligibility import JobContext, quick_reason
from tide.sched.placement import Free, Pick, concrete, select_nodes
from tide.sched.plan import INF, Plan
from tide.sched.priority import compute_priorities, order_top, order_tops, priority_order
from tide.sched.priority_one import job_priority
from tide.sched.quota import share_with
from tide.sched.releases import kept_plan
from tide.sched.reserve import Found, compiled, earliest, reserve_c
from tide.sched.shape import Shape, time_limit
from tide.sched.types import Allocation, NodeAlloc, PendingInfo, Reason, Start

_PRIORITY = PendingInfo(Reason.PRIORITY)
# the kept order takes any delta of at most this many jobs (a full sort costs
# more than a few bisections however small the queue)
_FEW_MOVED = 64
FEW = 8  # new jobs whose priorities are computed one by one (priority_one)
_ID, _SUBMIT = attrgetter("id"), attrgetter("submit")


# --- 2. priority ---------------------------------------------------------------


def priorities(cyc: Cycle) -> Sequence[int]:
    """Indices into snap.pending in evaluation order. With the kept order (a
    driver that says what changed, Snapshot.pending_delta) the cycle's
    snapshot gets the same pending jobs already in that order, and the
    indices are range(n): nothing per pending job is done."""
    snap = cyc.snap
    jobs = snap.pending
    cfg = snap.config
    if not jobs:
        _follow_empty(cyc)
        return []
    if cfg.order is QueueOrder.FCFS:
        return sorted(range(len(jobs)), key=lambda i: (jobs[i].submit, jobs[i].id))
    if cfg.order is QueueOrder.SJF:
        return sorted(
            range(len(jobs)), key=lambda i: (_limit(cyc, jobs[i]), jobs[i].submit, jobs[i].id)
        )
    at = snap.now if snap.priority_time is None else snap.priority_time
    kept = cyc.memo.priorities(snap, at)
    order: Sequence[int]
    if _kept_order(cyc, kept, at):
        # the kept list itself, not a copy (a copy is O(pending) a cycle): phases
        # never modify the snapshot, and it changes only in the next cycle's update
        if not (snap.shortcuts and _same_few(jobs, cyc.memo.order.jobs)):
            cyc.snap = replace(snap, pending=cyc.memo.order.jobs)
        order = range(len(jobs))
    else:
        order = _sorted_order(cyc, kept, at)
    if not snap.starts_only:  # the driver reads them (the live server shows them)
        cyc.decisions.priorities = {j.id: kept[j.id][1] for j in jobs}
    return order


def _same_few(jobs: Sequence[Job], kept: Sequence[Job]) -> bool:
    """A few pending jobs already in the kept order (one new job on an empty
    queue): the snapshot needs no copy with them reordered."""
    return len(jobs) <= FEW and all(a is b for a, b in zip(jobs, kept, strict=True))


def _sorted_order(cyc: Cycle, kept: dict[int, tuple], at: float) -> list[int]:
    """Every pending job's priority checked against the memo, and all sorted;
    the memo's kept order is reset to it when the driver tracks changes."""
    jobs = cyc.snap.pending
    _rekey(cyc, jobs, kept, at)
    n = len(jobs)
    total = np.fromiter((kept[j.id][1] for j in jobs), np.float64, n)
    tier = np.fromiter((kept[j.id][2] for j in jobs), np.int64, n)
    ids = np.fromiter(map(_ID, jobs), np.int64, n)
    submit = np.fromiter(map(_SUBMIT, jobs), np.float64, n)
    order = priority_order(tier, total, submit, ids).tolist()
    delta, memo_order = cyc.snap.pending_delta, cyc.memo.order
    if delta is None:
        memo_order.clear()
    else:
        tops = order_tops(tier, total).tolist()
        memo_order.reset(
            [(tops[i], jobs[i].submit, jobs[i].id) for i in order], [jobs[i] for i in order]
        )
        memo_order.gen = delta.gen
    return order


def _kept_order(cyc: Cycle, kept: dict[int, tuple], at: float) -> bool:
    """Whether the memo's kept order, updated with the jobs gone and those the
    driver says changed (Snapshot.pending_delta), holds the pending jobs: the
    cost follows the changes, not the queue. False when it cannot be used (no
    delta, or not the one that follows the kept order, or a pending job it
    does not hold: the driver left one out), or when so much changed that
    sorting all again costs less (each change moves up to the whole list)."""
    delta, memo_order = cyc.snap.pending_delta, cyc.memo.order
    if delta is None or memo_order.gen is None or memo_order.gen != delta.since:
        return False
    moved = len(delta.changed) + len(delta.gone)
    if moved > _FEW_MOVED and moved > len(cyc.snap.pending) // 4:
        return False
    memo_order.gen = None  # until updated whole
    for jid in delta.gone:
        memo_order.remove(jid)
    changed = list(delta.changed)
    _rekey(cyc, changed, kept, at)
    for job in changed:
        row = kept[job.id]
        memo_order.put((order_top(row[2], row[1]), job.submit, job.id), job)
    if len(memo_order) != len(cyc.snap.pending):
        return False
    memo_order.gen = delta.gen
    return True


def _follow_empty(cyc: Cycle) -> None:
    """An empty queue: the kept order follows the driver's delta (else an
    empty queue now and then, common without a backlog, would send the next
    cycle to the full sort)."""
    delta, memo_order = cyc.snap.pending_delta, cyc.memo.order
    memo_order.clear()
    if delta is not None:
        memo_order.gen = delta.gen


def _rekey(cyc: Cycle, jobs: Sequence[Job], kept: dict[int, tuple], at: float) -> None:
    """The priorities of those `jobs` whose key is not the one kept."""
    snap, cfg = cyc.snap, cyc.snap.config
    rows = [(j, k, kept.get(j.id)) for j, k in zip(jobs, map(_priority_key, jobs), strict=True)]
    new = [(j, k) for j, k, row in rows if row is None or row[0] != k]
    if new and snap.shortcuts and len(new) <= FEW:  # numpy's fixed cost would dominate
        basis = cyc.memo.priority_basis(snap)
        for j, k in new:
            kept[j.id] = (k, *job_priority(j, basis, at))
    elif new:  # a job's priority depends on itself and on what the memo keys on, only
        fs = cyc.memo.fair_share(snap) if cfg.weights.fairshare else {}
        part = cyc.partitions
        res = compute_priorities([j for j, _ in new], snap.cluster, cfg, snap.accounts, fs, at,
                                 part)  # type: ignore[arg-type]  # fmt: skip
        for (j, k), total, tier in zip(new, res.total.tolist(), res.tier.tolist(), strict=True):
            kept[j.id] = (k, total, tier)


def _priority_key(job: Job) -> tuple:
    """What a job's own priority reads of it (its request by identity, as the memo)."""
    return (job.request, job.partition, job.qos, job.account, job.user, job.held,
            job.priority_override, job.site_factor, job.submit, job.eligible)  # fmt: skip


def _limit(cyc: Cycle, job: Job) -> int:
    cluster = cyc.snap.cluster
    return time_limit(job, cluster.partition(job.partition) or cluster.default_partition())


# --- 3. main pass --------------------------------------------------------------


def main_pass(cyc: Cycle, order: Sequence[int]) -> None:
    """Jobs in `order` start where they fit now, until their partitions block;
    then the borrow pass."""
    blocked: set[str] = set()
    pending = cyc.snap.pending
    default = cyc.snap.cluster.default_partition()
    default_name = default.name if default else ""
    every = {p.name for p in cyc.snap.cluster.partitions}
    preempting = cyc.snap.config.preempt_type not in ("", "preempt/none")
    if cyc.limits.quota is not None:  # borrowers wait for the borrow pass
        cyc.limits.quota.borrowing_open = False
    for k, i in enumerate(order):
        if every and every <= blocked:
            # every partition waits behind a blocked job: nothing else can start now
            # (their reasons: only for a driver that reads them, Snapshot.starts_only)
            if not cyc.snap.starts_only:
                _behind(cyc, [pending[j] for j in order[k:]])
            break
        job = pending[i]
        if job.array_job_id is not None and cyc.snap.config.array_tasks_by_backfill:
            cyc.decisions.pending[job.id] = _PRIORITY  # for the backfill pass
            continue
        if blocked and _behind_blocked(job, blocked, default_name) and (
            not _may_have_cheap_reason(job) or _cheap_reason(cyc, job) is None
        ):
            cyc.decisions.pending[job.id] = _PRIORITY  # behind a blocked job
            continue
        ctx = ready(cyc, job)
        if ctx is None:
            if cyc.limits.quota is not None:  # waits for lent quota: reclaim it
                preempt.plan_reclaim(cyc, job)
            continue
        if all(p.name in blocked for p in ctx.parts):
            cyc.decisions.pending[job.id] = _PRIORITY
            continue
        started = try_start_now(cyc, ctx, plan=cyc.resv, backfilled=False)
        if not started:
            blocked.update(p.name for p in ctx.parts)
            blocked.update(_covered(cyc, blocked))
            blocked_reason(cyc, ctx.job.id)
            if preempting:
                preempt.plan_preemption(cyc, ctx)
    borrow_pass(cyc, blocked)


def _behind_blocked(job: Job, blocked: set[str], default_name: str) -> bool:
    """Whether every partition the job may run in is blocked this pass."""
    if job.partition:
        return job.partition in blocked
    names = job.request.partitions
    if not names:
        return default_name in blocked
    return all(n in blocked for n in names)


def _may_have_cheap_reason(job: Job) -> bool:
    """False when `_cheap_reason` is None for sure (the common case, checked fast)."""
    req = job.request
    return bool(job.held or req.hold or req.begin is not None or job.array_job_id is not None)


def _covered(cyc: Cycle, blocked: set[str]) -> set[str]:
    """Partitions all of whose nodes lie in blocked partitions: Slurm's main pass takes a
    blocked job's partition nodes out of everyone's reach for the rest of the pass
    (job_scheduler.c, bit_and_not(avail_node_bitmap, part_ptr->node_bitmap)), so a job
    in an overlapping partition cannot take the nodes the blocked job waits for."""
    parts = cyc.snap.cluster.partitions
    gone = {n for p in parts if p.name in blocked for n in p.nodes}
    return {p.name for p in parts if p.nodes and set(p.nodes) <= gone}


def _behind(cyc: Cycle, jobs: list[Job]) -> None:
    """Jobs queued behind blocked partitions: Priority, unless held or
    waiting for their begin time (the cheap reasons; the rest waits for the
    cycle that examines them, as in Slurm)."""
    out = cyc.decisions.pending
    out.update(dict.fromkeys([job.id for job in jobs], _PRIORITY))
    for job in jobs:
        req = job.request
        if job.held or req.hold or req.begin is not None or job.array_job_id is not None:
            reason = _cheap_reason(cyc, job)
            if reason is not None:
                out[job.id] = PendingInfo(reason)


def _cheap_reason(cyc: Cycle, job: Job) -> Reason | None:
    """The reasons Slurm gives a pending job before its turn: holds, begin time,
    and an array's running-task limit."""
    return quick_reason(job, cyc.snap.now) or cyc.limits.array_reason(job)


def borrow_pass(cyc: Cycle, blocked: set[str]) -> None:
    """After the main pass: the jobs it deferred because they would borrow try
    to start, lowest weighted share first (recomputed after every start)."""
    ledger = cyc.limits.quota
    if ledger is None:
        return
    ledger.borrowing_open = True
    jobs = {j.id: j for j in cyc.snap.pending}
    waiting = [jobs[i] for i in dict.fromkeys(ledger.deferred) if i in jobs]
    ledger.deferred.clear()
    while waiting:
        job = min(waiting, key=lambda j: (share_with(ledger, j), waiting.index(j)))
        waiting.remove(job)
        ctx = cyc.contexts.get(job.id)
        if ctx is None or any(p.name in blocked for p in ctx.parts):
            continue
        reason = cyc.limits.reason(job, ctx.shape.gpus)
        if reason is not None:  # another borrower took what was left
            cyc.decisions.pending[job.id] = PendingInfo(reason)
            continue
        cyc.decisions.pending.pop(job.id, None)
        if not try_start_now(cyc, ctx, plan=cyc.resv, backfilled=False):
            blocked_reason(cyc, job.id)


def try_start_now(cyc: Cycle, ctx: JobContext, plan: Plan | None, backfilled: bool) -> bool:
    """Start the job now if it fits (and delays no hold in `plan`). Records the
    start, or Resources as its pending reason."""
    now = cyc.snap.now
    u = cyc.usage
    bare = Free(u.free_gpus, u.free_cores, u.free_mem)
    for part, eligible in zip(ctx.parts, ctx.eligible, strict=True):
        # holds only take capacity away: what does not fit without them never fits
        first = select_nodes(cyc.ix, bare, ctx.shape, eligible, ctx.max_leaves(now))
        if first is None:
            continue
        free = _free_now(cyc, ctx, plan, bare)
        order = cyc.order_for(free, ctx.shape) if cyc.order_for is not None else None
        if free is bare and order is None:  # the same call: the same pick
            pick: Pick | None = first
        else:
            pick = select_nodes(cyc.ix, free, ctx.shape, eligible, ctx.max_leaves(now), order)
        if pick is None:
            continue
        alloc = _concrete(cyc, ctx, pick, eligible, free, now, order)
        if alloc is None:
            continue
        _record_start(cyc, ctx, part, alloc, pick, backfilled)
        return True
    # Slurm shows Resources also while a job waits for its --switches count
    cyc.decisions.pending[ctx.job.id] = PendingInfo(Reason.RESOURCES)
    return False


def blocked_reason(cyc: Cycle, job_id: int) -> None:
    """The highest-priority blocked job waits for Resources, the rest for Priority."""
    info = cyc.decisions.pending[job_id]
    if cyc.resources_job is None:
        cyc.resources_job = job_id
    elif cyc.resources_job != job_id:
        cyc.decisions.pending[job_id] = PendingInfo(
            Reason.PRIORITY, info.planned_start, info.planned_nodes
        )


def _free_now(cyc: Cycle, ctx: JobContext, plan: Plan | None, bare: Free | None = None) -> Free:
    """What the job may take now: free resources less the plan's holds
    (`bare`, the cycle's free resources, when there is no hold)."""
    if plan is not None and len(plan.holds):
        return plan.free_at(cyc.snap.now, ctx.shape.time_limit, skip=ctx.reservation)
    if bare is not None:
        return bare
    u = cyc.usage
    return Free(u.free_gpus, u.free_cores, u.free_mem)


def _concrete(
    cyc: Cycle,
    ctx: JobContext,
    pick: Pick,
    eligible: np.ndarray,
    free: Free,
    now: float,
    order: np.ndarray | None = None,
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
        new = select_nodes(cyc.ix, free, ctx.shape, elig, ctx.max_leaves(now), order)
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


def backfill_pass(
    cyc: Cycle, order: Sequence[int], easy: bool, protected: frozenset[int] = frozenset()
) -> None:
    """Jobs in `order` start now where that delays no hold; the others are
    held at their earliest start (EASY: only the first of them, and every
    job whose id is in `protected`)."""
    snap, cfg = cyc.snap, cyc.snap.config
    plan = _plan(cyc)
    if cfg.will_run_batches:
        plan.batch_epoch = cfg.epoch
    add_reservation_holds(cyc, plan)
    started_ids = {s.job_id for s in cyc.decisions.starts}
    tested, reserved = 0, False
    horizon = snap.now + cfg.bf_window
    # Within a pass capacity only shrinks: once a shape failed to start now
    # with some time limit, the same shape with a limit at least as long
    # fails too (the test pyss and Slurm's backfill also skip).
    failed: dict[tuple, float] = {}
    completing: set[tuple] = set()  # (key, limit) of jobs that would take completing nodes
    closed = _Closed(cyc, plan, order) if snap.starts_only else None
    cg = snap.completing if cfg.will_run_batches else ()
    for k, i in enumerate(order):
        if tested >= cfg.bf_max_job_test:
            break
        job = snap.pending[i]
        if job.id in started_ids:
            continue
        if closed is not None and closed.check():
            _ready_rest(cyc, order[k:], started_ids, tested)
            break
        ctx = ready(cyc, job)
        if ctx is None:
            continue
        tested += 1
        key = _shape_key(ctx, snap.now)
        place = cyc.preempt_places.get(job.id)
        if place is not None:
            # Slurm's backfill finds a preemptor startable now (will-run with its
            # preemptees gone); when _start_job cannot start it (victims still
            # going), it reserves that place from now ('Drop through and reserve')
            for node in place:
                plan.hold(node, snap.now, snap.now + ctx.shape.time_limit)
            blocked_reason(cyc, job.id)
            continue
        limit = ctx.shape.time_limit
        holds = not (easy and reserved) or job.id in protected  # (protected: a large job)
        held = len(plan.holds)
        early = _early(cyc, ctx, plan, horizon) if holds else None
        if cg and _picks_completing(cyc, ctx, plan, cg):
            cyc.decisions.pending[job.id] = PendingInfo(Reason.RESOURCES)
            completing.add((key, limit))  # not a lack of room: skips this limit only
        elif (key, limit) in completing:
            pass
        elif (
            limit < failed.get(key, INF)
            and (early is None or early.now)
            and try_start_now(cyc, ctx, plan, backfilled=True)
        ):
            _hold_started(cyc, plan)
            if closed is not None:
                closed.changed = True
            continue
        else:
            failed[key] = min(failed.get(key, INF), limit)
        cyc.decisions.pending[job.id] = PendingInfo(Reason.RESOURCES)
        if holds:
            found = _reserve(cyc, ctx, plan, horizon, early)
            reserved |= found is not None
            if closed is not None and found is not None:
                closed.reserved(held, found[0], found[0] + limit, found[1])
        blocked_reason(cyc, job.id)


def _plan(cyc: Cycle) -> Plan:
    """The pass's plan of the running jobs (those started this cycle too):
    from the release table kept between passes where the driver keeps its
    running views (it says so by giving their delta, Snapshot.running_delta;
    the twin's `deltas` switch turns both off), else built whole."""
    snap = cyc.snap
    if snap.running_delta is not None:
        table = cyc.memo.releases(cyc.ix.n)
        if table.update(snap.running):
            return kept_plan(cyc.ix, cyc.usage, table, cyc.started, snap.now)
    running = [(r.alloc, max(r.end, snap.now)) for r in snap.running] + cyc.started
    return Plan.build(cyc.ix, cyc.usage, running, snap.now)


def _picks_completing(cyc: Cycle, ctx: JobContext, plan: Plan, cg: tuple[Allocation, ...]) -> bool:
    """Slurm's backfill places a job with the nodes of completing jobs counted
    free (its avail_bitmap keeps them); when the place it picks holds one, the
    job does not start now but a second later (backfill.c: 'Need to wait for
    in-progress completion/epilog'), so it waits for that node even where
    another one is free now."""
    free = _free_now(cyc, ctx, plan)
    gpus, cores, mem = free.gpus.copy(), free.cores.copy(), free.mem.copy()
    nodes = set()
    for a in cg:
        for na in a.nodes:
            gpus[na.node] += len(na.gpus)
            cores[na.node] += len(na.cores)
            mem[na.node] += na.mem
            nodes.add(na.node)
    now = cyc.snap.now
    for eligible in ctx.eligible:
        pick = select_nodes(cyc.ix, Free(gpus, cores, mem), ctx.shape, eligible,
                            ctx.max_leaves(now))  # fmt: skip
        if pick is not None:
            return any(p.node in nodes for p in pick.nodes)
    return False


class _Closed:
    """Whether no job left in a backfill pass can start now (Snapshot.starts_only).

    Holds and starts only take capacity away within a pass, so once no usable
    node has, now, both the GPUs of the smallest job and a window before its
    first whole-node hold as long as the shortest limit among the pending
    jobs, none of them can start: the pass stops. A bound, never a guess:
    per-job masks, cores, memory and topology can only rule out more."""

    def __init__(self, cyc: Cycle, plan: Plan, order: Sequence[int]) -> None:
        self.cyc, self.plan, self.changed = cyc, plan, True
        self.min_limit, self.min_gpus = cyc.memo.smallest(cyc, cyc.snap.pending, _needs)
        # nodes a blocking hold covers, from the first `seen` holds (holds are
        # only added within a pass: each is read once)
        self.blocked = np.zeros(cyc.ix.n, dtype=bool)
        self.seen = 0
        # usable nodes with the smallest job's GPUs free now and not blocked,
        # and their count: recomputed after a start (free GPUs only change
        # then), else kept as holds come (most checks follow one reservation)
        self.open = np.zeros(cyc.ix.n, dtype=bool)
        self.n_open = 0
        self.starts = -1  # len(cyc.started) when `open` was computed

    def check(self) -> bool:
        if not self.changed:
            return False
        self.changed = False
        if self.min_limit == INF:
            return True
        self._read_holds()
        if len(self.cyc.started) != self.starts:
            self.starts = len(self.cyc.started)
            self.open = self.cyc.usage.usable & (self.plan.free_gpus >= self.min_gpus)
            self.open &= ~self.blocked
            self.n_open = int(np.count_nonzero(self.open))
        return self.n_open == 0

    def reserved(self, first: int, start: float, end: float, nodes: tuple[int, ...]) -> None:
        """A reservation's holds, added from row `first` on (whole-node,
        untagged, one window): marked from what _reserve found rather than
        read back from the hold columns (numpy scalars: most of a check)."""
        self._read_holds(first)
        now = self.cyc.snap.now
        if end > now and start < now + self.min_limit:
            for node in nodes:
                self._block(node)
        self.seen = first + len(nodes)
        self.changed = True

    def _read_holds(self, upto: int | None = None) -> None:
        """Mark the nodes the holds added since the last check (up to row
        `upto`) block, one by one (a check reads one or a few new holds)."""
        plan = self.plan
        total = len(plan.holds) if upto is None else upto
        if total <= self.seen:
            return
        hn, hs, he, _, _, _, hw, _ = plan.holds.arrays()
        plain = plan.holds.untagged()
        now = self.cyc.snap.now
        until = now + self.min_limit
        for j in range(self.seen, total):
            if hw[j] and plain[j] and he[j] > now and hs[j] < until:
                self._block(int(hn[j]))
        self.seen = total

    def _block(self, node: int) -> None:
        self.blocked[node] = True
        if self.open[node]:
            self.open[node] = False
            self.n_open -= 1


def _needs(cyc: Cycle, job: Job) -> tuple[float, float]:
    """(time limit, GPUs per node) of the smallest start the job could make."""
    ctx = context(cyc, job)
    if ctx is None or ctx.reason is not None:
        return INF, INF
    shape = ctx.shape
    return shape.time_limit, 0 if shape.spread else shape.gpus_per_node


def _ready_rest(cyc: Cycle, rest: Sequence[int], started: set[int], tested: int) -> None:
    """After a pass stopped early: the jobs it did not examine still become
    eligible as a full pass would make them (up to bf_max_job_test), and the
    first of them ready is the one waiting for Resources where none is yet
    (the full pass's blocked_reason; the others' Priority is left out). The
    twin reads that reason: idle GPUs behind a blocked queue head."""
    pending = cyc.snap.pending
    eligible = all(pending[i].eligible is not None for i in rest)
    if eligible and cyc.resources_job is not None:
        return
    for i in rest:
        if tested >= cyc.snap.config.bf_max_job_test:
            return
        job = pending[i]
        if job.id not in started and ready(cyc, job) is not None:
            tested += 1
            if cyc.resources_job is None:
                if job.id not in cyc.preempt_places:  # else: the reason it has
                    cyc.decisions.pending[job.id] = PendingInfo(Reason.RESOURCES)
                cyc.resources_job = job.id
                if eligible:
                    return


# a Shape's fields but its time limit, as one tuple (a key, in C)
_BARE = attrgetter(*[f.name for f in fields(Shape) if f.name != "time_limit"])


def _shape_key(ctx: JobContext, now: float) -> tuple:
    """Jobs with equal keys compete for exactly the same nodes and amounts (the
    leaf switches they may span now included: a job whose --switches wait ran
    out may start where one still waiting cannot)."""
    req = ctx.job.request
    shape = ctx.shape
    # the limit is what the test compares (`failed` keeps the shortest that
    # failed); with binding a node may be dropped and the pick redone, so a
    # smaller capacity might succeed where a larger failed: keyed whole
    bare = shape if shape.enforce_binding or shape.cpus_per_gpu > 0 else _BARE(shape)
    return (
        bare,
        tuple(p.name for p in ctx.parts),
        req.constraint,
        req.nodelist,
        req.exclude,
        req.reservation,
        ctx.max_leaves(now),
    )


def _hold_started(cyc: Cycle, plan: Plan) -> None:
    """A job started by backfill joins the plan's running jobs until its limit."""
    alloc, end = cyc.started[-1]
    plan.start(alloc, end)


class _Early:
    """A job's reservation found before its start test, by the C kernel on its
    one set of eligible nodes, and whether the job may start now: its start
    is now, or the kernel's fit at now in the start test's own terms
    (reserve.reserve_c: ready by releases alone, free_at's hold test) finds
    a place. Every node try_start_now could use is in that fit (its capacity
    after holds is within it, and whether a placement exists only grows with
    the nodes that fit), so where it finds none the job cannot start now and
    the start test (numpy placement, ~70 us) is not run. The plan does not
    change between the two (a failed start test changes nothing). A job that
    may not start is always held (`holds` in backfill_pass), so the kernel
    holds its start itself: `held`. (Not with will-run batches, where
    _picks_completing reads the plan in between: the kernel does not apply
    there.)"""

    __slots__ = ("found", "held", "now")

    def __init__(self, found: Found | None, may_start: bool) -> None:
        self.found = found
        self.now = may_start
        # the kernel held the start found already: a job that may not start now
        # is always held
        self.held = found is not None and not may_start


def _early(cyc: Cycle, ctx: JobContext, plan: Plan, horizon: float) -> _Early | None:
    """The job's reservation ahead of its start test, where the kernel finds it
    (one eligible set, a shape kernel_applies to); None elsewhere."""
    if len(ctx.eligible) != 1 or not compiled(plan, ctx):
        return None
    res = cyc.snap.config.bf_resolution
    req = ctx.job.request
    found, may_start = reserve_c(cyc.ix, plan, ctx.shape, ctx.eligible[0], ctx.reservation,
                                 horizon, res, req.switches, ctx.switch_deadline)  # fmt: skip
    return _Early(found, may_start)


def _reserve(
    cyc: Cycle, ctx: JobContext, plan: Plan, horizon: float, early: _Early | None = None
) -> Found | None:
    """Find the job's earliest start in the plan (or take the one found
    before its start test) and hold its nodes then; returns the start and
    nodes held, None when it found none."""
    res = cyc.snap.config.bf_resolution
    for eligible in ctx.eligible:
        found = early.found if early is not None else earliest(cyc.ix, plan, ctx, eligible,
                                                               horizon, res)  # fmt: skip
        if found is None:
            continue
        t, nodes = found
        end = t + ctx.shape.time_limit
        if early is None or not early.held:
            for node in nodes:  # node-granular, like Slurm's backfill map
                plan.hold(node, t, end)
        cyc.decisions.pending[ctx.job.id] = PendingInfo(Reason.RESOURCES, t, nodes)
        return found
    return None


__all__ = [
    "backfill_pass",
    "blocked_reason",
    "borrow_pass",
    "main_pass",
    "priorities",
    "try_start_now",
]
