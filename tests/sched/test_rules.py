"""Table-driven checks of the core's rules, each with a hand-computed answer."""

from __future__ import annotations

import pytest

from tide.model import Reservation
from tide.model.sched_config import BackfillMode
from tide.sched import schedule
from tide.sched.types import Reason
from tide.testing.builders import flat_cluster, job, running, snapshot, tree_cluster


def names(cluster, start):  # type: ignore[no-untyped-def]
    return [cluster.nodes[n.node].name for n in start.alloc.nodes]


def test_three_node_job_takes_the_leaf_with_three_free_nodes() -> None:
    # leaf1 has 3 nodes, leaf2 has 4: best fit is leaf1, not 2+1 across leaves.
    c = tree_cluster([3, 4])
    d = schedule(snapshot(c, [job(1, nodes=3, gpus_per_node=8)]))
    assert names(c, d.starts[0]) == ["gpu001", "gpu002", "gpu003"]
    assert d.starts[0].leaf_switches == 1


def test_job_spanning_leaves_uses_fewest_leaves_fullest_first() -> None:
    # 5 nodes: leaf2 (4) whole, remainder 1 on leaf1 (best fit for 1).
    c = tree_cluster([3, 4])
    d = schedule(snapshot(c, [job(1, nodes=5, gpus_per_node=8)]))
    assert names(c, d.starts[0]) == ["gpu001", "gpu004", "gpu005", "gpu006", "gpu007"]
    assert d.starts[0].leaf_switches == 2


def test_lowest_switch_wins_over_spreading_across_spines() -> None:
    # leaves of 2 nodes; spine1 = leaf1+leaf2, spine2 = leaf3+leaf4. A 4-node job
    # fits under one spine; it must not take 2 leaves from different spines.
    c = tree_cluster([2, 2, 2, 2], spines=2)
    busy = running(job(99, nodes=1, gpus_per_node=8), c, {"gpu001": tuple(range(8))}, 0)
    d = schedule(snapshot(c, [job(1, nodes=4, gpus_per_node=8)], running_jobs=[busy]))
    assert names(c, d.starts[0]) == ["gpu005", "gpu006", "gpu007", "gpu008"]


@pytest.mark.parametrize(
    ("busy", "want"),
    [
        ((), (0, 1, 2, 3)),  # empty node: the first NVLink quad on socket 0
        ((0, 1), (4, 5, 6, 7)),  # socket 0 broken up: the whole quad on socket 1
        ((0, 4), (2, 3, 6, 7)) if False else ((0,), (4, 5, 6, 7)),  # connected quad only on s1
    ],
)
def test_four_gpus_take_a_connected_quad_on_one_socket(busy, want) -> None:  # type: ignore[no-untyped-def]
    c = flat_cluster(1)
    run = [running(job(9, gpus_per_node=len(busy)), c, {"n001": busy}, 0)] if busy else []
    d = schedule(snapshot(c, [job(1, gpus_per_node=4)], running_jobs=run))
    assert d.starts[0].alloc.nodes[0].gpus == want


def test_two_gpus_prefer_an_nvlink_pair_on_the_fuller_socket() -> None:
    # socket 0 has GPUs 2,3 free (a pair); socket 1 has 4 free. Best fit: socket 0.
    c = flat_cluster(1)
    run = [running(job(9, gpus_per_node=2), c, {"n001": (0, 1)}, 0)]
    d = schedule(snapshot(c, [job(1, gpus_per_node=2)], running_jobs=run))
    assert d.starts[0].alloc.nodes[0].gpus == (2, 3)


def test_enforce_binding_takes_cores_from_the_gpus_socket() -> None:
    c = flat_cluster(1)
    d = schedule(snapshot(c, [job(1, gpus_per_node=4, cpus_per_task=8, enforce_binding=True)]))
    na = d.starts[0].alloc.nodes[0]
    assert na.gpus == (0, 1, 2, 3)
    assert all(core < 16 for core in na.cores) and len(na.cores) == 8


def test_enforce_binding_rejects_a_node_whose_gpu_socket_lacks_cores() -> None:
    # socket 0's 16 cores are taken; GPUs 0-3 (socket 0) are free, GPUs 4-7 busy.
    c = flat_cluster(1)
    hog = running(job(9, gpus_per_node=4), c, {"n001": (4, 5, 6, 7)}, 0, cores=16)
    d = schedule(
        snapshot(
            c, [job(1, gpus_per_node=4, cpus_per_task=4, enforce_binding=True)], running_jobs=[hog]
        )
    )
    assert d.starts == []
    assert d.pending[1].reason is Reason.RESOURCES


