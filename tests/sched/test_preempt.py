"""Preemption in the core (docs/preemption.md): rules, victim choice by lost
work with topology and binding, hand-computed answers; hypothesis invariants."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tide.model import AccountTree, Job, Partition, Qos
from tide.model.sched_config import BackfillMode
from tide.sched import schedule
from tide.sched.cycle import CycleMemo, open_cycle
from tide.sched.eligibility import build_context
from tide.sched.index import build_index
from tide.sched.placement import Free, concrete, select_nodes
from tide.sched.preempt_rules import Rules, main_mode, slurm_seconds
from tide.sched.scheduler import Scheduler
from tide.sched.types import Allocation, NodeAlloc, Reason, Running, Snapshot
from tide.testing.builders import flat_cluster, job, running, snapshot, tree_cluster


def qos_tree(**low: object) -> AccountTree:
    return AccountTree(
        qos={
            "normal": Qos("normal"),
            "low": Qos("low", **low),  # type: ignore[arg-type]
            "high": Qos("high", priority=100, preempt=("low",)),
        }
    )


def low_job(cluster, job_id: int, placement: dict[str, tuple[int, ...]], start: float = 0.0,
            qos: str = "low", cores: int = 0) -> Running:  # type: ignore[no-untyped-def]
    gpus = len(next(iter(placement.values())))
    j = job(job_id, gpus_per_node=gpus, time=36000)
    j.qos = qos
    return running(j, cluster, placement, start, cores=cores)


def high_job(job_id: int, **kw: object) -> Job:
    j = job(job_id, time=3600, **kw)  # type: ignore[arg-type]
    j.qos = "high"
    return j


def preempt_snap(cluster, pending, runs, now=1000.0, checkpoints=None, accounts=None,
                 **cfg: object) -> Snapshot:  # type: ignore[no-untyped-def]
    cfg.setdefault("preempt_type", "preempt/qos")
    cfg.setdefault("preempt_mode", "REQUEUE")
    snap = snapshot(cluster, pending, now=now, running_jobs=runs, **cfg)
    snap.accounts = accounts or qos_tree()
    snap.last_checkpoint = checkpoints or {}
    return snap


def victims(d) -> set[int]:  # type: ignore[no-untyped-def]
    return {p.victim for p in d.preemptions}


EIGHT = tuple(range(8))


# --- rules ---------------------------------------------------------------------


def test_rule_words() -> None:
    assert main_mode("SUSPEND,GANG") == "SUSPEND"
    assert main_mode("requeue") == "REQUEUE"
    assert main_mode("GANG") == "OFF"
    assert main_mode("") == ""
    assert slurm_seconds("10") == 600  # minutes, as Slurm reads a bare number
    assert slurm_seconds("01:30") == 90
    assert slurm_seconds("1:00:00") == 3600
    assert slurm_seconds("1-02") == 93600
    assert slurm_seconds("UNLIMITED") is None


# --- victim choice -------------------------------------------------------------------


def four_full_nodes(c):  # type: ignore[no-untyped-def]
    return [low_job(c, 11, {"gpu001": EIGHT}), low_job(c, 12, {"gpu002": EIGHT}),
            low_job(c, 13, {"gpu003": EIGHT}), low_job(c, 14, {"gpu004": EIGHT})]  # fmt: skip


# Leaves leaf1 = gpu001-002 and leaf2 = gpu003-004, every node full with one
# 8-GPU low job. Lost work at t=1000 (GPUs x seconds since the checkpoint):
# 11: 8 x 100 = 800, 12: 800, 13: 8 x 10 = 80, 14: 8 x 900 = 7200.
CHECKPOINTS = {11: 900.0, 12: 900.0, 13: 990.0, 14: 100.0}


def test_16_gpu_job_with_switches_1_frees_a_whole_leaf_not_a_scattered_set() -> None:
    # One leaf: leaf1 costs 800 + 800 = 1600, leaf2 80 + 7200 = 7280. The two
    # cheapest victims (13 and 11, 880) sit on different leaves: worthless here.
    c = tree_cluster([2, 2])
    p = high_job(1, nodes=2, gpus_per_node=8, switches=1)
    d = schedule(preempt_snap(c, [p], four_full_nodes(c), checkpoints=CHECKPOINTS))
    assert victims(d) == {11, 12}
    assert d.starts == []  # the preemptor waits for the victims' resources
    assert sorted(d.pending[1].planned_nodes) == [0, 1]
    assert {p.lost_gpu_seconds for p in d.preemptions} == {800.0}
    assert all(p.preemptor == 1 and p.mode == "REQUEUE" for p in d.preemptions)


def test_without_a_topology_constraint_the_cheapest_set_spans_leaves() -> None:
    c = tree_cluster([2, 2])
    p = high_job(1, nodes=2, gpus_per_node=8)
    d = schedule(preempt_snap(c, [p], four_full_nodes(c), checkpoints=CHECKPOINTS))
    assert victims(d) == {11, 13}  # 800 + 80; 11 before 12 on the id tie


def test_equal_priority_candidates_with_the_latest_checkpoints_go() -> None:
    # One node, four 2-GPU low jobs all started at 0; a 4-GPU job needs two.
    # Lost work: 21: 2 x 500, 22: 2 x 50, 23: 2 x 300, 24: 2 x 20 -> 24 and 22.
    c = flat_cluster(1)
    runs = [low_job(c, 20 + k, {"n001": (2 * k - 2, 2 * k - 1)}, cores=1) for k in range(1, 5)]
    runs = [replace(r, alloc=Allocation(r.job.id, (replace(r.alloc.nodes[0], cores=(k,)),)))
            for k, r in enumerate(runs)]  # fmt: skip
    ck = {21: 500.0, 22: 950.0, 23: 700.0, 24: 980.0}
    d = schedule(preempt_snap(c, [high_job(1, gpus_per_node=4)], runs, checkpoints=ck))
    assert victims(d) == {22, 24}
    assert sum(p.lost_gpu_seconds for p in d.preemptions) == 2 * 50 + 2 * 20


def test_slurm_order_takes_the_plugins_order_regardless_of_checkpoints() -> None:
    c = flat_cluster(1)
    runs = [low_job(c, 20 + k, {"n001": (2 * k - 2, 2 * k - 1)}, start=10.0 * k)
            for k in range(1, 5)]  # fmt: skip
    runs = [replace(r, alloc=Allocation(r.job.id, (replace(r.alloc.nodes[0], cores=(k,)),)))
            for k, r in enumerate(runs)]  # fmt: skip
    ck = {21: 500.0, 22: 950.0, 23: 700.0, 24: 980.0}
    snap = preempt_snap(c, [high_job(1, gpus_per_node=4)], runs, checkpoints=ck)
    d = Scheduler(build_index(c), victim_order="priority").schedule(snap)
    assert victims(d) == {21, 22}  # equal QOS and node count: the job list's first two
    snap.config.preempt_youngest_first = True
    d = Scheduler(build_index(c), victim_order="priority").schedule(snap)
    assert victims(d) == {23, 24}  # started 30 and 40: the youngest


def test_binding_preempts_on_the_socket_whose_cores_are_free() -> None:
    # 8 GPUs, GPUs 0-3 on socket 0 (cores 0-15), 4-7 on socket 1 (cores 16-31).
    # A normal (not preemptable) job holds every core of socket 1. Victim 31 on
    # GPUs 4-7 is cheap (lost 4 x 10) but frees GPUs whose cores are taken; a
    # job with --gres-flags=enforce-binding needs 32 on GPUs 0-3 (lost 4 x 500).
    c = flat_cluster(1)
    cpu = Running(job(30, time=36000), Allocation(30, (NodeAlloc(0, (), tuple(range(16, 32))),)),
                  0.0, 36000.0)  # fmt: skip
    v31 = low_job(c, 31, {"n001": (4, 5, 6, 7)}, cores=0)
    v32 = low_job(c, 32, {"n001": (0, 1, 2, 3)}, cores=0)
    p = high_job(1, gpus_per_node=4, enforce_binding=True, cpus_per_task=4)
    snap = preempt_snap(c, [p], [cpu, v31, v32], checkpoints={31: 990.0, 32: 500.0})
    d = schedule(snap)
    assert victims(d) == {32}


def test_exempt_unlisted_and_suspended_jobs_are_never_touched() -> None:
    c = flat_cluster(1)
    young = low_job(c, 41, {"n001": (0, 1, 2, 3)}, start=950.0)  # ran 50 s < 60 s exempt
    normal = low_job(c, 42, {"n001": (4, 5, 6, 7)}, qos="normal")
    d = schedule(preempt_snap(c, [high_job(1, gpus_per_node=4)], [young, normal],
                              accounts=qos_tree(preempt_exempt_time=60)))  # fmt: skip
    assert d.preemptions == []
    snap = preempt_snap(c, [high_job(1, gpus_per_node=4)], [young, normal])
    snap.config.extra["PreemptExemptTime"] = "00:00:30"  # global: 50 s > 30 s, preemptable
    assert victims(schedule(snap)) == {41}
    young.job.state = young.job.state.__class__.SUSPENDED
    assert schedule(snap).preemptions == []


def test_no_preemption_unless_configured() -> None:
    c = flat_cluster(1)
    runs = [low_job(c, 41, {"n001": EIGHT})]
    d = schedule(preempt_snap(c, [high_job(1, gpus_per_node=4)], runs, preempt_type="preempt/none"))
    assert d.preemptions == []
    assert d.pending[1].reason is Reason.RESOURCES


def test_partition_prio_preempts_lower_tiers_with_their_mode_and_grace() -> None:
    c = flat_cluster(2)
    names = tuple(n.name for n in c.nodes)
    c.partitions = [
        Partition("urgent", names, priority_tier=2),
        Partition("batch", names, default=True, priority_tier=1, preempt_mode="CANCEL",
                  grace_time=300),
        Partition("other", names, priority_tier=2),
    ]  # fmt: skip
    runs = [low_job(c, 51, {"n001": EIGHT}, qos="normal"),
            low_job(c, 52, {"n002": EIGHT}, qos="normal")]  # fmt: skip
    runs[0].job.partition = "batch"
    runs[1].job.partition = "other"  # same tier as urgent: untouchable
    p = job(1, gpus_per_node=8, partitions=("urgent",))
    snap = preempt_snap(c, [p], runs, checkpoints={51: 400.0},
                        preempt_type="preempt/partition_prio")  # fmt: skip
    d = schedule(snap)
    assert [(x.victim, x.mode, x.grace, x.kind, x.lost_gpu_seconds) for x in d.preemptions] == [
        (51, "CANCEL", 300, "partition", 8 * 600.0)
    ]
    assert "PriorityTier 2" in d.preemptions[0].reason


def test_requeue_of_a_job_that_may_not_be_requeued_is_a_cancel() -> None:
    c = flat_cluster(1)
    v = low_job(c, 41, {"n001": EIGHT})
    v.job.request.requeue = False
    d = schedule(preempt_snap(c, [high_job(1, gpus_per_node=8)], [v]))
    assert [(x.victim, x.mode) for x in d.preemptions] == [(41, "CANCEL")]


def test_suspend_frees_cores_only() -> None:
    # The victim suspended keeps its GPUs: useless to a job short of GPUs,
    # enough for one short of cores.
    c = flat_cluster(1)
    acc = qos_tree(preempt_mode="SUSPEND")
    v = low_job(c, 41, {"n001": (0, 1)}, cores=32)
    d = schedule(preempt_snap(c, [high_job(1, gpus_per_node=8)], [v], accounts=acc))
    assert d.preemptions == []
    p = high_job(1, gpus_per_node=4, cpus_per_task=8)
    d = schedule(preempt_snap(c, [p], [v], accounts=acc))
    assert [(x.victim, x.mode, x.grace, x.lost_gpu_seconds) for x in d.preemptions] == [
        (41, "SUSPEND", 0, 0.0)
    ]


def test_victims_told_to_go_count_as_released_and_are_not_chosen_again() -> None:
    c = flat_cluster(1)
    runs = [low_job(c, 41, {"n001": (0, 1, 2, 3)}), low_job(c, 42, {"n001": (4, 5, 6, 7)})]
    runs = [replace(r, alloc=Allocation(r.job.id, (replace(r.alloc.nodes[0], cores=(k,)),)))
            for k, r in enumerate(runs)]  # fmt: skip
    snap = preempt_snap(c, [high_job(1, gpus_per_node=4)], runs)
    snap.preempting = {41: 1}
    d = schedule(snap)
    assert d.preemptions == [] and d.starts == []
    snap.preempting = {41: 7}  # told to go for another job: 1 needs 42
    assert victims(schedule(snap)) == {42}


def test_the_free_part_of_the_preemptors_place_is_held_this_cycle() -> None:
    # n001 free, n002 full of a low job. The 2-node high job preempts it and
    # waits; a small job of another partition on n001 must not start there.
    c = flat_cluster(2)
    names = tuple(n.name for n in c.nodes)
    c.partitions = [Partition("gpu", names, default=True), Partition("side", ("n001",))]
    p = high_job(1, nodes=2, gpus_per_node=8)
    q = job(2, gpus_per_node=1, partitions=("side",))
    d = schedule(preempt_snap(c, [p, q], [low_job(c, 41, {"n002": EIGHT})]))
    assert victims(d) == {41}
    assert d.starts == []


# --- properties ----------------------------------------------------------------------


def _fits_without(snap: Snapshot, job_id: int, gone: set[int]) -> bool:
    """The preemptor's whole gang fits once `gone` left (placement and binding)."""
    ix = build_index(snap.cluster)
    rest = replace(snap, running=[r for r in snap.running if r.job.id not in gone])
    cyc = open_cycle(rest, ix, None, CycleMemo())
    j = next(j for j in snap.pending if j.id == job_id)
    ctx = build_context(j, rest, ix, cyc.usage, cyc.limits)
    u = cyc.usage
    for elig in ctx.eligible:
        pick = select_nodes(ix, Free(u.free_gpus, u.free_cores, u.free_mem), ctx.shape, elig,
                            ctx.max_leaves(snap.now))  # fmt: skip
        binding = ctx.shape.enforce_binding or ctx.shape.cpus_per_gpu > 0
        if pick and all(concrete(ix, u.gpu_mask, u.core_mask, p, binding) for p in pick.nodes):
            return True
    return False


