"""The backfill plan: a job started during the pass is the same, to the plan,
as a job that was already running."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.sched.index import build_index
from tide.sched.plan import Plan
from tide.sched.state import Usage
from tide.sched.types import Allocation, NodeAlloc
from tide.testing.builders import flat_cluster

_allocs = st.lists(
    st.tuples(st.integers(0, 2), st.integers(1, 2), st.integers(1, 500)), min_size=1, max_size=12
)


@settings(max_examples=60, deadline=None)
@given(_allocs, st.integers(0, 600))
def test_started_jobs_equal_running_jobs(rows, t) -> None:  # type: ignore[no-untyped-def]
    ix = build_index(flat_cluster(3, gpus=8))
    usage = Usage.empty(ix)
    running, used = [], [0, 0, 0]
    for k, (node, gpus, end) in enumerate(rows):
        if used[node] + gpus > 8:
            continue
        gpu_ids = tuple(range(used[node], used[node] + gpus))
        used[node] += gpus
        running.append((Allocation(k, (NodeAlloc(node, gpu_ids, (), 10),)), float(end)))
    half = len(running) // 2
    for alloc, _ in running[:half]:
        usage.allocate(alloc)
    plan = Plan.build(ix, usage, running[:half], 0.0)
    plan.node_ready(_shape(4))  # a memo entry that start() must keep right
    for alloc, end in running[half:]:
        usage.allocate(alloc)
        plan.start(alloc, end)
    fresh = Plan.build(ix, usage, running, 0.0)
    for got, want in zip(plan.base_at(float(t)), fresh.base_at(float(t)), strict=True):
        assert np.array_equal(got, want)
    assert np.array_equal(plan.node_ready(_shape(4)), fresh.node_ready(_shape(4)))


def _shape(gpus: int):  # type: ignore[no-untyped-def]
    from tide.sched.shape import Shape

    return Shape(1, 1, gpus, gpus, False, 1, 0, 0, 0, False, "", False, 100)
