"""volcano: gang (all pods or none), priority then creation, binpack."""

from __future__ import annotations

from tide.sched.index import build_index
from tide.sched.policies import make_policy
from tide.sched.state import Usage
from tide.sched.types import Reason, Running, Snapshot
from tide.testing.builders import flat_cluster, job, running, snapshot


def _busy(cluster, used: dict[str, int]) -> list[Running]:  # type: ignore[no-untyped-def]
    return [
        running(job(900 + k, gpus_per_node=n), cluster, {name: tuple(range(n))}, 0, cores=0)
        for k, (name, n) in enumerate(used.items())
    ]


def _decide(snap: Snapshot, name: str = "volcano"):  # type: ignore[no-untyped-def]
    ix = build_index(snap.cluster)
    usage = Usage.empty(ix)
    for r in snap.running:
        usage.allocate(r.alloc)
    return make_policy(name, ix).schedule(snap, usage)


def test_binpack_takes_the_fullest_node_that_fits() -> None:
    # n001 has 2 free, n002 6, n003 4: binpack puts a 2-GPU pod on n001
    # ((6+2)/8 = 1.0), LeastAllocated on n002
    c = flat_cluster(3)
    snap = snapshot(c, [job(1, gpus_per_node=2)], running_jobs=_busy(c, {
        "n001": 6, "n002": 2, "n003": 4}))  # fmt: skip
    assert _decide(snap).starts[0].alloc.node_indices == (0,)
    assert _decide(snap, "k8s-default").starts[0].alloc.node_indices == (1,)


def test_binpack_skips_a_node_that_does_not_fit() -> None:
    c = flat_cluster(3)
    snap = snapshot(c, [job(1, gpus_per_node=4)], running_jobs=_busy(c, {
        "n001": 6, "n002": 2, "n003": 4}))  # fmt: skip
    assert _decide(snap).starts[0].alloc.node_indices == (2,)


def test_gang_is_all_or_nothing() -> None:
    # one node free: a 2-pod gang binds nothing (k8s-default would hold a pod)
    c = flat_cluster(2)
    snap = snapshot(c, [job(1, nodes=2, gpus_per_node=8)], running_jobs=_busy(c, {"n002": 4}))
    d = _decide(snap)
    assert d.starts == [] and d.binds == {}
    assert d.pending[1].reason is Reason.RESOURCES
    assert _decide(snap, "k8s-default").binds[1].node_indices == (0,)


def test_simultaneous_gangs_start_one_after_the_other() -> None:
    c = flat_cluster(2)
    snap = snapshot(c, [job(1, nodes=2, gpus_per_node=8), job(2, nodes=2, gpus_per_node=8)])
    d = _decide(snap)
    assert [s.job_id for s in d.starts] == [1]
    assert d.binds == {}


def test_no_reservation_small_jobs_pass_a_waiting_gang() -> None:
    # the 2-node gang waits for n002; the 1-node job behind it takes n001 now
    c = flat_cluster(2)
    snap = snapshot(c, [job(1, nodes=2, gpus_per_node=8), job(2, gpus_per_node=8, submit=1)],
                    now=1, running_jobs=_busy(c, {"n002": 1}))  # fmt: skip
    d = _decide(snap)
    assert [s.job_id for s in d.starts] == [2]


def test_priority_before_creation() -> None:
    c = flat_cluster(1)
    snap = snapshot(c, [job(1, gpus_per_node=8), job(2, gpus_per_node=8, submit=1, priority=10)],
                    now=1)  # fmt: skip
    assert [s.job_id for s in _decide(snap).starts] == [2]
