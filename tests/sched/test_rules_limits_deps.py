"""Limits, dependencies, arrays and node filters, each with a hand-computed answer."""

from __future__ import annotations

import pytest

from tide.model import (
    Account,
    AccountTree,
    ArraySpec,
    Block,
    Dependency,
    DependencyItem,
    DependencyType,
    Limits,
    Qos,
    Topology,
    TopologyKind,
    UserAssoc,
)
from tide.sched import schedule
from tide.sched.types import Reason
from tide.testing.builders import flat_cluster, job, running, snapshot


def _tree(**acct_limits: Limits) -> AccountTree:
    tree = AccountTree()
    tree.accounts["nlp"] = Account("nlp", limits=acct_limits.get("nlp", Limits()))
    tree.users.append(UserAssoc("alice", "nlp", limits=acct_limits.get("alice", Limits())))
    tree.qos["high"] = Qos("high", priority=100, limits=acct_limits.get("high", Limits()))
    return tree


def _dep(kind: DependencyType, *ids: str, any_of: bool = False) -> Dependency:
    return Dependency((DependencyItem(kind, ids),), any_of=any_of)


@pytest.mark.parametrize(
    ("kind", "finished", "reason"),
    [
        (DependencyType.AFTEROK, {}, Reason.DEPENDENCY),
        (DependencyType.AFTEROK, {"7": "COMPLETED"}, None),
        (DependencyType.AFTEROK, {"7": "FAILED"}, Reason.DEPENDENCY_NEVER_SATISFIED),
        (DependencyType.AFTERNOTOK, {"7": "FAILED"}, None),
        (DependencyType.AFTERNOTOK, {"7": "COMPLETED"}, Reason.DEPENDENCY_NEVER_SATISFIED),
        (DependencyType.AFTERANY, {"7": "TIMEOUT"}, None),
        (DependencyType.AFTERANY, {}, Reason.DEPENDENCY),
    ],
)
def test_dependency_states(kind, finished, reason) -> None:  # type: ignore[no-untyped-def]
    # job 7 is either finished (as given) or still pending (held, so it never runs)
    c = flat_cluster(1)
    pend = [job(1, gpus_per_node=1, dependency=_dep(kind, "7"))]
    if not finished:
        pend.append(job(7, gpus_per_node=1, hold=True))
    snap = snapshot(c, pend)
    snap.finished = dict(finished)
    d = schedule(snap)
    got = d.pending[1].reason if 1 in d.pending else None
    assert got is reason


def test_after_is_satisfied_once_the_other_job_started() -> None:
    c = flat_cluster(2)
    first = running(job(7, gpus_per_node=1), c, {"n001": (0,)}, 0)
    d = schedule(
        snapshot(
            c,
            [job(1, gpus_per_node=1, dependency=_dep(DependencyType.AFTER, "7"))],
            running_jobs=[first],
        )
    )
    assert [s.job_id for s in d.starts] == [1]


def test_any_of_needs_one() -> None:
    c = flat_cluster(1)
    dep = Dependency(
        (
            DependencyItem(DependencyType.AFTEROK, ("7",)),
            DependencyItem(DependencyType.AFTEROK, ("8",)),
        ),
        any_of=True,
    )
    snap = snapshot(c, [job(1, gpus_per_node=1, dependency=dep)])
    snap.finished = {"7": "FAILED", "8": "COMPLETED"}
    assert [s.job_id for s in schedule(snap).starts] == [1]
    snap.finished = {"7": "FAILED", "8": "FAILED"}
    assert schedule(snap).pending[1].reason is Reason.DEPENDENCY_NEVER_SATISFIED


def test_singleton_waits_for_the_running_namesake() -> None:
    c = flat_cluster(2)
    same = job(7, gpus_per_node=1)
    same.request.name = "train"
    r = running(same, c, {"n001": (0,)}, 0)
    j = job(1, gpus_per_node=1, dependency=Dependency((DependencyItem(DependencyType.SINGLETON),)))
    j.request.name = "train"
    d = schedule(snapshot(c, [j], running_jobs=[r]))
    assert d.pending[1].reason is Reason.DEPENDENCY


