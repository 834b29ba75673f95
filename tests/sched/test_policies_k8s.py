"""k8s-default: pods bound one at a time, LeastAllocated, no gang."""

from __future__ import annotations

from tide.sched.index import build_index
from tide.sched.policies import make_policy
from tide.sched.policies.k8s import K8sDefaultPolicy
from tide.sched.state import Usage
from tide.sched.types import Allocation, NodeAlloc, Reason, Running, Snapshot
from tide.testing.builders import flat_cluster, job, running, snapshot


def _usage(snap: Snapshot) -> Usage:
    usage = Usage.empty(build_index(snap.cluster))
    for r in snap.running:
        usage.allocate(r.alloc)
    for pods in snap.bound.values():
        usage.allocate(pods)
    return usage


def _busy(cluster, used: dict[str, int]) -> list[Running]:  # type: ignore[no-untyped-def]
    """Running one-node jobs holding the first `n` GPUs of each named node."""
    return [
        running(job(900 + k, gpus_per_node=n), cluster, {name: tuple(range(n))}, 0, cores=0)
        for k, (name, n) in enumerate(used.items())
    ]


def _decide(snap: Snapshot, name: str = "k8s-default"):  # type: ignore[no-untyped-def]
    return make_policy(name, build_index(snap.cluster)).schedule(snap, _usage(snap))


def test_least_allocated_takes_the_node_with_most_free_gpus() -> None:
    # n001 has 2 free, n002 6, n003 4: a 2-GPU pod scores 0, 50, 25 -> n002
    c = flat_cluster(3)
    snap = snapshot(c, [job(1, gpus_per_node=2)], running_jobs=_busy(c, {
        "n001": 6, "n002": 2, "n003": 4}))  # fmt: skip
    d = _decide(snap)
    assert [s.alloc.node_indices for s in d.starts] == [(1,)]


def test_ties_go_to_the_node_name() -> None:
    d = _decide(snapshot(flat_cluster(3), [job(1, gpus_per_node=8)]))
    assert d.starts[0].alloc.node_indices == (0,)


def test_equal_scores_then_the_name_decides() -> None:
    # 3 free of 8 everywhere: a 1-GPU pod scores floor(2/8*100) = 25 on each node
    c = flat_cluster(3)
    snap = snapshot(c, [job(1, gpus_per_node=1)], running_jobs=_busy(c, {
        "n001": 5, "n002": 5, "n003": 5}))  # fmt: skip
    assert _decide(snap).starts[0].alloc.node_indices == (0,)


def test_simultaneous_gangs_interleave_and_hold_pods() -> None:
    # seed 000: pod 0 of both jobs binds (one per node), pods 1 find no room
    c = flat_cluster(2)
    snap = snapshot(c, [job(1, nodes=2, gpus_per_node=8), job(2, nodes=2, gpus_per_node=8)])
    d = _decide(snap)
    assert d.starts == []
    assert {j: a.node_indices for j, a in d.binds.items()} == {1: (0,), 2: (1,)}
    assert d.pending[1].reason is Reason.RESOURCES and d.pending[2].reason is Reason.RESOURCES


def test_job_starts_when_its_last_pod_binds_with_all_its_pods() -> None:
    c = flat_cluster(2)
    j = job(1, nodes=2, gpus_per_node=8)
    bound = Allocation(1, (NodeAlloc(0, tuple(range(8)), (0,), 0),))
    snap = snapshot(c, [j])
    snap.bound = {1: bound}
    d = _decide(snap)
    assert d.binds == {}
    (start,) = d.starts
    assert start.alloc.node_indices == (0, 1)
    assert start.alloc.gpu_count == 16


def test_lower_submit_pods_first_then_pod_index() -> None:
    # job 2 submitted later: job 1's two pods both go first and it starts
    c = flat_cluster(2)
    snap = snapshot(c, [job(1, nodes=2, gpus_per_node=8), job(2, nodes=2, gpus_per_node=8,
                                                               submit=5)], now=5)  # fmt: skip
    d = _decide(snap)
    assert [s.job_id for s in d.starts] == [1]
    assert d.binds == {}


def test_spread_gpus_become_even_pods() -> None:
    # --gpus=12 on 8-GPU nodes: two pods of 6; LeastAllocated puts them apart
    d = _decide(snapshot(flat_cluster(2), [job(1, gpus=12)]))
    (start,) = d.starts
    assert sorted(len(na.gpus) for na in start.alloc.nodes) == [6, 6]


def test_two_pods_may_share_a_node() -> None:
    # two pods of 4 on a cluster whose other node is busy: both on n001, merged
    c = flat_cluster(2)
    snap = snapshot(c, [job(1, nodes=2, gpus_per_node=4)], running_jobs=_busy(c, {"n002": 8}))
    (start,) = _decide(snap).starts
    assert start.alloc.node_indices == (0,) and start.alloc.gpu_count == 8


def test_pods_on_a_down_node_are_evicted() -> None:
    c = flat_cluster(2)
    c.nodes[0].state = c.nodes[0].state.__class__.DOWN
    snap = snapshot(c, [job(1, nodes=2, gpus_per_node=8)])
    snap.bound = {1: Allocation(1, (NodeAlloc(0, tuple(range(8)), (), 0),))}
    usage = _usage(snap)
    d = K8sDefaultPolicy(build_index(c)).schedule(snap, usage)
    assert d.unbinds == [1]
    assert d.binds[1].node_indices == (1,)  # pod placed again on the node that is up


def test_limits_hold_the_second_job_back() -> None:
    from tide.model import Account, AccountTree, Limits

    c = flat_cluster(2)
    snap = snapshot(c, [job(1, gpus_per_node=8, account="a"), job(2, gpus_per_node=8,
                                                                   account="a")])  # fmt: skip
    snap.accounts = AccountTree(accounts={"a": Account("a", limits=Limits(
        grp_tres={"gres/gpu": 8}))})  # fmt: skip
    d = _decide(snap)
    assert [s.job_id for s in d.starts] == [1]
    assert d.pending[2].reason is Reason.ASSOC_GRP_GRES
    assert d.binds == {}
