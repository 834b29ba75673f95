"""A backfill reservation: a job's earliest start in the plan, and its nodes. Pure.

`earliest_py` is the rule: the plan's candidate times, earliest first
(tide.sched.plan.reservation_candidates), each tested with the capacity the
plan leaves then (fit_at, or free_at for a spread shape) and the placement
rules (select_by_capacity / select_nodes, nodes that are free sooner kept
open for backfill). `earliest` sends fixed-shape jobs (month1000 plans
~70-100 per pass, 0.25-0.6 ms each in numpy) to the C transcription
`tide.sched._plan` (built by setup.py; optional: without it everything goes
through earliest_py, with the same results, which
tests/sched/test_reserve_kernel.py checks with hypothesis). The C side is a
Planner kept on the plan (Plan.kernel): the cluster's node columns, the
plan's free amounts and release table and the hold columns are bound once a
pass (again after a start, or when the hold columns grow), so a reservation
passes only its own eligible nodes and shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tide.sched.eligibility import JobContext
from tide.sched.index import ClusterIndex
from tide.sched.placement import node_cores, select_by_capacity, select_nodes
from tide.sched.plan import INF, Plan
from tide.sched.shape import Shape

try:
    from tide.sched import _plan as _kernel
except ImportError:  # not built: numpy only
    _kernel = None
if _kernel is not None and not hasattr(_kernel, "Planner"):  # an older build: rebuild it
    _kernel = None

Found = tuple[float, tuple[int, ...]]  # start time, nodes


def earliest(
    ix: ClusterIndex, plan: Plan, ctx: JobContext, eligible: np.ndarray, horizon: float, res: int
) -> Found | None:
    """The job's earliest start within the horizon on `eligible` nodes, and
    the nodes to hold then; None when no candidate time fits."""
    if compiled(plan, ctx):
        return earliest_c(
            ix, plan, ctx.shape, eligible, ctx.reservation, horizon, res,
            ctx.job.request.switches, ctx.switch_deadline,
        )  # fmt: skip
    return earliest_py(ix, plan, ctx, eligible, horizon, res)


def compiled(plan: Plan, ctx: JobContext) -> bool:
    """Whether `earliest` runs in C for this job (built, and not switched off
    by setting _kernel to None)."""
    return _kernel is not None and kernel_applies(plan, ctx)


def kernel_applies(plan: Plan, ctx: JobContext) -> bool:
    """What the C transcription covers: a fixed shape of at least one node,
    start times not moved to will-run batches."""
    return not ctx.shape.spread and ctx.shape.nodes_min >= 1 and plan.batch_epoch is None


def earliest_py(
    ix: ClusterIndex, plan: Plan, ctx: JobContext, eligible: np.ndarray, horizon: float, res: int
) -> Found | None:
    shape = ctx.shape
    times, ready_at = plan.reservation_candidates(shape, eligible, ctx.reservation, horizon, res)
    late_first = -ready_at  # nodes free sooner stay open for backfill
    for t in times:
        if shape.spread:
            free = plan.free_at(t, shape.time_limit, skip=ctx.reservation)
            pick = select_nodes(ix, free, shape, eligible, ctx.max_leaves(t), late_first)
        else:
            cap = plan.fit_at(t, shape, eligible, ready_at, ctx.reservation)
            pick = select_by_capacity(ix, cap, shape, ctx.max_leaves(t), late_first)
        if pick is not None:
            return t, tuple(p.node for p in pick.nodes)
    return None


def earliest_c(
    ix: ClusterIndex,
    plan: Plan,
    shape: Shape,
    eligible: np.ndarray,
    skip: str | None,
    horizon: float,
    res: int,
    switches: int | None = None,
    deadline: float | None = None,
) -> Found | None:
    """earliest_py for a job kernel_applies to, in C (switches, deadline: its
    --switches and when they stop binding, as JobContext.max_leaves)."""
    got, _ = _earliest(ix, plan, shape, eligible, skip, horizon, res, switches, deadline, INF)
    return got


def reserve_c(
    ix: ClusterIndex,
    plan: Plan,
    shape: Shape,
    eligible: np.ndarray,
    skip: str | None,
    horizon: float,
    res: int,
    switches: int | None = None,
    deadline: float | None = None,
) -> tuple[Found | None, bool]:
    """earliest_c for a job that the backfill pass holds unless it starts now:
    its reservation, and whether it may start now (its start is now, or it
    fits at now in the start test's own terms: the kernel's fits_now). When
    it may not, the reservation found is already held in the plan, as
    passes._reserve holds it (each node whole for the job's window), by the
    kernel: one call, no hold added from Python per node."""
    plan.holds.make_room(shape.nodes_max)
    now = float(plan.now)
    got, may = _earliest(ix, plan, shape, eligible, skip, horizon, res, switches, deadline, now)
    if got is not None and not may:
        plan.holds.taken(len(got[1]))
    return got, may


def _earliest(
    ix: ClusterIndex,
    plan: Plan,
    shape: Shape,
    eligible: np.ndarray,
    skip: str | None,
    horizon: float,
    res: int,
    switches: int | None,
    deadline: float | None,
    hold_from: float,
) -> tuple[Found | None, bool]:
    """The kernel's call: its reservation and fits_now."""
    holds = plan.holds
    planner = _planner(ix, plan)
    skipped = holds.arrays()[7] == skip if skip else None
    got = planner.earliest(
        len(holds),
        np.ascontiguousarray(eligible, dtype=bool),
        skipped,
        _cores_needed(ix, shape.cpus_per_node),
        shape.cpus_per_node,
        float(shape.time_limit),
        float(horizon),
        float(res),
        shape.gpus_per_node,
        shape.mem_per_node,
        shape.exclusive,
        shape.nodes_min,
        shape.nodes_max - shape.nodes_min,
        -1 if switches is None else switches,
        0.0 if deadline is None else float(deadline),
        deadline is not None,
        hold_from,
    )  # fmt: skip
    return got, bool(planner.fits_now)


class _Binding:
    """A plan's C Planner and what it was bound to: the plan's version (its
    free amounts and releases change in Plan.start only) and the hold
    columns' (replaced when they grow). Bound once a pass, not per job."""

    __slots__ = ("grown", "planner", "version")

    def __init__(self, planner: Any) -> None:
        self.planner: Any = planner
        self.version, self.grown = -1, -1


def _planner(ix: ClusterIndex, plan: Plan) -> Any:
    """The plan's Planner, bound to its current arrays."""
    assert _kernel is not None
    bound = plan.kernel
    if not isinstance(bound, _Binding):
        bound = plan.kernel = _Binding(_kernel.Planner(*_node_columns(ix)))
    if bound.version != plan.version or plan.live:  # a live plan changes unseen
        bound.planner.bind_plan(
            np.ascontiguousarray(plan.free_gpus, dtype=np.int32),
            np.ascontiguousarray(plan.free_cores, dtype=np.int32),
            np.ascontiguousarray(plan.free_mem, dtype=np.int64),
            np.ascontiguousarray(plan.rel_t, dtype=np.float64),
            np.ascontiguousarray(plan.rel_g, dtype=np.int64),
            np.ascontiguousarray(plan.rel_c, dtype=np.int64),
            np.ascontiguousarray(plan.rel_m, dtype=np.int64),
            float(plan.now),
        )
        bound.version = plan.version
    if bound.grown != plan.holds.grown:
        bound.planner.bind_holds(*plan.holds.columns())
        bound.grown = plan.holds.grown
    return bound.planner


def _node_columns(ix: ClusterIndex) -> tuple[Any, ...]:
    """The Planner's arguments: Leaf and Weight per node as int64, each leaf's
    nodes in index order (leaf_nodes[leaf_start[l]:leaf_start[l + 1]]), the
    switch levels as one levels x leaves array, GPUs and cores per node, the
    counts of leaves and levels; memoised per cluster."""
    got = ix.memo.get("kernel_nodes")
    if got is None:
        leaf_of = np.ascontiguousarray(ix.leaf_of, dtype=np.int64)
        order = np.argsort(leaf_of, kind="stable")
        bounds = np.searchsorted(leaf_of[order], np.arange(ix.n_leaves + 1))
        got = ix.memo["kernel_nodes"] = (
            leaf_of,
            np.ascontiguousarray(ix.weight, dtype=np.int64),
            bounds.astype(np.int64),
            order.astype(np.int64),
            np.array(ix.levels, dtype=np.int64).reshape(len(ix.levels), ix.n_leaves).ravel(),
            np.ascontiguousarray(ix.gpus, dtype=np.int64),
            np.ascontiguousarray(ix.cores, dtype=np.int64),
            ix.n_leaves,
            len(ix.levels),
        )
    return got  # type: ignore[return-value]


def _cores_needed(ix: ClusterIndex, cpus: int) -> np.ndarray:
    """node_cores as a contiguous int64 array per node (memoised per cluster)."""
    key = ("kernel_cores", cpus)
    got = ix.memo.get(key)
    if got is None:
        need = np.broadcast_to(np.asarray(node_cores(ix, cpus)), (ix.n,))
        got = ix.memo[key] = np.ascontiguousarray(need, dtype=np.int64)
    return got  # type: ignore[return-value]
