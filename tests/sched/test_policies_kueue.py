"""kueue: ClusterQueues per account in one cohort, BestEffortFIFO admission,
borrowing, pods by the default scheduler, waitForPodsReady eviction."""

from __future__ import annotations

import pytest

from tide.model import Account, AccountTree, Job
from tide.sched.index import build_index
from tide.sched.policies.kueue import (
    ADMITTED,
    EVICTIONS,
    QUEUED_AT,
    REQUEUE_AT,
    KueuePolicy,
    nominal_quotas,
)
from tide.sched.state import Usage
from tide.sched.types import Decisions, Reason, Running, Snapshot
from tide.sim.engine import Engine
from tide.sim.workload.base import SimJob
from tide.testing.builders import flat_cluster, job, running, snapshot


def _tree(**shares: int) -> AccountTree:
    return AccountTree(accounts={a: Account(a, fairshare=s) for a, s in shares.items()})


def _usage(snap: Snapshot) -> Usage:
    usage = Usage.empty(build_index(snap.cluster))
    for r in snap.running:
        usage.allocate(r.alloc)
    for pods in snap.bound.values():
        usage.allocate(pods)
    return usage


def _decide(snap: Snapshot, **kw: object) -> Decisions:
    return KueuePolicy(build_index(snap.cluster), **kw).schedule(snap, _usage(snap))  # type: ignore[arg-type]


def _apply_meta(d: Decisions, jobs: list[Job]) -> None:
    for j in jobs:
        for k, v in d.meta.get(j.id, {}).items():
            if v is None:
                j.meta.pop(k, None)
            else:
                j.meta[k] = v


def _busy(cluster, used: dict[str, int], account: str = "b") -> list[Running]:  # type: ignore[no-untyped-def]
    return [
        running(
            job(900 + k, gpus_per_node=n, account=account),
            cluster,
            {name: tuple(range(n))},
            0,
            cores=0,
        )
        for k, (name, n) in enumerate(used.items())
    ]


# -- quotas ----------------------------------------------------------------------


def test_nominal_quotas_follow_shares_by_largest_remainder() -> None:
    # 128 x 0.5/0.3/0.2 = 64, 38.4, 25.6 -> 64, 38, 26
    tree = _tree(research=50, prod=30, students=20)
    assert nominal_quotas(tree, ["research", "prod", "students"], 128) == {
        "research": 64, "prod": 38, "students": 26}  # fmt: skip


def test_accounts_without_shares_get_equal_shares() -> None:
    # 16 / 3 = 5.33 each; the one extra GPU goes to the first name
    assert nominal_quotas(AccountTree(), ["c", "a", "b"], 16) == {"a": 6, "b": 5, "c": 5}


def test_unknown_account_gets_the_mean_known_share() -> None:
    # a: 0.75, b: 0.25, x unknown: 0.5 -> 16 x (0.5, 0.1667, 0.3333) = 8, 2.67, 5.33
    assert nominal_quotas(_tree(a=3, b=1), ["a", "b", "x"], 16) == {"a": 8, "b": 3, "x": 5}


# -- admission -------------------------------------------------------------------


def test_borrowing_admits_beyond_nominal_when_the_cohort_has_room() -> None:
    # a's nominal is 8 of 16; b is idle, so a's second 8-GPU job borrows b's quota
    c = flat_cluster(2)
    jobs = [job(1, gpus_per_node=8, account="a"), job(2, gpus_per_node=8, account="a")]
    snap = snapshot(c, jobs)
    snap.accounts = _tree(a=1, b=1)
    snap.running = _busy(c, {}, "b")
    d = _decide(snap)
    assert sorted(s.job_id for s in d.starts) == [1, 2]


def test_borrowing_limit_zero_keeps_a_within_nominal() -> None:
    c = flat_cluster(2)
    jobs = [job(1, gpus_per_node=8, account="a"), job(2, gpus_per_node=8, account="a"),
            job(3, gpus_per_node=1, account="b", submit=0)]  # fmt: skip
    snap = snapshot(c, jobs)
    snap.accounts = _tree(a=1, b=1)
    d = _decide(snap, borrowing_limit=0)
    assert sorted(s.job_id for s in d.starts) == [1, 3]
    assert d.pending[2].reason is Reason.ASSOC_GRP_GRES


def test_best_effort_fifo_does_not_block_behind_a_big_head() -> None:
    # b runs 8 GPUs; a's head needs 12 (the cohort has 8 left), its next needs 4
    c = flat_cluster(2)
    jobs = [job(1, gpus=12, account="a"), job(2, gpus_per_node=4, account="a", submit=1)]
    snap = snapshot(c, jobs, now=1, running_jobs=_busy(c, {"n001": 8}))
    snap.accounts = _tree(a=1, b=1)
    d = _decide(snap)
    assert [s.job_id for s in d.starts] == [2]
    assert d.pending[1].reason is Reason.RESOURCES
    strict = _decide(snap, strict_fifo=True)
    assert strict.starts == []


