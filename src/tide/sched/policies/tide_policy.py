"""`tide`: the Slurm cycle (tide.sched.cycle, its phases reused as they are)
with three changes, each measured on the bundled demo scenario
(docs/policies.md has the numbers):

1. Run-time prediction for backfill, as EASY++ (Tsafrir, Etsion, Feitelson,
   "Backfilling Using System-Generated Predictions Rather Than User Runtime
   Estimates", IEEE TPDS 2007): the plan trusts a predicted run time instead
   of the time limit, both for running jobs (their planned end) and for the
   jobs it places (how long they hold what they take). The driver makes the
   predictions (Snapshot.predicted; the twin: the mean of the user's last two
   run times, capped by the limit). A running job that outlives its prediction
   is planned to its limit again (EASY++'s correction). Site rules (MaxWall,
   partition MaxTime) still see the real limits, and while an advance
   reservation lies ahead jobs are planned with their limits, so no job can
   start into a maintenance window.
2. Shortest predicted job first among the jobs behind the first one the main
   pass left blocked on resources (SJBF in EASY++): short jobs fill holes
   first. The blocked job keeps its place and its reservation, which bounds
   the wait of the largest jobs exactly as in `slurm`, and a job that has
   waited `aged` seconds (4 h) is no longer overtaken by shorter ones: it
   joins the head in priority order.
3. Backfill at every cycle (the core is fast enough), not every bf_interval.
Placement is the core's: topology-aware best fit (fewest free GPUs that
suffice), which keeps large contiguous sets free.
"""

from __future__ import annotations

import math
from dataclasses import replace

from tide.model.sched_config import BackfillMode
from tide.sched.cycle import LOST_WORK, Cycle, CycleMemo, close_cycle, context, open_cycle
from tide.sched.index import ClusterIndex
from tide.sched.passes import backfill_pass, main_pass, priorities
from tide.sched.policies.base import Capabilities
from tide.sched.state import Usage
from tide.sched.types import Decisions, Reason, Running, Snapshot

AGED = 4 * 3600.0  # seconds of wait after which shorter jobs no longer overtake a job
PROMISE = "tide.promise"  # Job.meta: (first planned start, restarts then)
PROMISE_SLACK = 60.0  # seconds a planned start may slip before limits take over


class TidePolicy:
    name = "tide"
    capabilities = Capabilities(predictions=True)

    def __init__(
        self,
        index: ClusterIndex,
        predict: bool = True,
        sjbf: bool = True,
        every_cycle: bool = True,
        aged: float = AGED,
        backfill: BackfillMode = BackfillMode.EASY,  # the configured NONE still wins
        victim_order: str = LOST_WORK,  # preemption victims (docs/preemption.md)
    ) -> None:
        self.ix = index
        self.memo = CycleMemo()
        self.victim_order = victim_order
        self.predict = predict
        self.sjbf = sjbf
        self.every_cycle = every_cycle
        self.aged = aged
        self.backfill = backfill
        self._copies: dict[int, tuple] = {}  # planned context copies, kept between cycles

    def schedule(self, snap: Snapshot, usage: Usage) -> Decisions:
        if snap.config.will_run_batches or snap.config.bf_resolution != 1:
            # tide plans exact earliest starts (not Slurm's batches, not rounded to
            # bf_resolution): backfilling every cycle against a start rounded up
            # would let the first blocked job's reservation slide forever
            cfg = replace(snap.config, will_run_batches=False, bf_resolution=1)
            snap = replace(snap, config=cfg)
        predict = self.predict and bool(snap.predicted) and not _broken_promise(snap)
        if predict:  # its promises are the planned starts of every job
            snap = replace(snap, running=[_planned(r, snap) for r in snap.running],
                           starts_only=False)  # fmt: skip
        cyc = open_cycle(snap, self.ix, usage, self.memo, self.victim_order)
        if predict and cyc.resv is None:
            _predicted_contexts(cyc, self._copies)
        order = priorities(cyc)
        main_pass(cyc, order)
        mode = BackfillMode.NONE if snap.config.backfill is BackfillMode.NONE else self.backfill
        if (snap.backfill or self.every_cycle) and mode is not BackfillMode.NONE:
            bf_order = _sjbf(cyc, order, self.aged) if self.sjbf else order
            backfill_pass(cyc, bf_order, easy=mode is BackfillMode.EASY)
        if predict:
            _promise(cyc)
        return close_cycle(cyc)


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


def _planned(r: Running, snap: Snapshot) -> Running:
    """The running job as the plan sees it: ending at its predicted time, or at
    its limit once it has outlived the prediction."""
    pred = snap.predicted.get(r.job.id)
    if pred is None:
        return r
    end = r.start + pred
    if end <= snap.now or end >= r.end:
        return r
    return Running(r.job, r.alloc, r.start, end)


def _predicted_contexts(cyc: Cycle, copies: dict[int, tuple]) -> None:
    """Build every pending job's context with its real limit (site rules), then
    plan it with its predicted run time. `copies` keeps the planned copies
    between cycles: job -> (the shared context it copies, planned limit, copy)."""
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
                ctx = copy
        cyc.contexts[job.id] = ctx
    if len(copies) > 2 * len(snap.pending) + 64:  # forget jobs that left the queue
        alive = {j.id for j in snap.pending}
        for jid in [j for j in copies if j not in alive]:
            del copies[jid]


def _sjbf(cyc: Cycle, order: list[int], aged: float) -> list[int]:
    """Priority order up to and including the first job the main pass left
    blocked on resources, then the jobs that waited `aged` seconds (priority
    order), then the rest shortest planned run first."""
    pending, now = cyc.snap.pending, cyc.snap.now
    cut = len(order)
    for k, i in enumerate(order):
        info = cyc.decisions.pending.get(pending[i].id)
        if info is not None and info.reason is Reason.RESOURCES:
            cut = k + 1
            break
    head, tail = order[:cut], order[cut:]

    def waited(i: int) -> float:
        job = pending[i]
        return now - (job.eligible if job.eligible is not None else job.submit)

    old = [i for i in tail if waited(i) >= aged]
    young = [i for i in tail if waited(i) < aged]
    rank = {i: k for k, i in enumerate(young)}

    def planned(i: int) -> float:
        job = pending[i]
        ctx = cyc.contexts[job.id] if job.id in cyc.contexts else context(cyc, job)
        return float(ctx.shape.time_limit) if ctx is not None else math.inf

    return head + old + sorted(young, key=lambda i: (planned(i), rank[i]))


__all__ = ["AGED", "TidePolicy"]
