"""A backfill reservation: a job's earliest start in the plan, and its nodes. Pure.

`earliest_py` is the rule: the plan's candidate times, earliest first
(tide.sched.plan.reservation_candidates), each tested with the capacity the
plan leaves then (fit_at, or free_at for a spread shape) and the placement
rules (select_by_capacity / select_nodes, nodes that are free sooner kept
open for backfill). `earliest` sends fixed-shape jobs (month1000 plans
~70-100 per pass, 0.25-0.6 ms each in numpy) to the C transcription
`tide.sched._plan` (built by setup.py; optional: without it everything goes
through earliest_py, with the same results, which
tests/sched/test_reserve_kernel.py checks with hypothesis).
"""

from __future__ import annotations

import numpy as np

from tide.sched.eligibility import JobContext
from tide.sched.index import ClusterIndex
from tide.sched.placement import node_cores, select_by_capacity, select_nodes
from tide.sched.plan import Plan
from tide.sched.shape import Shape

try:
    from tide.sched import _plan as _kernel
except ImportError:  # not built: numpy only
    _kernel = None

Found = tuple[float, tuple[int, ...]]  # start time, nodes


def earliest(
    ix: ClusterIndex, plan: Plan, ctx: JobContext, eligible: np.ndarray, horizon: float, res: int
) -> Found | None:
    """The job's earliest start within the horizon on `eligible` nodes, and
    the nodes to hold then; None when no candidate time fits."""
    if _kernel is not None and kernel_applies(plan, ctx):
        return earliest_c(
            ix, plan, ctx.shape, eligible, ctx.reservation, horizon, res,
            ctx.job.request.switches, ctx.switch_deadline,
        )  # fmt: skip
    return earliest_py(ix, plan, ctx, eligible, horizon, res)


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
    assert _kernel is not None
    hn, hs, he, hg, hc, hm, hw, tags = plan.holds.arrays()
    skipped = tags == skip if skip else None
    leaf_of, weight, leaf_start, leaf_nodes, levels = _node_columns(ix)
    # node_ready is int64 when `now` is an int and no node is short
    ready = np.ascontiguousarray(plan.node_ready(shape), dtype=np.float64)
    got = _kernel.earliest(
        ready,
        np.ascontiguousarray(eligible, dtype=bool),
        np.ascontiguousarray(plan.free_gpus, dtype=np.int32),
        np.ascontiguousarray(plan.free_cores, dtype=np.int32),
        np.ascontiguousarray(plan.free_mem, dtype=np.int64),
        np.ascontiguousarray(plan.rel_t, dtype=np.float64),
        np.ascontiguousarray(plan.rel_g, dtype=np.int64),
        np.ascontiguousarray(plan.rel_c, dtype=np.int64),
        np.ascontiguousarray(plan.rel_m, dtype=np.int64),
        hn, hs, he, hg, hc, hm, hw, skipped,
        leaf_of,
        weight,
        _cores_needed(ix, shape.cpus_per_node),
        leaf_start,
        leaf_nodes,
        levels,
        ix.n_leaves,
        len(ix.levels),
        float(plan.now),
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
    )  # fmt: skip
    return got  # type: ignore[no-any-return]


def _node_columns(ix: ClusterIndex) -> tuple[np.ndarray, ...]:
    """Leaf and Weight per node as int64, each leaf's nodes in index order
    (leaf_nodes[leaf_start[l]:leaf_start[l + 1]]) and the switch levels as one
    levels x leaves array, memoised per cluster."""
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