@st.composite
def scenes(draw):  # type: ignore[no-untyped-def]
    leaves = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    c = tree_cluster(leaves)
    rng = np.random.default_rng(draw(st.integers(0, 10_000)))
    runs, jid = [], 100
    for i, node in enumerate(c.nodes):
        free = list(range(8))
        while free and rng.random() < 0.8:
            k = int(rng.integers(1, len(free) + 1))
            gpus, free = tuple(free[:k]), free[k:]
            jid += 1
            qos = ("low", "normal", "high")[int(rng.integers(0, 3))]
            r = low_job(c, jid, {node.name: gpus}, start=float(rng.integers(0, 900)), qos=qos)
            core = 16 * (gpus[0] // 4) + len(runs) % 16
            runs.append(replace(r, alloc=Allocation(jid, (NodeAlloc(i, gpus, (core,)),))))
    ck = {r.job.id: float(rng.integers(int(r.start), 1000)) for r in runs if rng.random() < 0.7}
    n = draw(st.integers(1, max(1, len(c.nodes))))
    kw = {"nodes": n, "gpus_per_node": draw(st.sampled_from([1, 2, 4, 8]))}
    if draw(st.booleans()):
        kw["switches"] = 1
    order = draw(st.sampled_from(["lost_work", "priority"]))
    exempt = draw(st.sampled_from([None, 100, 500]))
    return c, runs, ck, kw, order, exempt


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes())
def test_after_any_preemption_the_preemptor_fits_and_no_protected_job_was_touched(scene) -> None:  # type: ignore[no-untyped-def]
    c, runs, ck, kw, order, exempt = scene
    acc = qos_tree(preempt_exempt_time=exempt)
    snap = preempt_snap(c, [high_job(1, **kw)], runs, checkpoints=ck, accounts=acc,
                        backfill=BackfillMode.NONE)  # fmt: skip
    d = Scheduler(build_index(c), victim_order=order).schedule(snap)
    gone = victims(d)
    if not gone:
        return
    assert d.starts == []
    assert _fits_without(snap, 1, gone)
    by_id = {r.job.id: r for r in runs}
    rules = Rules.of(snap.config)
    for v in gone:
        r = by_id[v]
        assert r.job.qos == "low"  # only what QOS high lists; never normal or high
        assert not rules.is_exempt(acc, r, snap.now)
    if order == "lost_work":  # never more than needed
        for v in gone:
            assert not _fits_without(snap, 1, gone - {v})