def test_array_throttle_limits_running_tasks() -> None:
    c = flat_cluster(4)
    spec = ArraySpec(task_ids=(0, 1, 2, 3), max_running=2)
    tasks = []
    for t in range(4):
        j = job(10 + t, gpus_per_node=1, array=spec, submit=float(t))
        j.array_job_id, j.array_task_id = 10, t
        tasks.append(j)
    d = schedule(snapshot(c, tasks))
    assert [s.job_id for s in d.starts] == [10, 11]
    assert d.pending[12].reason is Reason.JOB_ARRAY_TASK_LIMIT


@pytest.mark.parametrize(
    ("limits", "qos", "reason"),
    [
        ({"nlp": Limits(grp_tres={"gres/gpu": 8})}, "normal", Reason.ASSOC_GRP_GRES),
        ({"nlp": Limits(grp_jobs=1)}, "normal", Reason.ASSOC_GRP_JOBS_LIMIT),
        ({"alice": Limits(max_jobs=1)}, "normal", Reason.ASSOC_MAX_JOBS_LIMIT),
        ({"high": Limits(max_tres_per_user={"gres/gpu": 8})}, "high", Reason.QOS_MAX_GRES_PER_USER),
        ({"high": Limits(grp_tres={"gres/gpu": 10})}, "high", Reason.QOS_GRP_GRES),
    ],
)
def test_limits_count_running_jobs(limits, qos, reason) -> None:  # type: ignore[no-untyped-def]
    # alice already runs 8 GPUs in account nlp (QOS as given); a 4-GPU job waits.
    c = flat_cluster(2)
    busy = job(9, gpus_per_node=8, account="nlp")
    busy.qos = qos
    r = running(busy, c, {"n001": tuple(range(8))}, 0)
    j = job(1, gpus_per_node=4, account="nlp")
    j.qos = qos
    snap = snapshot(c, [j], running_jobs=[r])
    snap.accounts = _tree(**limits)
    assert schedule(snap).pending[1].reason is reason


def test_limit_holds_within_one_cycle() -> None:
    c = flat_cluster(2)
    snap = snapshot(c, [job(k, gpus_per_node=4, account="nlp", submit=k) for k in (1, 2, 3)])
    snap.accounts = _tree(nlp=Limits(grp_tres={"gres/gpu": 8}))
    d = schedule(snap)
    assert [s.job_id for s in d.starts] == [1, 2]
    assert d.pending[3].reason is Reason.ASSOC_GRP_GRES


def test_max_wall_is_a_static_reason() -> None:
    c = flat_cluster(1)
    snap = snapshot(c, [job(1, gpus_per_node=1, time=7200, account="nlp")])
    snap.accounts = _tree(alice=Limits(max_wall=3600))
    assert schedule(snap).pending[1].reason is Reason.ASSOC_MAX_WALL


def test_node_weight_comes_first() -> None:
    c = flat_cluster(3)
    c.nodes[0].weight, c.nodes[1].weight, c.nodes[2].weight = 10, 1, 5
    d = schedule(snapshot(c, [job(1, gpus_per_node=1)]))
    assert d.starts[0].alloc.nodes[0].node == 1


def test_exclusive_takes_a_whole_idle_node() -> None:
    c = flat_cluster(2)
    r = running(job(9, gpus_per_node=1), c, {"n001": (0,)}, 0)
    d = schedule(snapshot(c, [job(1, gpus_per_node=1, exclusive=True)], running_jobs=[r]))
    na = d.starts[0].alloc.nodes[0]
    assert na.node == 1 and len(na.gpus) == 8 and len(na.cores) == 32


@pytest.mark.parametrize(
    ("kw", "mem"),
    [
        ({}, 512_000),  # asked for none: all of it
        ({"mem_per_node": 65_536}, 65_536),  # --mem=64G: what it asked for, as Slurm
        ({"mem_per_cpu": 1_024}, 32 * 1_024),  # per CPU, on every CPU of the node
        ({"mem_per_gpu": 10_000}, 8 * 10_000),  # per GPU, on every GPU of the node
        ({"mem_per_cpu": 20_000}, 512_000),  # 8 x 20,000 fits; 32 x 20,000: all there is
    ],
)
def test_exclusive_memory_is_what_was_asked_else_the_whole_node(kw, mem) -> None:  # type: ignore[no-untyped-def]
    """Slurm 22.05 (cons_tres): sbatch --exclusive -c8 --mem=64G holds 64G, not the node's
    500G; with no memory option it holds all of it."""
    c = flat_cluster(1)  # 32 CPUs, 8 GPUs, 512,000 MB
    d = schedule(snapshot(c, [job(1, nodes=1, cpus_per_task=8, exclusive=True, **kw)]))
    na = d.starts[0].alloc.nodes[0]
    assert (len(na.cores), na.mem) == (32, mem)