def _backfill_scene(mode: BackfillMode):  # type: ignore[no-untyped-def]
    # 4 one-GPU nodes. n1,n2 busy until 100, n3 busy until 200, n4 free.
    # J1 (2 nodes, 100 s) is reserved at t=100 on n1,n2; J2 (4 nodes) at t=200.
    # J3 (1 node, 300 s) fits on n4 now without touching J1 but would delay J2.
    c = flat_cluster(4, gpus=1)
    r1 = running(job(91, nodes=2, gpus_per_node=1, time=100), c, {"n001": (0,), "n002": (0,)}, 0)
    r2 = running(job(92, nodes=1, gpus_per_node=1, time=200), c, {"n003": (0,)}, 0)
    pend = [
        job(1, nodes=2, gpus_per_node=1, time=100, submit=1),
        job(2, nodes=4, gpus_per_node=1, time=100, submit=2),
        job(3, nodes=1, gpus_per_node=1, time=300, submit=3),
    ]
    from tide.model.sched_config import QueueOrder

    return c, schedule(
        snapshot(c, pend, now=10, running_jobs=[r1, r2], backfill=mode, order=QueueOrder.FCFS)
    )


def test_conservative_backfill_keeps_the_second_reservation() -> None:
    _, d = _backfill_scene(BackfillMode.CONSERVATIVE)
    assert d.starts == []
    assert d.pending[1].planned_start == 100
    assert d.pending[2].planned_start == 200
    assert d.pending[3].planned_start == 300


def test_easy_backfill_starts_the_small_job() -> None:
    _, d = _backfill_scene(BackfillMode.EASY)
    assert [s.job_id for s in d.starts] == [3]
    assert d.starts[0].backfilled
    assert d.pending[1].planned_start == 100


def test_no_backfill_starts_nothing_behind_the_blocked_job() -> None:
    _, d = _backfill_scene(BackfillMode.NONE)
    assert d.starts == []
    assert d.pending[1].reason is Reason.RESOURCES
    assert d.pending[2].reason is Reason.PRIORITY


def test_switches_wait_then_spread() -> None:
    # Two leaves of 2 nodes, one node busy in each: no single leaf has 2 free.
    c = tree_cluster([2, 2])
    busy = [
        running(job(91, nodes=1, gpus_per_node=8, time=10_000), c, {"gpu001": tuple(range(8))}, 0),
        running(job(92, nodes=1, gpus_per_node=8, time=10_000), c, {"gpu003": tuple(range(8))}, 0),
    ]
    j = job(1, nodes=2, gpus_per_node=8, switches=1, switches_wait=600)
    j.eligible = 0.0
    d = schedule(snapshot(c, [j], now=300, running_jobs=busy))
    assert d.starts == [] and d.pending[1].reason is Reason.RESOURCES
    d = schedule(snapshot(c, [j], now=601, running_jobs=busy))
    assert names(c, d.starts[0]) == ["gpu002", "gpu004"]
    assert not d.starts[0].switches_satisfied
    assert d.starts[0].leaf_switches == 2


def test_gang_is_all_or_nothing() -> None:
    c = flat_cluster(2, gpus=8)
    busy = running(job(91, gpus_per_node=1, time=500), c, {"n001": (0,)}, 0)
    d = schedule(snapshot(c, [job(1, nodes=2, gpus_per_node=8)], running_jobs=[busy]))
    assert d.starts == []
    assert d.pending[1].planned_start == 500


def test_node_range_takes_the_most_that_fits() -> None:
    c = flat_cluster(4, gpus=8)
    busy = running(job(91, gpus_per_node=8), c, {"n004": tuple(range(8))}, 0)
    j = job(1, gpus_per_node=8)
    j.request.nodes_min, j.request.nodes_max = 2, 6
    d = schedule(snapshot(c, [j], running_jobs=[busy]))
    assert len(d.starts[0].alloc.nodes) == 3


def test_spread_gpu_count_uses_fewest_nodes() -> None:
    c = flat_cluster(3, gpus=8)
    busy = running(job(91, gpus_per_node=6), c, {"n001": (0, 1, 2, 3, 4, 5)}, 0)
    d = schedule(snapshot(c, [job(1, gpus=10)], running_jobs=[busy]))
    got = sorted(len(n.gpus) for n in d.starts[0].alloc.nodes)
    assert got == [2, 8]  # one whole node plus the best-fit remainder on n001


@pytest.mark.parametrize(
    ("kw", "reason"),
    [
        ({"hold": True}, Reason.JOB_HELD_USER),
        ({"begin": 500.0}, Reason.BEGIN_TIME),
        ({"partitions": ("nope",)}, Reason.BAD_CONSTRAINTS),
        ({"constraint": "h100"}, Reason.BAD_CONSTRAINTS),
    ],
)
def test_reasons(kw, reason) -> None:  # type: ignore[no-untyped-def]
    c = flat_cluster(1)
    d = schedule(snapshot(c, [job(1, gpus_per_node=1, **kw)]))
    assert d.pending[1].reason is reason


