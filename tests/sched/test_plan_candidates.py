"""The backfill plan's shortcuts give what the full computations they replace
give (issue 12 item 2): the reservation candidates built lazily (the first
few raw times rounded first) equal the whole sorted list, and a one-node
placement's leaf chosen in one step equals the general leaf rules."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.sched.index import build_index
from tide.sched.placement import _choose_leaves, _fill_fixed, select_by_capacity
from tide.sched.plan import MAX_CANDIDATES, Plan, _round_up, _sorted_distinct
from tide.sched.shape import Shape
from tide.sched.state import Usage
from tide.sched.types import Allocation, NodeAlloc
from tide.testing.builders import tree_cluster

LEAVES = [5, 3, 7, 4]  # 19 nodes: more than the first step's raw times
NODES = sum(LEAVES)


def _shape(nodes: int, gpus: int, limit: int) -> Shape:
    return Shape(nodes, nodes, gpus, gpus * nodes, False, 1, 0, 0, 0, False, "", False, limit)


def reference(plan: Plan, shape: Shape, eligible: np.ndarray, horizon: float, res: int) -> list:
    """The candidates as computed before: every raw time rounded, sorted, cut."""
    ready = plan.node_ready(shape)
    if len(plan.holds):
        ready = plan.hold_aware_ready(ready, shape.time_limit, None)
    e = ready[eligible]
    if e.size < shape.nodes_min:
        return []
    bound = float(np.partition(e, shape.nodes_min - 1)[shape.nodes_min - 1])
    later = e[(e >= bound) & (e <= horizon)]
    if len(plan.holds):
        ends = plan.holds.arrays()[2]
        later = np.concatenate([later, ends[(ends > bound) & (ends <= horizon)]])
    later = _round_up(later, plan.now, res)
    if later.size > 4 * MAX_CANDIDATES:
        later = np.partition(later, 4 * MAX_CANDIDATES)[: 4 * MAX_CANDIDATES]
    return _sorted_distinct(later)[:MAX_CANDIDATES].tolist()  # type: ignore[no-any-return]


_run = st.tuples(st.integers(0, NODES - 1), st.integers(1, 8), st.integers(1, 400))
_hold = st.tuples(st.integers(0, NODES - 1), st.integers(0, 400), st.integers(1, 300))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_run, max_size=40),
    st.lists(_hold, max_size=12),
    st.integers(1, 3),
    st.integers(1, 8),
    st.integers(1, 500),
    st.sampled_from([1, 7, 60]),
    st.integers(0, 2**NODES - 1),
)
def test_lazy_candidates_equal_the_full_list(runs, holds, nodes, gpus, limit, res, mask) -> None:  # type: ignore[no-untyped-def]
    ix = build_index(tree_cluster(LEAVES, gpus=8))
    usage = Usage.empty(ix)
    running = []
    for k, (node, g, end) in enumerate(runs):
        if usage.free_gpus[node] >= g:
            alloc = Allocation(k, (NodeAlloc(node, tuple(range(8 - usage.free_gpus[node],
                                                               8 - usage.free_gpus[node] + g)),
                                             (), 0),))  # fmt: skip
            usage.free_gpus[node] -= g
            running.append((alloc, float(end)))
    plan = Plan.build(ix, usage, running, 0.0)
    for node, start, length in holds:
        plan.hold(node, float(start), float(start + length))
    eligible = np.array([mask >> i & 1 for i in range(NODES)], dtype=bool)
    shape = _shape(nodes, gpus, limit)
    times, _ = plan.reservation_candidates(shape, eligible, None, 1000.0, res)
    assert list(times) == reference(plan, shape, eligible, 1000.0, res)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.booleans(), min_size=NODES, max_size=NODES),
    st.sampled_from([None, 1, 2]),
    st.integers(0, 1),
)
def test_one_node_leaf_equals_the_leaf_rules(fits, max_leaves, extra) -> None:  # type: ignore[no-untyped-def]
    ix = build_index(tree_cluster(LEAVES, gpus=8))
    cap = np.array(fits, dtype=np.int64)
    shape = Shape(1, 1 + extra, 8, 8 + 8 * extra, False, 1, 0, 0, 0, False, "", False, 60)
    key = np.arange(NODES)[::-1].astype(np.int64)
    got = select_by_capacity(ix, cap, shape, max_leaves, key)
    per_leaf = np.bincount(ix.leaf_of, weights=cap, minlength=ix.n_leaves)
    leaves = _choose_leaves(ix, per_leaf, 1, max_leaves) if per_leaf.sum() >= 1 else None
    want = None if leaves is None else _fill_fixed(ix, shape, cap, leaves, key)
    assert got == want