@pytest.mark.parametrize(
    ("kw", "want"),
    [
        ({"constraint": "ib"}, [1]),
        ({"constraint": "ib&fast"}, []),
        ({"constraint": "ib|fast"}, [0, 1]),
        ({"nodelist": ("n001",)}, [0]),
        ({"exclude": ("n001",)}, [1]),
    ],
)
def test_node_filters(kw, want) -> None:  # type: ignore[no-untyped-def]
    c = flat_cluster(2)
    c.nodes[0].features = ("fast",)
    c.nodes[1].features = ("ib",)
    d = schedule(snapshot(c, [job(1, gpus_per_node=8, **kw)]))
    got = [na.node for s in d.starts for na in s.alloc.nodes]
    if want:
        assert got[0] in want
    else:
        assert d.pending[1].reason is Reason.BAD_CONSTRAINTS


def test_gpu_type_must_match() -> None:
    c = flat_cluster(2)
    for g in c.nodes[1].gpus:
        g.type = "h100"
    d = schedule(snapshot(c, [job(1, gpus_per_node=2, gpu_type="h100")]))
    assert d.starts[0].alloc.nodes[0].node == 1


def test_block_topology_keeps_a_job_in_one_block() -> None:
    # blocks of 2 nodes: b1 = n001,n002 (n001 busy), b2 = n003,n004 (free).
    c = flat_cluster(4)
    c.topology = Topology(
        TopologyKind.BLOCK,
        blocks=[Block("b1", ("n001", "n002")), Block("b2", ("n003", "n004"))],
        block_sizes=(2, 4),
    )
    r = running(job(9, gpus_per_node=8), c, {"n001": tuple(range(8))}, 0)
    d = schedule(snapshot(c, [job(1, nodes=2, gpus_per_node=8)], running_jobs=[r]))
    assert sorted(na.node for na in d.starts[0].alloc.nodes) == [2, 3]


def test_array_throttle_shows_behind_a_blocked_job() -> None:
    """Slurm gives JobArrayTaskLimit to every throttled task, even those queued
    behind a job that waits for Resources (real squeue in tests/data/slurm_cli)."""
    c = flat_cluster(4)
    spec = ArraySpec(task_ids=(0, 1, 2, 3), max_running=2)
    tasks = []
    for t in range(4):
        j = job(10 + t, gpus_per_node=1, array=spec, submit=1.0)
        j.array_job_id, j.array_task_id = 10, t
        tasks.append(j)
    runs = [running(tasks[t], c, {f"n00{t + 1}": (0,)}, 0) for t in (0, 1)]
    big = job(1, nodes=4, gpus_per_node=8, submit=0.0)
    snap = snapshot(c, [big, tasks[2], tasks[3]], running_jobs=runs)
    snap.backfill = False  # a main pass between two backfill passes
    d = schedule(snap)
    assert d.starts == []
    assert d.pending[1].reason is Reason.RESOURCES
    assert d.pending[12].reason is d.pending[13].reason is Reason.JOB_ARRAY_TASK_LIMIT


@pytest.mark.parametrize(("max_time", "runs"), [(None, True), (3600, False)])
def test_no_time_limit_runs_only_where_the_partition_has_no_maxtime(
    max_time: int | None, runs: bool
) -> None:
    """--time=0/UNLIMITED (TIME_INFINITE) is longer than any MaxTime: in a partition
    with one the job pends (PartitionTimeLimit, as sbatch(1) says of a limit over
    the partition's), in one without it runs; never the partition's DefaultTime."""
    from dataclasses import replace

    from tide.defaults import TIME_INFINITE

    c = flat_cluster(1)
    c.partitions[0] = replace(c.partitions[0], max_time=max_time, default_time=600)
    d = schedule(snapshot(c, [job(1, gpus_per_node=1, time=TIME_INFINITE)]))
    if runs:
        assert [s.job_id for s in d.starts] == [1]
    else:
        assert d.starts == [] and d.pending[1].reason is Reason.PARTITION_TIME_LIMIT
