"""What the cycle keeps or counts faster (issue 12) gives what it replaced.

- LimitChecker.add_running (running jobs counted per group) ≡ `add` job by job;
- CycleMemo.schedulable follows every node state change and hands out copies,
  and with the driver's count of changes reads states only when it moves;
- Holds.arrays sees every hold added after an earlier read;
- Allocation.gpu_count (counted once) is the sum over its nodes and leaves
  equality and hashing as they were.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model import Account, AccountTree, NodeState
from tide.sched.cycle import CycleMemo
from tide.sched.index import build_index
from tide.sched.limits import LimitChecker, RunningGroups
from tide.sched.plan import Holds
from tide.sched.types import Allocation, NodeAlloc, Running, RunningDelta
from tide.testing.builders import flat_cluster, job, snapshot


def _tree() -> AccountTree:
    tree = AccountTree()
    tree.accounts["root"] = Account("root")
    tree.accounts["ml"] = Account("ml", parent="root")
    tree.accounts["nlp"] = Account("nlp", parent="ml")
    tree.accounts["hpc"] = Account("hpc", parent="root")
    return tree


_runs = st.lists(
    st.tuples(
        st.sampled_from(["root", "ml", "nlp", "hpc", "unknown"]),
        st.sampled_from(["alice", "bob", "carol"]),
        st.sampled_from(["normal", "high"]),
        st.one_of(st.none(), st.integers(1, 3)),  # array job id
        st.lists(st.integers(0, 8), min_size=1, max_size=3),  # GPUs per node
    ),
    max_size=40,
)


def _running(rows: list[tuple]) -> list[Running]:
    """One Running view per drawn row (account, user, QOS, array id, GPUs per node)."""
    out = []
    for i, (account, user, qos, array, per_node) in enumerate(rows):
        j = job(i + 1, account=account, user=user)
        j.qos, j.array_job_id = qos, array
        nodes = tuple(NodeAlloc(k, tuple(range(g))) for k, g in enumerate(per_node))
        out.append(Running(j, Allocation(j.id, nodes), 0.0, 3600.0))
    return out


@settings(max_examples=150, deadline=None)
@given(_runs)
def test_add_running_counts_as_add_one_by_one(rows) -> None:  # type: ignore[no-untyped-def]
    running = _running(rows)
    one, grouped = LimitChecker(_tree()), LimitChecker(_tree())
    for r in running:
        one.add(r.job, sum(len(n.gpus) for n in r.alloc.nodes))
    grouped.add_running(running)
    for name in one.count.__slots__:
        assert dict(getattr(grouped.count, name)) == dict(getattr(one.count, name)), name


def test_schedulable_follows_node_states_and_hands_out_copies() -> None:
    cluster = flat_cluster(4)
    ix = build_index(cluster)
    memo = CycleMemo()
    snap = snapshot(cluster, [])
    first = memo.schedulable(snap, ix)
    assert first.tolist() == [True] * 4
    first[0] = False  # a cycle may change its own copy
    assert memo.schedulable(snap, ix).tolist() == [True] * 4
    cluster.nodes[2].state = NodeState.DRAIN
    assert memo.schedulable(snap, ix).tolist() == [True, True, False, True]
    cluster.nodes[2].state = NodeState.IDLE
    cluster.nodes[3].state = NodeState.DOWN
    assert memo.schedulable(snap, ix).tolist() == [True, True, True, False]
    ix.up[0] = False  # the index's own view of which nodes are up counts too
    assert memo.schedulable(snap, ix).tolist() == [False, True, True, False]


def test_schedulable_with_the_driver_s_count_reads_states_only_when_it_moves() -> None:
    """Snapshot.node_states_gen: while the count is the same no state is read
    (a change the driver did not count is not seen: that is its promise);
    a new count, a change of ix.up or another cluster object reads them."""
    cluster = flat_cluster(4)
    ix = build_index(cluster)
    memo = CycleMemo()
    snap = snapshot(cluster, [])
    snap.node_states_gen = 0
    assert memo.schedulable(snap, ix).tolist() == [True] * 4
    cluster.nodes[1].state = NodeState.DOWN
    assert memo.schedulable(snap, ix).tolist() == [True] * 4  # not counted: not read
    snap.node_states_gen = 1
    assert memo.schedulable(snap, ix).tolist() == [True, False, True, True]
    ix.up[3] = False
    assert memo.schedulable(snap, ix).tolist() == [True, False, True, False]
    other = flat_cluster(4)
    snap.cluster = other
    assert memo.schedulable(snap, ix).tolist() == [True, True, True, False]
    snap.node_states_gen = None  # not kept: read every time
    other.nodes[0].state = NodeState.DRAIN
    assert memo.schedulable(snap, ix).tolist() == [False, True, True, False]


def test_holds_arrays_see_every_add() -> None:
    holds = Holds()
    for k in range(40):  # past the first growth of the columns
        holds.add(k % 5, float(k), float(k + 10), 1, 0, 0, k % 2 == 0, "" if k % 3 else "resv")
        nodes, _, ends, gpus, _, _, whole, _ = holds.arrays()
        assert gpus.tolist() == [1] * (k + 1)
        assert len(nodes) == k + 1 and holds.arrays() is holds.arrays()
        assert nodes.tolist() == [i % 5 for i in range(k + 1)]
        assert ends.tolist() == [float(i + 10) for i in range(k + 1)]
        assert whole.tolist() == [i % 2 == 0 for i in range(k + 1)]
        assert holds.untagged().tolist() == (holds.arrays()[7] == "").tolist()
    assert np.array_equal(holds.arrays()[1], np.arange(40, dtype=float))


def test_allocation_gpu_count_is_counted_once_and_equality_holds() -> None:
    nodes = (NodeAlloc(0, (0, 1, 2)), NodeAlloc(3, ()), NodeAlloc(5, (7,)))
    a, b = Allocation(9, nodes), Allocation(9, tuple(nodes))
    assert a.gpu_count == 4 and Allocation(1, ()).gpu_count == 0
    assert a == b and hash(a) == hash(b) and a != Allocation(9, nodes[:1])
    assert "gpu_count" not in repr(a)


@settings(max_examples=100, deadline=None)
@given(_runs, st.lists(st.tuples(st.booleans(), st.integers(0, 39)), min_size=1, max_size=25))
def test_running_groups_kept_between_cycles_count_as_add(rows, steps) -> None:  # type: ignore[no-untyped-def]
    """Cycle after cycle jobs start and end (and one is listed again as a new
    Running with the same job): the kept groups count what `add` counts."""
    pool = _running(rows)
    memo = CycleMemo()
    current: list[Running] = []
    for start, k in steps:
        if pool and start:
            r = pool[k % len(pool)]
            current.append(r if r not in current else Running(r.job, r.alloc, 1.0, 7200.0))
        elif current:
            current.pop(k % len(current))
        one, kept = LimitChecker(_tree()), LimitChecker(_tree())
        for r in current:
            one.add(r.job, r.alloc.gpu_count)
        kept.add_groups(memo.running.update(current))
        for name in one.count.__slots__:
            got = {k: v for k, v in getattr(kept.count, name).items() if v}
            want = {k: v for k, v in getattr(one.count, name).items() if v}
            assert got == want, name


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 60.0, 61.5, 120.0, 3600.0, float("inf")]), max_size=30))
def test_sorted_distinct_is_np_unique(values) -> None:  # type: ignore[no-untyped-def]
    from tide.sched.plan import _sorted_distinct

    x = np.asarray(values, dtype=np.float64)
    assert _sorted_distinct(x).tolist() == np.unique(x).tolist()


def test_gpu_candidates_kept_in_the_index_pick_as_before() -> None:
    """concrete() keeps each node layout's candidate GPU subsets per free mask and
    count in ix.memo; every mask and count picks what pick_gpus picks."""
    from tide.sched.placement import NodePick, concrete, pick_gpus

    cluster = flat_cluster(2)
    ix = build_index(cluster)
    layout = ix.layouts[int(ix.layout_of[0])]
    full_cores = (1 << int(ix.cores[0])) - 1
    for mask in range(1 << layout.count):
        for count in range(layout.count + 1):
            for binding in (False, True):
                want = pick_gpus(layout, mask, count, full_cores, 2, binding)
                gpu_mask = np.array([mask, mask], dtype=np.uint64)
                pick = NodePick(node=1, gpus=count, cores=2, mem=0)
                for _ in range(2):  # computed, then from the memo
                    got = concrete(ix, gpu_mask, [full_cores] * 2, pick, binding)
                    assert (got.gpus, got.cores) == want if want else got is None


@settings(max_examples=100, deadline=None)
@given(
    _runs,
    st.lists(
        st.tuples(st.sampled_from(["start", "end", "renew"]), st.integers(0, 39), st.booleans()),
        min_size=1,
        max_size=30,
    ),
)
def test_running_groups_follow_the_drivers_delta(rows, steps) -> None:  # type: ignore[no-untyped-def]
    """With a RunningDelta (the twin) the groups are updated from the started
    and gone views alone, and count what `add` counts; a view the delta left
    out is still counted (the whole list is compared then)."""
    pool = _running(rows)
    groups = RunningGroups()
    current: dict[int, Running] = {}
    started: list[Running] = []
    gone: list[Running] = []
    since, followed = 0, 0
    for gen, (op, k, cycle) in enumerate(steps, start=1):
        if op == "start" and pool:
            r = pool[k % len(pool)]
            if r.job.id not in current:
                current[r.job.id] = r
                started.append(r)
        elif current:
            jid = list(current)[k % len(current)]
            gone.append(current.pop(jid))
            if op == "renew":  # the same job given anew (a resume moved its limit)
                r = current[jid] = Running(gone[-1].job, gone[-1].alloc, 0.0, 7200.0)
                started.append(r)
        if not cycle:
            continue
        delta = RunningDelta(since, gen, tuple(started), tuple(gone))
        if k % 7 == 0 and started:  # a driver that left one out
            delta = RunningDelta(since, gen, tuple(started[1:]), tuple(gone))
        running = list(current.values())
        one, kept = LimitChecker(_tree()), LimitChecker(_tree())
        for r in running:
            one.add(r.job, r.alloc.gpu_count)
        kept.add_groups(groups.update(running, delta))
        for name in one.count.__slots__:
            got = {k: v for k, v in getattr(kept.count, name).items() if v}
            want = {k: v for k, v in getattr(one.count, name).items() if v}
            assert got == want, name
        followed += groups._gen == gen
        started, gone, since = [], [], gen
    assert followed == sum(1 for s in steps if s[2])  # every cycle followed its delta
