"""Eligibility: which nodes a job may use and why it may not run at all.

A JobContext is built once per job per cycle: its partitions (in the order
given with --partition), its shape, the mask of nodes it may use in each
partition (partition nodes, node state, --constraint, GPU type, --nodelist,
--exclude, --reservation) and a reason when no waiting can help.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tide.model import Job, Partition, Reservation
from tide.sched.index import ClusterIndex
from tide.sched.limits import LimitChecker, partition_reason
from tide.sched.shape import Shape, shape_of, time_limit
from tide.sched.state import Usage
from tide.sched.types import Reason, Snapshot


@dataclass(slots=True)
class JobContext:
    job: Job
    parts: list[Partition]
    eligible: list[np.ndarray]  # aligned with parts
    shape: Shape
    reason: Reason | None = None
    reservation: str | None = None  # the advance reservation it runs in
    switch_deadline: float | None = None  # --switches stops binding after this

    def max_leaves(self, t: float) -> int | None:
        wanted = self.job.request.switches
        if wanted is None:
            return None
        if self.switch_deadline is not None and t >= self.switch_deadline:
            return None
        return wanted


def quick_reason(job: Job, now: float) -> Reason | None:
    """Reasons that need nothing but the job itself."""
    if job.held == "admin" or (job.held and job.held != "user"):
        return Reason.JOB_HELD_ADMIN
    if job.held == "user" or job.request.hold:
        return Reason.JOB_HELD_USER
    if job.request.begin is not None and job.request.begin > now:
        return Reason.BEGIN_TIME
    return None


def build_context(
    job: Job,
    snap: Snapshot,
    ix: ClusterIndex,
    usage: Usage,
    limits: LimitChecker,
    shared: dict[tuple, JobContext] | None = None,
) -> JobContext | None:
    """The job's context. `shared` (kept by the caller for one cycle) lets
    jobs asking for the same thing share node masks and partition checks."""
    req = job.request
    names = [job.partition] if job.partition else list(req.partitions)
    if not names:
        default = snap.cluster.default_partition()
        names = [default.name] if default else []
    parts = [snap.cluster.partition(n) for n in names]
    first = next((p for p in parts if p is not None), None)
    shape = shape_of(req, time_limit(job, first))
    user = job.user if req.reservation else ""  # reservations admit by user
    key = (
        tuple(names),
        shape,
        job.account,
        job.qos,
        user,
        req.constraint,
        req.nodelist,
        req.exclude,
        req.reservation,
    )
    base = shared.get(key) if shared is not None else None
    if base is None:
        base = _base_context(job, parts, shape, snap, ix, usage)
        if shared is not None:
            shared[key] = base
    ctx = JobContext(job, base.parts, base.eligible, shape, base.reason, base.reservation)
    if ctx.reason is None:
        ctx.reason = limits.static_reason(job, shape)
    ctx.switch_deadline = switch_deadline(job, snap.now, snap.config.max_switch_wait)
    return ctx


def switch_deadline(job: Job, now: float, max_switch_wait: float) -> float | None:
    """When --switches stops binding: its wait (or max_switch_wait) after the
    job became eligible (`now` if it is not yet)."""
    req = job.request
    if req.switches is None:
        return None
    since = job.eligible if job.eligible is not None else now
    return since + (req.switches_wait if req.switches_wait is not None else max_switch_wait)


def _base_context(
    job: Job,
    parts: list[Partition | None],
    shape: Shape,
    snap: Snapshot,
    ix: ClusterIndex,
    usage: Usage,
) -> JobContext:
    """Partitions, node masks and the reasons that depend on the request only."""
    ctx = JobContext(job, [], [], shape)
    reasons: list[Reason] = []
    for part in parts:
        reason = partition_reason(job, part, shape, _size(ix, part))
        if reason is not None:
            reasons.append(reason)
            continue
        assert part is not None
        ctx.parts.append(part)
        ctx.eligible.append(ix.partition_masks[part.name] & usage.usable)
    if not ctx.parts:
        ctx.reason = reasons[0] if reasons else Reason.BAD_CONSTRAINTS
        return ctx
    ctx.reason = _narrow(ctx, snap, ix, usage)
    return ctx


def _size(ix: ClusterIndex, part: Partition | None) -> int:
    if part is None:
        return 0
    mask = ix.partition_masks.get(part.name)
    return int(mask.sum()) if mask is not None else 0


def _narrow(ctx: JobContext, snap: Snapshot, ix: ClusterIndex, usage: Usage) -> Reason | None:
    """Apply node filters to every partition mask; a reason if nothing is left."""
    req = ctx.job.request
    static = np.ones(ix.n, dtype=bool)
    if req.constraint:
        feat = _features(req.constraint, ix)
        if feat is None:
            return Reason.BAD_CONSTRAINTS
        static &= feat
    if ctx.shape.gpu_type:
        static &= ix.type_masks.get(ctx.shape.gpu_type, np.zeros(ix.n, dtype=bool))
    if req.exclude:
        static &= ~ix.mask_of(req.exclude)
    if req.nodelist:
        wanted = ix.mask_of(req.nodelist)
        if (wanted & ~usage.usable).any():
            return Reason.REQ_NODE_NOT_AVAIL
        static &= wanted
    per_node = ctx.shape.gpus_per_node if not ctx.shape.spread else 1
    static &= ix.gpus >= per_node
    if req.reservation:
        reason = _reservation(ctx, snap)
        if reason is not None:
            return reason
        res = _resv(snap, req.reservation)
        if res is not None and res.nodes:
            static &= ix.mask_of(res.nodes)
    ctx.eligible = [m & static for m in ctx.eligible]
    if not any(
        int((static & ix.partition_masks[p.name]).sum()) >= _min_nodes(ctx) for p in ctx.parts
    ):
        return Reason.BAD_CONSTRAINTS
    return None


def _min_nodes(ctx: JobContext) -> int:
    s = ctx.shape
    return s.nodes_min if not s.spread else 1


def _resv(snap: Snapshot, name: str) -> Reservation | None:
    return next((r for r in snap.reservations if r.name == name), None)


def _reservation(ctx: JobContext, snap: Snapshot) -> Reason | None:
    res = _resv(snap, ctx.job.request.reservation)
    if res is None or not res.admits(ctx.job.user, ctx.job.account):
        return Reason.RESERVATION
    if snap.now < res.start or snap.now >= res.end:
        return Reason.RESERVATION
    ctx.reservation = res.name
    return None


def _features(expr: str, ix: ClusterIndex) -> np.ndarray | None:
    """Slurm --constraint: '&' (or ',') AND, '|' OR; brackets ignored."""
    expr = expr.replace("[", "").replace("]", "").replace(",", "&")
    result = np.zeros(ix.n, dtype=bool)
    for alternative in expr.split("|"):
        term = np.ones(ix.n, dtype=bool)
        for feat in alternative.split("&"):
            feat = feat.strip().split("*")[0]
            mask = ix.feature_masks.get(feat)
            if mask is None:
                term &= False
            else:
                term &= mask
        result |= term
    return result if result.any() else None
