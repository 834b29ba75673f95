"""`tide`: the Slurm cycle (tide.sched.cycle, its phases reused as they are)
with these changes, each measured (docs/policies.md; bench/bench_quality.py):

1. Run-time predictions for backfill (tide.sched.predict: learned online as
   in SC'15, or EASY++'s mean of the user's last two runs). The plan trusts
   a predicted run time instead of the time limit, both for running jobs
   (their planned end) and for the jobs it places. A running job that
   outlives its prediction is corrected (`correction`: planned to its limit,
   doubled, or Tsafrir's increments), never killed. Site rules (MaxWall,
   partition MaxTime) still see the real limits, and while an advance
   reservation lies ahead jobs are planned with their limits, so no job can
   start into a maintenance window.
2. Queue order (`order`): "saf" puts the smallest predicted area (run time x
   GPUs, or CPUs on a cluster without GPUs) first; "priority" keeps the
   site's. Protected jobs come before all others, in the site's priority
   order: a job that waited `aged` seconds (24 h), and a large job (at least
   `big` of the cluster's GPUs: whole-job protection), so the first blocked
   protected job holds the EASY reservation and no stream of small jobs
   starves it.
3. Shortest predicted job first among the jobs behind the first one the main
   pass left blocked on resources (SJBF in EASY++); the blocked job keeps its
   place and its reservation.
4. Backfill at every cycle (the core is fast enough), not every bf_interval;
   exact reservation times (no bf_resolution rounding, no will-run batches).
5. Optional promises (`promises`): once a pending job's predicted start has
   passed, plan with limits until it starts.
6. Guard (`guard_big`): plan the cycle with limits while a job of the
   whole cluster waits (a number: that share of the cluster; True: `big`;
   False: never), and (`guard_nodes`) while a large job of whole multi-GPU
   nodes waits.
Placement (`placement`): "bestfit" is the core's topology-aware best fit
(fewest free GPUs that suffice), which keeps large contiguous sets free;
"fgd" orders the nodes for a job started now by FGD's fragmentation change
(tide.sched.frag) for the mix of jobs the cluster sees (pending and
running), best fit breaking ties; reservations are placed as before.
Steering (`steer`, off in the fixed configuration): a job started while
large jobs hold reservations this cycle goes to nodes outside them first
("large"); "all" steers around the first blocked job's reservation too;
"overrun" lets a job whose limit ends before a reservation fill that gap
first and keeps off reserved nodes only the jobs that could overrun into
them (`_steer_clear`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from tide.model import Job
from tide.model.sched_config import BackfillMode
from tide.sched.cycle import LOST_WORK, Cycle, CycleMemo, close_cycle, context, open_cycle
from tide.sched.eligibility import JobContext
from tide.sched.frag import MILLI, PLACEMENTS, TaskMix, whole_gpu_order
from tide.sched.index import ClusterIndex
from tide.sched.limits import gpu_limit
from tide.sched.passes import backfill_pass, main_pass, priorities
from tide.sched.placement import Free
from tide.sched.policies.base import Capabilities
from tide.sched.predict import Correction, corrected
from tide.sched.shape import Shape
from tide.sched.state import Usage
from tide.sched.types import Decisions, Reason, Running, Snapshot

AGED = 24 * 3600.0  # seconds of wait after which a job is protected (site priority order)
BIG = 0.5  # share of the cluster's GPUs from which a job is protected from its submission
# while a job of this share of the cluster waits, the cycle plans with limits
# (a job of the whole cluster starts only once everything drained: any
# overrun of a job backfilled on a prediction would delay it; 0.9 or 0.5
# cost SDSC-SP2 its goal: docs/policies.md)
GUARD = 1.0
# ... and while a large job (`big`) waits that asks for whole nodes of multi-GPU
# nodes (a gang of whole GPU servers, issue 16's training job): on the
# 1-GPU-per-node SWF logs no job does, so their figures are the guard's
# above; a 24-of-40-GPU job's wait on the scaled seed004 stream drops to
# slurm's (docs/policies.md)
GUARD_NODES = True
ORDERS = ("saf", "sjf", "priority")
PREDICTOR = "tsafrir"  # tide.sched.predict.RuntimeModel kind (bench/bench_quality.py)
PROMISE = "tide.promise"  # Job.meta: (first planned start, restarts then)
PROMISE_SLACK = 60.0  # seconds a planned start may slip before limits take over
# jobs started now placed around this cycle's reservations (_steer_clear; True:
# STEER_MODE); measured on the logs and the scaled seed004 stream: docs/policies.md
STEER: bool | str = False
STEER_MODE = "large"
STEER_MODES = ("large", "all", "overrun")


class TidePolicy:
    name = "tide"
    capabilities = Capabilities(predictions=True, idle_quiet=True)

    def __init__(
        self,
        index: ClusterIndex,
        predict: bool = True,
        sjbf: bool = True,
        every_cycle: bool = True,
        aged: float = AGED,
        backfill: BackfillMode = BackfillMode.EASY,  # the configured NONE still wins
        victim_order: str = LOST_WORK,  # preemption victims (docs/preemption.md)
        order: str = "saf",
        big: float = BIG,
        correction: Correction = Correction.REQUESTED,
        promises: bool = False,
        predictor: str = PREDICTOR,
        guard_big: bool | float = GUARD,
        guard_nodes: bool = GUARD_NODES,
        placement: str = "bestfit",
        steer: bool | str = STEER,
    ) -> None:
        if order not in ORDERS:
            raise ValueError(f"tide order {order!r}: choose one of {', '.join(ORDERS)}")
        if isinstance(steer, str) and steer not in STEER_MODES:
            raise ValueError(f"tide steer {steer!r}: choose True, False or one of "
                             f"{', '.join(STEER_MODES)}")  # fmt: skip
        if placement not in PLACEMENTS:
            raise ValueError(f"tide placement {placement!r}: choose one of {', '.join(PLACEMENTS)}")
        self.placement = placement
        self.ix = index
        self.memo = CycleMemo()
        self.victim_order = victim_order
        self.predict = predict
        self.sjbf = sjbf
        self.every_cycle = every_cycle
        self.aged = aged
        self.backfill = backfill
        self.order = order
        self.big = big
        self.correction = correction
        self.promises = promises
        self.guard_big = guard_big
        self.guard_nodes = guard_nodes
        self.steer = steer
        # an empty queue's cycle decides nothing and leaves only caches behind
        # (the planned copies it prunes are rebuilt equal): idle_quiet
        self.capabilities = Capabilities(predictions=predict, predictor=predictor, idle_quiet=True)
        self._copies: dict[int, tuple] = {}  # planned context copies, kept between cycles
        # id(a copy's shape) -> (that shape, the job's real limit), for steering
        self._real: dict[int, tuple[Shape, int]] = {}

    def schedule(self, snap: Snapshot, usage: Usage) -> Decisions:
        if snap.config.will_run_batches or snap.config.bf_resolution != 1:
            # tide plans exact earliest starts (not Slurm's batches, not rounded to
            # bf_resolution): backfilling every cycle against a start rounded up
            # would let the first blocked job's reservation slide forever
            cfg = replace(snap.config, will_run_batches=False, bf_resolution=1)
            snap = replace(snap, config=cfg)
        predict = self.predict and bool(snap.predicted)
        if predict and self.promises and _broken_promise(snap):
            predict = False
        if predict and (self.guard_big or self.guard_nodes) and self._big_waits(snap):
            predict = False  # limits while a large job waits: no overrun delays it
        if predict:
            rule = self.correction
            # its plan is the planned starts of every job (not only starts now)
            snap = replace(snap, running=[_planned(r, snap, rule) for r in snap.running],
                           starts_only=False)  # fmt: skip
        cyc = open_cycle(snap, self.ix, usage, self.memo, self.victim_order)
        if predict and cyc.resv is None:
            _predicted_contexts(cyc, self._copies, self._real)
        if self.placement == "fgd":
            _fragmentation_aware(cyc)  # after the planned contexts: it reads them
        order = list(priorities(cyc))  # indices into cyc.snap.pending (its order may change)
        large: frozenset[int] = frozenset()
        if self.order != "priority":
            order, protected = _queue_order(cyc, order, self.order, self.aged, self._big_gpus())
            large = _hold_caps(cyc, [cyc.snap.pending[i] for i in protected], self._big_gpus())
        if self.steer:
            mode = self.steer if isinstance(self.steer, str) else STEER_MODE
            _steer_clear(cyc, large, self._real, mode)  # wraps order_for
        main_pass(cyc, order)
        mode = BackfillMode.NONE if snap.config.backfill is BackfillMode.NONE else self.backfill
        if (snap.backfill or self.every_cycle) and mode is not BackfillMode.NONE:
            bf_order = _sjbf(cyc, order) if self.sjbf else order
            backfill_pass(cyc, bf_order, easy=mode is BackfillMode.EASY, protected=large)
        if predict and self.promises:
            _promise(cyc)
        return close_cycle(cyc)

    def _big_waits(self, snap: Snapshot) -> bool:
        """Whether a job of `guard_big` (a share of the cluster; True: `big`)
        is waiting, or (`guard_nodes`) a large job (`big`) of whole
        multi-GPU nodes."""
        large = self._big_gpus()
        big = large if self.guard_big is True else math.inf
        if not isinstance(self.guard_big, bool):
            total = float(self.ix.gpus.sum()) or float(self.ix.cores.sum())
            big = self.guard_big * total
        node_gpus = int(self.ix.gpus.max()) if self.guard_nodes and self.ix.n else 0
        for job in snap.pending:
            req = job.request
            if job.eligible is None:
                continue
            gpus = req.total_gpus(req.node_range()[0])
            if gpus >= big:
                return True
            if node_gpus > 1 and gpus >= large and (req.gpus_per_node or 0) >= node_gpus:
                return True
        return False

    def _big_gpus(self) -> float:
        """GPUs (CPUs on a cluster without GPUs) from which a job is protected."""
        total = float(self.ix.gpus.sum()) or float(self.ix.cores.sum())
        return self.big * total if self.big > 0 else math.inf


def _fragmentation_aware(cyc: Cycle) -> None:
    """Start jobs where they fragment the cluster least for the mix of jobs
    it sees now: each running job's share of each node, each pending job's
    (tide.sched.frag). Jobs spread over nodes by a GPU total, and exclusive
    ones, keep best fit."""
    ix = cyc.ix
    if not ix.gpus.any():
        return
    kinds = [(len(na.cores) * int(ix.tpc[na.node]) * 1000, len(na.gpus), MILLI)
             for r in cyc.snap.running for na in r.alloc.nodes]  # fmt: skip
    for job in cyc.snap.pending:
        ctx = cyc.contexts[job.id] if job.id in cyc.contexts else context(cyc, job)
        if ctx is not None and not ctx.shape.spread:
            kinds.append((ctx.shape.cpus_per_node * 1000, ctx.shape.gpus_per_node, MILLI))
    mix = TaskMix.of(kinds)
    if not len(mix):
        return
    tpc = ix.tpc

    def order(free: Free, shape: Shape) -> np.ndarray | None:
        if shape.spread or shape.exclusive:
            return None
        cpus = free.cores * tpc
        return whole_gpu_order(free.gpus, cpus, shape.gpus_per_node, shape.cpus_per_node, mix)

    cyc.order_for = order


def _steer_clear(
    cyc: Cycle, large: frozenset[int], real: dict[int, tuple[Shape, int]], mode: str
) -> None:
    """Order the nodes for a job started now around this cycle's
    reservations, the placement's own order (best fit, or FGD) within each
    group:
    - "large": nodes outside every large job's reservation first;
    - "all": nodes outside every reservation (the first blocked job's too)
      first;
    - "overrun" (every reservation): first the reserved nodes the job
      leaves before their reservation even if it runs to its time limit (it
      fills the gap and leaves the other nodes to longer jobs), then the nodes outside every
      reservation, last the reserved nodes it leaves in time only if it ends
      as predicted (one that outlives its prediction there would delay the
      reservation).
    Backfill's own check (Plan.free_at) still keeps a job off a reserved
    node it would hold past the reservation's start."""
    inner, now = cyc.order_for, cyc.snap.now
    pending = cyc.decisions.pending
    kept: list[object] = [None, None]  # (the reservations seen, each node's first hold)

    def holds() -> np.ndarray | None:
        head = cyc.resources_job
        watch = large if head is None or mode == "large" else large | {head}
        infos = tuple(pending.get(jid) for jid in watch)
        if kept[0] != infos:
            first = None
            for info in infos:
                if info is None or info.planned_start is None or not info.planned_nodes:
                    continue
                if first is None:
                    first = np.full(cyc.ix.n, math.inf)
                at = list(info.planned_nodes)
                first[at] = np.minimum(first[at], info.planned_start)
            kept[0], kept[1] = infos, first
        return kept[1]  # type: ignore[return-value]

    def real_limit(shape: Shape) -> int:
        """The job's own limit: a planned copy's shape has its prediction."""
        got = real.get(id(shape))
        return got[1] if got is not None and got[0] is shape else shape.time_limit

    def order(free: Free, shape: Shape) -> np.ndarray | None:
        base = inner(free, shape) if inner is not None else None
        first = holds()
        if first is None:
            return base
        key = (free.gpus if base is None else base).astype(np.int64)
        span = int(key.max()) - int(key.min()) + 1
        reserved = np.isfinite(first)
        if mode != "overrun":
            return np.where(reserved, key + span, key)
        risky = reserved & (now + real_limit(shape) > first)
        group = np.where(reserved, np.where(risky, 2, 0), 1)
        return key + span * group

    cyc.order_for = order


def _promise(cyc: Cycle) -> None:
    """Remember the first start a prediction-based plan gave each reserved job
    (Decisions.meta: the driver keeps it with the job)."""
    by_id = {j.id: j for j in cyc.snap.pending}
    for jid, info in cyc.decisions.pending.items():
        job = by_id.get(jid)
        if info.planned_start is None or job is None:
            continue
        kept = job.meta.get(PROMISE)
        if not (isinstance(kept, tuple) and kept[1] == job.restarts):
            cyc.decisions.meta[jid] = {PROMISE: (info.planned_start, job.restarts)}


def _broken_promise(snap: Snapshot) -> bool:
    """Whether a pending job's predicted start has passed (by more than
    PROMISE_SLACK): predictions were too short, so this cycle plans with the
    limits, whose reservation no backfilled job can delay."""
    late = snap.now - PROMISE_SLACK
    for job in snap.pending:
        kept = job.meta.get(PROMISE)
        if isinstance(kept, tuple) and kept[1] == job.restarts and late > kept[0]:
            return True
    return False


def _planned(r: Running, snap: Snapshot, rule: Correction) -> Running:
    """The running job as the plan sees it: ending at its predicted time, or,
    once it has outlived the prediction, at the correction's (never past the
    end the driver plans: its limit)."""
    pred = snap.predicted.get(r.job.id)
    if pred is None or pred >= r.end - r.start:
        return r
    end = r.start + corrected(rule, pred, snap.now - r.start, r.end - r.start)
    if end >= r.end:
        return r
    return Running(r.job, r.alloc, r.start, end)


def _predicted_contexts(
    cyc: Cycle, copies: dict[int, tuple], real: dict[int, tuple[Shape, int]]
) -> None:
    """Build every pending job's context with its real limit (site rules), then
    plan it with its predicted run time. `copies` keeps the planned copies
    between cycles: job -> (the shared context it copies, planned limit, copy);
    `real` each copy's shape with the job's real limit (by the shape's id)."""
    snap = cyc.snap
    for job in snap.pending:
        pred = snap.predicted.get(job.id)
        if pred is None or job.id in cyc.contexts:
            continue
        ctx = context(cyc, job)
        if ctx is not None and ctx.reason is None:  # a copy: contexts are shared
            limit = max(1, min(ctx.shape.time_limit, math.ceil(pred)))
            kept = copies.get(job.id)
            if kept is not None and kept[0] is ctx and kept[1] == limit:
                ctx = kept[2]
            else:
                copy = replace(ctx, shape=replace(ctx.shape, time_limit=limit))
                copies[job.id] = (ctx, limit, copy)
                real[id(copy.shape)] = (copy.shape, ctx.shape.time_limit)
                ctx = copy
        cyc.contexts[job.id] = ctx
    if len(copies) > 2 * len(snap.pending) + 64:  # forget jobs that left the queue
        alive = {j.id for j in snap.pending}
        for jid in [j for j in copies if j not in alive]:
            del copies[jid]
    if len(real) > 2 * len(copies) + 64:  # forget shapes of copies no longer kept
        real.clear()
        real.update({id(c[2].shape): (c[2].shape, c[0].shape.time_limit) for c in copies.values()})


def _size(ctx: JobContext | None) -> float:
    """GPUs the job asks for, or its CPUs when it asks for none."""
    if ctx is None:
        return math.inf
    shape = ctx.shape
    return float(shape.gpus or shape.cpus_per_node * shape.nodes_min)


def _planned_limit(cyc: Cycle, job: Job) -> float:
    ctx = cyc.contexts[job.id] if job.id in cyc.contexts else context(cyc, job)
    return float(ctx.shape.time_limit) if ctx is not None else math.inf


def _queue_order(
    cyc: Cycle, order: list[int], key: str, aged: float, big: float
) -> tuple[list[int], list[int]]:
    """Protected jobs (waited `aged` seconds, or at least `big` GPUs) in
    priority order, then the others smallest predicted area first ("saf") or
    shortest predicted run first ("sjf"), priority order breaking ties.
    Returns the order and the protected jobs."""
    pending, now = cyc.snap.pending, cyc.snap.now
    protected: list[tuple[int, float]] = []
    rest: list[tuple[int, float]] = []
    for i in order:
        job = pending[i]
        waited = now - (job.eligible if job.eligible is not None else job.submit)
        ctx = cyc.contexts[job.id] if job.id in cyc.contexts else context(cyc, job)
        size = _size(ctx)
        keep = ctx is not None and (waited >= aged or size >= big)
        (protected if keep else rest).append((i, size))
    rank = {i: k for k, (i, _) in enumerate(rest)}

    def cost(item: tuple[int, float]) -> tuple[float, int]:
        i, size = item
        run = _planned_limit(cyc, pending[i])
        return (run * size if key == "saf" else run, rank[i])

    first = [i for i, _ in protected]
    return first + [i for i, _ in sorted(rest, key=cost)], first


def _hold_caps(cyc: Cycle, protected: list[Job], big: float) -> frozenset[int]:
    """A large protected job that an account's GPU cap (GrpTRES) holds back keeps
    that cap for itself: its GPUs count against the cap for the rest of the
    cycle, so smaller jobs of the account no longer take what it waits for
    and it starts as soon as the account's running jobs have freed enough.
    Returns the large protected jobs (each gets a reservation of its own)."""
    limits = cyc.limits
    large = set()
    for job in protected:
        ctx = cyc.contexts[job.id] if job.id in cyc.contexts else context(cyc, job)
        if ctx is None or ctx.reason is not None:
            continue
        gpus = ctx.shape.gpus
        if gpus < big:
            continue
        large.add(job.id)
        for acct in limits.lineage(job.account):
            cap = gpu_limit(cyc.snap.accounts.accounts[acct].limits)
            if cap is not None and gpus <= cap < limits.count.acct_gpus[acct] + gpus:
                limits.count.acct_gpus[acct] += gpus
    return frozenset(large)


def _sjbf(cyc: Cycle, order: list[int]) -> list[int]:
    """Queue order up to and including the first job the main pass left
    blocked on resources, then the rest shortest planned run first."""
    pending = cyc.snap.pending
    cut = len(order)
    for k, i in enumerate(order):
        info = cyc.decisions.pending.get(pending[i].id)
        if info is not None and info.reason is Reason.RESOURCES:
            cut = k + 1
            break
    head, tail = order[:cut], order[cut:]
    rank = {i: k for k, i in enumerate(tail)}
    return head + sorted(tail, key=lambda i: (_planned_limit(cyc, pending[i]), rank[i]))


__all__ = ["AGED", "BIG", "GUARD", "GUARD_NODES", "ORDERS", "STEER", "TidePolicy"]