def test_partition_time_limit() -> None:
    c = flat_cluster(1)
    c.partitions[0].max_time = 600
    d = schedule(snapshot(c, [job(1, gpus_per_node=1, time=3600)]))
    assert d.pending[1].reason is Reason.PARTITION_TIME_LIMIT


def test_partition_node_limit() -> None:
    c = flat_cluster(2)
    d = schedule(snapshot(c, [job(1, nodes=3, gpus_per_node=1)]))
    assert d.pending[1].reason is Reason.PARTITION_NODE_LIMIT


def test_maint_reservation_blocks_jobs_that_would_cross_it() -> None:
    c = flat_cluster(1)
    snap = snapshot(c, [job(1, gpus_per_node=1, time=3600)])
    snap.reservations = [
        Reservation("maint", start=1800, end=7200, nodes=("n001",), flags=("MAINT",))
    ]
    d = schedule(snap)
    assert d.starts == []
    assert d.pending[1].planned_start == 7200
    snap.pending = [job(2, gpus_per_node=1, time=600)]
    assert [s.job_id for s in schedule(snap).starts] == [2]


def test_reservation_admits_its_users_only() -> None:
    c = flat_cluster(2)
    snap = snapshot(
        c, [job(1, nodes=2, gpus_per_node=1), job(2, gpus_per_node=1, reservation="r", submit=1)]
    )
    snap.reservations = [Reservation("r", start=0, end=7200, nodes=("n002",), users=("alice",))]
    d = schedule(snap)
    assert [s.job_id for s in d.starts] == [2]
    assert names(c, d.starts[0]) == ["n002"]


def test_blocked_job_holds_the_nodes_of_overlapping_partitions_in_the_main_pass() -> None:
    # Slurm's main pass takes a blocked job's partition nodes from everyone: job 2, in
    # partition `low` over the same nodes, may not take the node job 1 waits for.
    from tide.model import Partition

    c = flat_cluster(2)
    c.partitions.append(Partition(name="low", nodes=c.partitions[0].nodes))
    busy = running(job(9, gpus_per_node=8), c, {"n001": tuple(range(8))}, 0)
    pend = [job(1, nodes=2, gpus_per_node=8), job(2, gpus_per_node=8, partitions=("low",))]
    snap = snapshot(c, pend, running_jobs=[busy])
    snap.backfill = False
    d = schedule(snap)
    assert d.starts == [] and d.pending[2].reason is Reason.PRIORITY


@pytest.mark.parametrize(("by_backfill", "backfill_pass", "started"), [
    (False, False, [1]), (True, False, []), (True, True, [1]),
])  # fmt: skip
def test_array_tasks_start_in_backfill_passes_when_configured(
    by_backfill: bool, backfill_pass: bool, started: list[int]
) -> None:
    from tide.model import ArraySpec

    c = flat_cluster(1)
    task = job(1, gpus_per_node=8, array=ArraySpec((0, 1), None))
    task.array_job_id, task.array_task_id = 1, 0
    snap = snapshot(c, [task], array_tasks_by_backfill=by_backfill)
    snap.backfill = backfill_pass
    assert [s.job_id for s in schedule(snap).starts] == started


def test_backfill_starts_a_job_whose_switch_wait_ran_out_behind_one_still_waiting() -> None:
    # Same shape as job 1, which still waits for one leaf; job 2's wait is over, so
    # backfill may spread it over two leaves (the pass's "same shape failed" skip
    # must tell them apart by the leaves each may span now).
    c = tree_cluster([2, 2])
    busy = [
        running(job(91, nodes=1, gpus_per_node=8, time=10_000), c, {"gpu001": tuple(range(8))}, 0),
        running(job(92, nodes=1, gpus_per_node=8, time=10_000), c, {"gpu003": tuple(range(8))}, 0),
    ]
    waiting = job(1, nodes=2, gpus_per_node=8, switches=1, switches_wait=10_000)
    expired = job(2, nodes=2, gpus_per_node=8, switches=1, switches_wait=600, submit=1.0)
    for j in (waiting, expired):
        j.eligible = 0.0
    d = schedule(snapshot(c, [waiting, expired], now=601, running_jobs=busy))
    assert [s.job_id for s in d.starts] == [2]
    assert names(c, d.starts[0]) == ["gpu002", "gpu004"]
    assert d.pending[1].reason is Reason.RESOURCES
