"""The C reservation (tide.sched._plan via reserve.earliest_c) finds what the
numpy one (reserve.earliest_py) finds for every fixed-shape job, with or
without --switches: the same start time and the same nodes, in the same
order, on one- and two-level trees (issue 12 item 2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.sched.eligibility import JobContext
from tide.sched.index import ClusterIndex, build_index
from tide.sched.placement import select_nodes
from tide.sched.plan import Plan
from tide.sched.reserve import earliest, earliest_c, earliest_py, kernel_applies, reserve_c
from tide.sched.shape import Shape
from tide.sched.state import Usage
from tide.sched.types import Allocation, NodeAlloc
from tide.testing.builders import job, tree_cluster

pytest.importorskip("tide.sched._plan")

LEAVES = [5, 3, 7, 4]
NODES = sum(LEAVES)
# the same nodes in other trees: even ones make switches tie
TREES = [LEAVES, [5, 5, 4, 5], [2, 8, 4, 5], [19]]
CORES = 32  # per node (tree_cluster's default: 2 sockets x 16)
MEM = 512_000

# node, GPUs, cores, memory, end
_run = st.tuples(
    st.integers(0, NODES - 1), st.integers(0, 8), st.integers(0, CORES),
    st.sampled_from([0, 100_000, 300_000]), st.integers(1, 400),
)  # fmt: skip
# node, start, length, whole, GPUs, cores, memory, tagged
_hold = st.tuples(
    st.integers(0, NODES - 1), st.integers(0, 400), st.integers(1, 300), st.booleans(),
    st.integers(0, 8), st.integers(0, CORES), st.sampled_from([0, 200_000]), st.booleans(),
)  # fmt: skip


def _plan(ix: ClusterIndex, runs: list, holds: list, now: float) -> Plan:
    usage = Usage.empty(ix)
    running = []
    for k, (node, g, c, m, end) in enumerate(runs):
        if usage.free_gpus[node] >= g and usage.free_cores[node] >= c and usage.free_mem[node] >= m:
            first = 8 - int(usage.free_gpus[node])
            alloc = Allocation(k, (NodeAlloc(node, tuple(range(first, first + g)),
                                             tuple(range(c)), m),))  # fmt: skip
            usage.free_gpus[node] -= g
            usage.free_cores[node] -= c
            usage.free_mem[node] -= m
            running.append((alloc, float(end)))
    plan = Plan.build(ix, usage, running, now)
    for node, start, length, whole, g, c, m, tagged in holds:
        end = float(start + length)
        plan.hold(node, float(start), end, g, c, m, whole, "resv" if tagged else "")
    return plan


def _context(shape: Shape, eligible: np.ndarray) -> JobContext:
    return JobContext(job(1, nodes=1), [], [eligible], shape)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(_run, max_size=40),
    st.lists(_hold, max_size=14),
    st.tuples(st.integers(1, 6), st.integers(0, 2)),  # nodes, extra nodes
    st.tuples(st.sampled_from([None, 0, 1, 2, 3]), st.sampled_from([None, 0.0, 100.0, 250.0])),
    st.tuples(st.integers(0, 8), st.integers(0, 40), st.sampled_from([1, 2])),  # GPUs, CPUs, spines
    st.sampled_from(TREES),
    st.sampled_from([0, 100_000, 400_000]),
    st.booleans(),
    st.integers(1, 500),
    st.sampled_from([1, 7, 60]),
    st.integers(0, 2**NODES - 1),
    st.tuples(st.sampled_from([0.0, 30.0]), st.sampled_from([None, "resv"])),  # now, skip
    st.lists(st.integers(0, 2), min_size=NODES, max_size=NODES),
    st.sampled_from([150.0, 1000.0, math.inf]),
)
def test_kernel_equals_numpy(  # type: ignore[no-untyped-def]
    runs, holds, nodes, switch, per_node, tree, mem, exclusive, limit, res, mask, when, weights,
    horizon,
) -> None:  # fmt: skip
    (need, extra), (gpus, cpus, spines), (now, skip) = nodes, per_node, when
    switches, deadline = switch  # --switches, and when it stops binding
    ix = build_index(tree_cluster(tree, gpus=8, spines=spines))
    ix.weight[:] = weights  # Weight orders the nodes inside a leaf first
    plan = _plan(ix, runs, holds, now)
    eligible = np.array([mask >> i & 1 for i in range(NODES)], dtype=bool)
    shape = Shape(need, need + extra, gpus, gpus * need, False, cpus, 0, mem, 0, exclusive, "",
                  False, limit)  # fmt: skip
    ctx = JobContext(job(1, nodes=need, switches=switches), [], [eligible], shape, None, skip,
                     deadline)  # fmt: skip
    assert kernel_applies(plan, ctx)
    got = earliest_c(ix, plan, shape, eligible, skip, horizon, res, switches, deadline)
    assert got == earliest_py(ix, plan, ctx, eligible, horizon, res)


# nodes, GPUs, CPUs, exclusive, limit, eligible nodes (bits), start a job after it
_job = st.tuples(
    st.integers(1, 4), st.integers(0, 8), st.integers(0, 40), st.booleans(),
    st.integers(1, 500), st.integers(1, 2**NODES - 1), st.booleans(),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_run, max_size=40),
    st.lists(_hold, max_size=14),
    st.lists(_job, min_size=1, max_size=10),
    st.sampled_from(TREES),
    st.sampled_from([1, 60]),
    st.tuples(st.sampled_from([0.0, 30.0]), st.sampled_from([None, "resv"])),  # now, skip
)
def test_one_planner_over_a_pass_equals_numpy(  # type: ignore[no-untyped-def]
    runs, holds, jobs, tree, res, when
) -> None:
    """A pass plans many jobs on one plan: its Planner is bound once and kept
    (its scratch and node_ready memo reused, its hold columns read in place
    until they grow, the plan bound again after a start). Each job in turn,
    with the holds of those before it and a started job now and then, gets
    from C what numpy gives it on a twin plan, and the holds the kernel
    writes for a start later than now are those passes._reserve adds."""
    now, skip = when
    ix = build_index(tree_cluster(tree, gpus=8))
    fast, slow = _plan(ix, runs, holds, now), _plan(ix, runs, holds, now)
    for k, (need, gpus, cpus, exclusive, limit, mask, start) in enumerate(jobs):
        eligible = np.array([mask >> i & 1 for i in range(NODES)], dtype=bool)
        shape = Shape(need, need, gpus, gpus * need, False, cpus, 0, 0, 0, exclusive, "", False,
                      limit)  # fmt: skip
        ctx = JobContext(job(1, nodes=need), [], [eligible], shape, None, skip)
        got, may_start = reserve_c(ix, fast, shape, eligible, skip, math.inf, res)
        assert got == earliest_py(ix, slow, ctx, eligible, math.inf, res)
        fits = select_nodes(ix, slow.free_at(now, limit, skip), shape, eligible) is not None
        assert may_start or not fits  # what the start test could start, it says may start
        assert may_start or got is None or got[0] > now
        if got is not None:  # the kernel held the start of a job that may not start
            for plan in (fast, slow) if may_start else (slow,):
                for node in got[1]:
                    plan.hold(node, got[0], got[0] + limit)
        for a, b in zip(fast.holds.arrays(), slow.holds.arrays(), strict=True):
            assert a.tolist() == b.tolist()
        assert fast.holds.untagged().tolist() == slow.holds.untagged().tolist()
        free = np.flatnonzero((fast.free_gpus >= 1) & (fast.free_cores >= 1))
        if start and free.size:
            node = int(free[k % free.size])
            first = 8 - int(fast.free_gpus[node])
            alloc = Allocation(100 + k, (NodeAlloc(node, (first,), (0,), 0),))
            for plan in (fast, slow):
                plan.start(alloc, now + 50.0 * (k + 1))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from([1, 60]), st.integers(1, 3000))
def test_kernel_keeps_the_first_raw_times_only(seed, res, limit) -> None:  # type: ignore[no-untyped-def]
    """More raw times than plan._times keeps (4 x MAX_CANDIDATES): 270 of 300
    nodes free up within the first rounding step and amount holds take every
    node past it, so the candidates stop where the kept raw times stop (and
    no reservation is found, though a later time would fit)."""
    rng = np.random.default_rng(seed)
    leaves = [30] * 10
    n = sum(leaves)
    ix = build_index(tree_cluster(leaves, gpus=8))
    early = rng.integers(1, 60, size=n)
    runs = [(node, 8, 1, 0, int(early[node]) if node < 270 else int(rng.integers(60, 4000)))
            for node in range(n)]  # fmt: skip
    holds = [(node, 0, int(rng.integers(61, 400)), False, 8, 0, 0, False) for node in range(n)]
    plan = _plan(ix, runs, holds, 0.0)
    eligible = np.ones(n, dtype=bool)
    shape = Shape(1, 1, 8, 8, False, 1, 0, 0, 0, False, "", False, limit)
    ctx = _context(shape, eligible)
    got = earliest_c(ix, plan, shape, eligible, None, math.inf, res)
    assert got == earliest_py(ix, plan, ctx, eligible, math.inf, res)
    assert got is None


def test_spread_shapes_take_the_numpy_path() -> None:
    ix = build_index(tree_cluster(LEAVES, gpus=8))
    plan = _plan(ix, [(0, 8, 0, 0, 100)], [(1, 0, 50, True, 0, 0, 0, False)], 0.0)
    eligible = np.ones(NODES, dtype=bool)
    shape = Shape(1, 3, 0, 12, True, 1, 0, 0, 0, False, "", False, 100)
    ctx = JobContext(job(1, gpus=12), [], [eligible], shape)
    assert not kernel_applies(plan, ctx)
    found = earliest(ix, plan, ctx, eligible, 1000.0, 1)
    assert found == earliest_py(ix, plan, ctx, eligible, 1000.0, 1)
    assert found is not None and sum(1 for _ in found[1]) >= 2


def test_an_integer_now_works() -> None:
    """With `now` an int and no node short, node_ready is an int64 array: the
    C call takes it as float64 (test_properties' snapshots start at now=0)."""
    ix = build_index(tree_cluster(LEAVES, gpus=8))
    plan = Plan.build(ix, Usage.empty(ix), [], 0)
    eligible = np.ones(NODES, dtype=bool)
    shape = Shape(2, 2, 8, 16, False, 1, 0, 0, 0, False, "", False, 100)
    assert plan.node_ready(shape).dtype == np.int64
    ctx = JobContext(job(1, nodes=2), [], [eligible], shape)
    got = earliest_c(ix, plan, shape, eligible, None, 1000.0, 1)
    assert got is not None and got == earliest_py(ix, plan, ctx, eligible, 1000.0, 1)