def test_workloads_within_nominal_go_before_borrowers() -> None:
    # a (nominal 8) already runs 8: its older head would borrow; b's newer head is
    # within b's nominal; room for one of them only -> b
    c = flat_cluster(3)
    jobs = [job(1, gpus_per_node=8, account="a"), job(2, gpus_per_node=8, account="b", submit=5)]
    snap = snapshot(c, jobs, now=5, running_jobs=_busy(c, {"n001": 8}, "a"))
    snap.accounts = _tree(a=1, b=1, z=1)  # 3 x 8 GPUs: nominal 8 each, z idle
    snap.running.append(
        running(job(950, gpus_per_node=8, account="z"), c, {"n002": tuple(range(8))}, 0, cores=0)
    )
    d = _decide(snap)
    assert [s.job_id for s in d.starts] == [2]


# -- waitForPodsReady -------------------------------------------------------------


def _fragmented() -> tuple[Snapshot, Job]:
    # n001 and n003 have 4 GPUs busy; B = 2 pods x 6 GPUs fits the quota (8 + 12
    # <= 24) but not the nodes: pod 0 binds on n002, pod 1 finds no 6 free GPUs
    c = flat_cluster(3)
    b = job(1, nodes=2, gpus_per_node=6, account="a")
    snap = snapshot(c, [b], running_jobs=_busy(c, {"n001": 4, "n003": 4}, "x"))
    snap.accounts = _tree(a=1, x=1)
    return snap, b


def test_admitted_pods_bind_without_gang_and_a_timeout_is_scheduled() -> None:
    snap, _ = _fragmented()
    d = _decide(snap)
    assert d.meta[1][ADMITTED] == 0
    assert d.binds[1].node_indices == (1,)
    assert d.starts == []
    assert d.wake == 300


def test_pods_not_ready_in_time_are_evicted_and_requeued_with_backoff() -> None:
    snap, b = _fragmented()
    policy = KueuePolicy(build_index(snap.cluster))
    d = policy.schedule(snap, _usage(snap))
    _apply_meta(d, [b])
    snap.bound = dict(d.binds)
    snap.now = 299.0
    assert policy.schedule(snap, _usage(snap)).unbinds == []
    snap.now = 300.0
    d = policy.schedule(snap, _usage(snap))
    assert d.unbinds == [1]
    meta = d.meta[1]
    assert meta[ADMITTED] is None and meta[EVICTIONS] == 1 and meta[QUEUED_AT] == 300
    assert 360 <= meta[REQUEUE_AT] <= 363  # 60 s plus at most 5% jitter
    assert d.wake == meta[REQUEUE_AT]
    _apply_meta(d, [b])
    snap.bound = {}
    snap.now = 330.0  # still backing off: not admitted again
    again = policy.schedule(snap, _usage(snap))
    assert again.binds == {} and ADMITTED not in again.meta.get(1, {})


@pytest.mark.parametrize(("n", "base"), [(1, 60), (2, 120), (3, 240), (6, 1920), (7, 3600),
                                         (12, 3600)])  # fmt: skip
def test_backoff_doubles_up_to_the_max(n: int, base: float) -> None:
    delay = KueuePolicy(build_index(flat_cluster(1))).backoff(7, n)
    assert base <= delay <= base * 1.05


@pytest.mark.parametrize(("block", "admitted"), [(True, False), (False, True)])
def test_block_admission_waits_for_the_admitted_workload(block: bool, admitted: bool) -> None:
    # B was admitted at 0 and one of its pods is still pending; job 3 arrives at 1
    snap, b = _fragmented()
    policy = KueuePolicy(build_index(snap.cluster), block_admission=block)
    d = policy.schedule(snap, _usage(snap))
    _apply_meta(d, [b])
    snap.bound = dict(d.binds)
    snap.pending.append(job(3, gpus_per_node=1, account="a", submit=1))
    snap.now = 1.0
    d = policy.schedule(snap, _usage(snap))
    assert (3 in d.meta) is admitted
    assert ([s.job_id for s in d.starts] == [3]) is admitted


def test_engine_evicts_requeues_and_finally_runs_the_workload() -> None:
    # X holds 4 GPUs of n001 for 1000 s; B (2 x 6 GPUs) binds one pod, times out
    # at 300, is requeued after backoff, and runs once X has ended
    c = flat_cluster(2)
    from tide.model import JobRequest

    def sim(i: int, submit: float, dur: float, nodes: int, gpn: int) -> SimJob:
        req = JobRequest(name=f"j{i}", nodes_min=nodes, nodes_max=nodes, gpus_per_node=gpn,
                         time_limit=7200)  # fmt: skip
        return SimJob(i, submit, dur, req, user="u", account="a")

    eng = Engine(c, snapshot(c, []).config, "kueue", accounts=_tree(a=1))
    out = eng.run([sim(1, 0, 1000, 1, 4), sim(2, 1, 100, 2, 6)])
    x, b = out.results
    assert x.start == 0 and x.end == 1000
    assert b.start is not None and b.start >= 1000 and b.state == "COMPLETED"
    assert b.held_idle_gpu_seconds > 0  # pod 0 held 6 GPUs idle while admitted
    assert not b.deadlocked
