"""The release table kept between backfill passes (tide.sched.releases) gives
the plan Plan.build gives (issue 12 item 2): over a run of passes where
running views come and go (a new view for a moved end), some end before
now, and jobs start within the cycle, kept_plan and Plan.build agree on
every release time, on what each node has free at each of them, and on
when each node is ready for a share."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.sched.index import build_index
from tide.sched.plan import Plan
from tide.sched.releases import Releases, kept_plan
from tide.sched.shape import Shape
from tide.sched.state import Usage
from tide.sched.types import Allocation, NodeAlloc, Running
from tide.testing.builders import job, tree_cluster

NODES = 6
# nodes (bits), GPUs, cores, memory, end
_view = st.tuples(
    st.integers(1, 2**NODES - 1), st.integers(0, 4), st.integers(0, 8),
    st.sampled_from([0, 1000]), st.sampled_from([50.0, 120.0, 120.0, 300.0, math.inf]),
)  # fmt: skip
# per pass: views that end, views that start (of _view), views given anew, cycle starts
_pass = st.tuples(
    st.lists(st.integers(0, 30), max_size=3), st.lists(_view, max_size=3),
    st.lists(st.integers(0, 30), max_size=2), st.lists(_view, max_size=2),
)  # fmt: skip


def _alloc(k: int, spec: tuple) -> Allocation:
    mask, g, c, m, _ = spec
    nodes = [i for i in range(NODES) if mask >> i & 1]
    return Allocation(k, tuple(NodeAlloc(i, tuple(range(g)), tuple(range(c)), m) for i in nodes))


def _same(kept: Plan, built: Plan, now: float) -> None:
    assert kept.all_times.tolist() == built.all_times.tolist()
    for t in [now, now + 1.0, math.inf, *built.all_times.tolist()]:
        for a, b in zip(kept.base_at(t), built.base_at(t), strict=True):
            assert a.tolist() == b.tolist()
    for gpus, cpus, exclusive in ((1, 1, False), (4, 8, False), (0, 0, True)):
        shape = Shape(1, 1, gpus, gpus, False, cpus, 0, 0, 0, exclusive, "", False, 100)
        assert kept.node_ready(shape).tolist() == built.node_ready(shape).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(_pass, min_size=1, max_size=8))
def test_the_kept_table_plans_as_a_fresh_build(passes: list) -> None:  # type: ignore[type-arg]
    ix = build_index(tree_cluster([NODES], gpus=8))
    usage = Usage.empty(ix)
    table = Releases(ix.n)
    running: list[Running] = []
    now, k = 0.0, 0
    for ending, starting, anew, cycle in passes:
        for i in sorted({i % len(running) for i in ending} if running else (), reverse=True):
            running.pop(i)
        for i in {i % len(running) for i in anew} if running else ():
            r = running[i]  # the same job, its end moved: a new view
            running[i] = Running(r.job, r.alloc, r.start, r.end + 30.0)
        for spec in starting:
            k += 1
            running.append(Running(job(k), _alloc(k, spec), now, now + spec[4]))
        started = []
        for spec in cycle:
            k += 1
            started.append((_alloc(k, spec), now + spec[4]))
        assert table.update(running)
        kept = kept_plan(ix, usage, table, started, now)
        listed = [(r.alloc, max(r.end, now)) for r in running] + started
        _same(kept, Plan.build(ix, usage, listed, now), now)
        now += 100.0  # some ends fall behind now


def test_a_view_listed_twice_is_not_kept() -> None:
    ix = build_index(tree_cluster([NODES], gpus=8))
    r = Running(job(1), _alloc(1, (1, 2, 2, 0, 50.0)), 0.0, 50.0)
    table = Releases(ix.n)
    assert not table.update([r, r])
    assert table.update([r])
    assert np.isfinite(table.arrays()[0]).sum() == 1
