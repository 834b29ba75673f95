"""Kueue-style quotas in the core (docs/preemption.md): the cohort arithmetic,
quota waits, fair sharing of borrowed quota, reclaim, the share view."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tide.model import Account, AccountTree, Job, Qos
from tide.model.quota import AccountQuota, Cohort, QuotaTree
from tide.model.sched_config import QueueOrder
from tide.sched import schedule
from tide.sched.quota import QuotaLedger, share_rows
from tide.sched.types import Reason, Running
from tide.testing.builders import flat_cluster, job, running, snapshot

CQ, LIMIT = Reason.COHORT_QUOTA, Reason.QUOTA_BORROWING_LIMIT


def accounts(*names: str, **parents: str) -> AccountTree:
    tree = AccountTree(qos={"normal": Qos("normal"), "low": Qos("low", grace_time=30)})
    for n in names:
        tree.accounts[n] = Account(n, parent=parents.get(n, "root"))
    return tree


def flat_tree() -> QuotaTree:
    # cohort pool: a 4, b 4 (borrowing limit 2), c 8 lending at most 2; d alone.
    # SQ(pool) = 4 + 4 + 2 = 10; c keeps 6 for itself.
    return QuotaTree(
        accounts={
            "a": AccountQuota("a", {"": 4}, "pool"),
            "b": AccountQuota("b", {"": 4}, "pool", borrowing_limit={"": 2}),
            "c": AccountQuota("c", {"": 8}, "pool", lending_limit={"": 2}),
            "d": AccountQuota("d", {"": 2}),
        },
        cohorts={"pool": Cohort("pool")},
    )


def ledger(tree: QuotaTree, used: dict[str, int]) -> QuotaLedger:
    led = QuotaLedger(tree, accounts("a", "b", "c", "d", "ml", "x", ml="a"))
    for acct, gpus in used.items():
        led.add(Job(0, job(0).request, account=acct), gpus)
    return led


def ask(led: QuotaLedger, account: str, gpus: int) -> Reason | None:
    return led.check(Job(1, job(1).request, account=account), gpus)


@pytest.mark.parametrize(
    ("used", "who", "gpus", "want"),
    [
        ({}, "a", 4, None),  # within nominal
        ({"a": 4}, "a", 2, None),  # borrows 2 of the pool's 10
        ({}, "a", 10, None),  # borrows all b lends and the 2 c lends
        ({}, "a", 11, CQ),  # c keeps 6 of its 8
        ({"a": 8, "b": 2}, "a", 1, CQ),  # 9 + 2 > 10
        ({"b": 6}, "b", 1, LIMIT),  # nominal 4 + borrowingLimit 2
        ({"a": 10, "c": 6}, "c", 2, CQ),  # c's lent 2 are in use: it must reclaim them
        ({"a": 4, "c": 6}, "c", 2, None),
        ({}, "d", 3, CQ),  # in no cohort: nothing to borrow
        ({}, "d", 2, None),
        ({"a": 4}, "ml", 6, None),  # ml is a's sub-account: a's quota, 4 + 6 = 10
        ({"a": 4}, "ml", 7, CQ),
        ({}, "x", 100, None),  # no quota in its lineage: not managed
    ],
)
def test_cohort_arithmetic(used, who, gpus, want) -> None:  # type: ignore[no-untyped-def]
    assert ask(ledger(flat_tree(), used), who, gpus) is want


def test_hierarchical_cohorts() -> None:
    # root <- left (a 4, b 4; left lends at most 2), right (c 8).
    # SQ(left) = 8, G(left) = 6; SQ(root) = 2 + 8 = 10.
    tree = QuotaTree(
        accounts={
            "a": AccountQuota("a", {"": 4}, "left"),
            "b": AccountQuota("b", {"": 4}, "left"),
            "c": AccountQuota("c", {"": 8}, "right"),
        },
        cohorts={
            "root": Cohort("root"),
            "left": Cohort("left", "root", lending_limit={"": 2}),
            "right": Cohort("right", "root"),
        },
    )
    assert ask(ledger(tree, {}), "a", 12) is None  # 8 of left + 4 from right
    assert ask(ledger(tree, {"c": 8}), "a", 9) is CQ  # right has nothing left to lend
    assert ask(ledger(tree, {"c": 8}), "a", 8) is None
    assert ask(ledger(tree, {"a": 8}), "c", 8) is None  # left lends 2 at most: c keeps 8
    assert ask(ledger(tree, {"a": 12}), "c", 5) is CQ  # c must reclaim its 4


def _quota_snap(cluster, pending, runs, tree, accts, **cfg):  # type: ignore[no-untyped-def]
    snap = snapshot(cluster, pending, now=1000.0, running_jobs=runs, order=QueueOrder.FCFS, **cfg)
    snap.accounts = accts
    snap.quotas = tree
    return snap


def _run(cluster, job_id: int, account: str, node: str, start: float = 0.0,  # type: ignore[no-untyped-def]
         gpus: tuple[int, ...] = tuple(range(8)), core: int = 0) -> Running:  # fmt: skip
    j = job(job_id, gpus_per_node=len(gpus), account=account, time=36000)
    j.qos = "low"
    r = running(j, cluster, {node: gpus}, start, cores=0)
    from dataclasses import replace

    return replace(r, alloc=replace(r.alloc, nodes=(replace(r.alloc.nodes[0], cores=(core,)),)))


def test_a_job_over_quota_waits_with_the_quota_reason() -> None:
    c = flat_cluster(2)
    tree = QuotaTree(accounts={"d": AccountQuota("d", {"": 4})})
    d = schedule(_quota_snap(c, [job(1, gpus_per_node=8, account="d")], [], tree, accounts("d")))
    assert d.starts == [] and d.pending[1].reason is Reason.COHORT_QUOTA
    assert str(Reason.COHORT_QUOTA) == "CohortQuota"


def test_the_lowest_weighted_share_borrows_first() -> None:
    # pool: lender L (16, idle), A and B (nominal 0, borrowing 4 each). 4 GPUs
    # free (x, without quota, holds 8). A's job comes first in FCFS order, but
    # with it A would borrow 8/16 (weight 1) against B's 8/16/3: B borrows.
    c = flat_cluster(3)
    tree = QuotaTree(
        accounts={
            "L": AccountQuota("L", {"": 16}, "pool"),
            "A": AccountQuota("A", {"": 0}, "pool"),
            "B": AccountQuota("B", {"": 0}, "pool", weight=3.0),
        },
        cohorts={"pool": Cohort("pool")},
    )
    runs = [_run(c, 11, "A", "n001", gpus=(0, 1, 2, 3)),
            _run(c, 12, "B", "n001", gpus=(4, 5, 6, 7), core=1),
            _run(c, 13, "x", "n002"), _run(c, 14, "x", "n003", gpus=(0, 1, 2, 3))]  # fmt: skip
    pend = [job(1, gpus_per_node=4, account="A", submit=1.0),
            job(2, gpus_per_node=4, account="B", submit=2.0)]  # fmt: skip
    snap = _quota_snap(c, pend, runs, tree, accounts("L", "A", "B", "x"))
    d = schedule(snap)
    assert [s.job_id for s in d.starts] == [2]
    tree.accounts["B"].weight = 0.5  # now B's share would be the larger one
    assert [s.job_id for s in schedule(snap).starts] == [1]
    tree.accounts["B"].weight = 3.0
    tree.fair_sharing = False  # borrowers in queue order
    assert [s.job_id for s in schedule(snap).starts] == [1]


def reclaim_case(policy: str = "Any"):  # type: ignore[no-untyped-def]
    # L and B have 8 each in one cohort on 16 GPUs; B runs two 8-GPU jobs (it
    # borrows L's 8). L's 8-GPU job is within L's nominal: B's cheaper job goes.
    c = flat_cluster(2)
    tree = QuotaTree(
        accounts={
            "L": AccountQuota("L", {"": 8}, "pool", reclaim_within_cohort=policy),
            "B": AccountQuota("B", {"": 8}, "pool"),
        },
        cohorts={"pool": Cohort("pool")},
    )
    runs = [_run(c, 21, "B", "n001", start=0.0), _run(c, 22, "B", "n002", start=100.0)]
    snap = _quota_snap(c, [job(1, gpus_per_node=8, account="L")], runs, tree, accounts("L", "B"))
    snap.last_checkpoint = {21: 990.0, 22: 500.0}
    return snap


def test_a_lender_reclaims_its_quota_from_the_cheapest_borrowed_job() -> None:
    d = schedule(reclaim_case())
    assert [(p.victim, p.preemptor, p.kind, p.mode, p.grace) for p in d.preemptions] == [
        (21, 1, "reclaim", "REQUEUE", 30)
    ]
    assert d.preemptions[0].lost_gpu_seconds == 8 * 10
    assert "account B borrows" in d.preemptions[0].reason
    assert d.starts == [] and d.pending[1].reason is Reason.COHORT_QUOTA


def test_no_reclaim_when_the_lender_says_never() -> None:
    assert schedule(reclaim_case("Never")).preemptions == []


def test_reclaim_counts_victims_already_told_to_go() -> None:
    snap = reclaim_case()
    snap.preempting = {21: 1}
    assert schedule(snap).preemptions == []


def test_share_rows() -> None:
    snap = reclaim_case()
    rows = {(r.name, r.kind): r for r in share_rows(snap.quotas, snap.running, snap.accounts)}
    b, lender, pool = rows[("B", "account")], rows[("L", "account")], rows[("pool", "cohort")]
    assert (b.nominal, b.in_use, b.borrowed, b.lent) == (8, 16, 8, 0)
    assert (lender.nominal, lender.in_use, lender.borrowed, lender.lent) == (8, 0, 0, 8)
    assert (pool.nominal, pool.in_use, pool.borrowed) == (0, 16, 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(0, 16), min_size=3, max_size=3),
    st.lists(st.one_of(st.none(), st.integers(0, 8)), min_size=3, max_size=3),
    st.lists(st.tuples(st.integers(0, 2), st.sampled_from([1, 2, 4, 8])), max_size=12),
)
def test_starts_never_break_the_quota(nominal, borrow, asks) -> None:  # type: ignore[no-untyped-def]
    c = flat_cluster(4)
    names = ["a", "b", "c"]
    tree = QuotaTree(
        accounts={n: AccountQuota(n, {"": q}, "pool",
                                  borrowing_limit={} if b is None else {"": b})
                  for n, q, b in zip(names, nominal, borrow, strict=True)},
        cohorts={"pool": Cohort("pool")},
    )  # fmt: skip
    pend = [job(i + 1, gpus_per_node=g, account=names[a], submit=float(i))
            for i, (a, g) in enumerate(asks)]  # fmt: skip
    d = schedule(_quota_snap(c, pend, [], tree, accounts(*names)))
    led = ledger(tree, {})
    by_id = {j.id: j for j in pend}
    for s in d.starts:
        j = by_id[s.job_id]
        assert led.check(j, s.alloc.gpu_count) is None
        led.add(j, s.alloc.gpu_count)
