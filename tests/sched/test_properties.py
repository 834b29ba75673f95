"""Hypothesis invariants of the core over random clusters and queues."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tide.model import Account, AccountTree, Limits
from tide.model.sched_config import BackfillMode, QueueOrder
from tide.sched import schedule
from tide.sched.index import build_index
from tide.sched.state import Usage
from tide.sched.types import Running
from tide.testing.builders import job, running, snapshot, tree_cluster

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def scenarios(draw):  # type: ignore[no-untyped-def]
    leaves = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    gpus = draw(st.sampled_from([1, 4, 8]))
    cluster = tree_cluster(leaves, gpus=gpus, spines=draw(st.integers(1, 2)))
    names = [n.name for n in cluster.nodes]
    run: list[Running] = []
    free = {n: list(range(gpus)) for n in names}
    for k in range(draw(st.integers(0, 6))):
        node = draw(st.sampled_from(names))
        if not free[node]:
            continue
        take = draw(st.integers(1, len(free[node])))
        idx = tuple(free[node][:take])
        free[node] = free[node][take:]
        j = job(
            900 + k,
            gpus_per_node=take,
            time=draw(st.integers(10, 500)),
            account=draw(st.sampled_from(["a", "b"])),
        )
        run.append(running(j, cluster, {node: idx}, 0, cores=0))
    pending = []
    for k in range(draw(st.integers(1, 10))):
        pending.append(
            job(
                k + 1,
                nodes=draw(st.integers(1, 3)),
                gpus_per_node=draw(st.integers(1, gpus)),
                time=draw(st.integers(5, 400)),
                submit=float(k),
                account=draw(st.sampled_from(["a", "b"])),
            )
        )
    mode = draw(st.sampled_from(list(BackfillMode)))
    return cluster, run, pending, mode


def _snap(cluster, run, pending, mode, limit=None):  # type: ignore[no-untyped-def]
    snap = snapshot(cluster, pending, now=0, running_jobs=run, backfill=mode, order=QueueOrder.FCFS)
    tree = AccountTree()
    tree.accounts["a"] = Account("a", limits=Limits(grp_tres={"gres/gpu": limit} if limit else {}))
    tree.accounts["b"] = Account("b")
    snap.accounts = tree
    return snap


@SETTINGS
@given(scenarios())
def test_nothing_is_allocated_twice_and_gangs_are_whole(sc) -> None:  # type: ignore[no-untyped-def]
    cluster, run, pending, mode = sc
    d = schedule(_snap(cluster, run, pending, mode))
    usage = Usage.empty(build_index(cluster))
    for r in run:
        usage.allocate(r.alloc)
    by_id = {j.id: j for j in pending}
    for s in d.starts:
        usage.allocate(s.alloc)  # raises OverAllocation on any double use
        req = by_id[s.job_id].request
        assert len(s.alloc.nodes) == req.nodes_min
        assert all(len(na.gpus) == req.gpus_per_node for na in s.alloc.nodes)
        assert len({na.node for na in s.alloc.nodes}) == len(s.alloc.nodes)
    assert (usage.free_gpus >= 0).all()


@SETTINGS
@given(scenarios())
def test_backfill_never_delays_a_reservation(sc) -> None:  # type: ignore[no-untyped-def]
    """Running + started + planned jobs never oversubscribe a node at any time."""
    cluster, run, pending, mode = sc
    d = schedule(_snap(cluster, run, pending, mode))
    by_id = {j.id: j for j in pending}
    use: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
    for r in run:
        for na in r.alloc.nodes:
            use[na.node].append((0.0, r.end, len(na.gpus)))
    for s in d.starts:
        limit = by_id[s.job_id].request.time_limit or 0
        for na in s.alloc.nodes:
            use[na.node].append((0.0, float(limit), len(na.gpus)))
    for jid, info in d.pending.items():
        if info.planned_start is None:
            continue
        req = by_id[jid].request
        for node in info.planned_nodes:
            use[node].append(
                (
                    info.planned_start,
                    info.planned_start + (req.time_limit or 0),
                    req.gpus_per_node or 0,
                )
            )
    for node, spans in use.items():
        cap = cluster.nodes[node].gpu_count
        for t, _, _ in spans:
            assert sum(g for a, b, g in spans if a <= t < b) <= cap


@SETTINGS
@given(scenarios())
def test_the_top_reservation_is_the_same_with_or_without_backfill(sc) -> None:  # type: ignore[no-untyped-def]
    cluster, run, pending, _ = sc
    d = schedule(_snap(cluster, run, pending, BackfillMode.CONSERVATIVE))
    planned = [
        j for j in pending if d.pending.get(j.id) and d.pending[j.id].planned_start is not None
    ]
    if not planned:
        return
    top = planned[0]
    before = [j for j in pending if j.submit < top.submit]
    if any(j.id in d.pending for j in before):
        return  # an earlier job is itself waiting: not the top reservation
    alone = schedule(_snap(cluster, run, [*before, top], BackfillMode.CONSERVATIVE))
    assert d.pending[top.id].planned_start == alone.pending[top.id].planned_start


@SETTINGS
@given(scenarios(), st.integers(1, 16))
def test_group_gpu_limit_holds(sc, limit) -> None:  # type: ignore[no-untyped-def]
    cluster, run, pending, mode = sc
    d = schedule(_snap(cluster, run, pending, mode, limit=limit))
    used = sum(r.alloc.gpu_count for r in run if r.job.account == "a")
    by_id = {j.id: j for j in pending}
    added = sum(s.alloc.gpu_count for s in d.starts if by_id[s.job_id].account == "a")
    assert added == 0 or used + added <= limit


@SETTINGS
@given(scenarios())
def test_decisions_are_deterministic(sc) -> None:  # type: ignore[no-untyped-def]
    cluster, run, pending, mode = sc
    assert schedule(_snap(cluster, run, pending, mode)) == schedule(
        _snap(cluster, run, pending, mode)
    )
