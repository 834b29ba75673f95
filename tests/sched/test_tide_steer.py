"""tide's reservations for large jobs: placed on the node set that frees
earliest under the predictions (topology-aware), and jobs started while they
are held steered to nodes outside them (TidePolicy(steer=...))."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model.sched_config import BackfillMode, QueueOrder
from tide.sched.index import build_index
from tide.sched.policies.tide_policy import TidePolicy
from tide.sched.types import Decisions, Running, Snapshot
from tide.testing.builders import decide, flat_cluster, job, running, snapshot, tree_cluster


def _reserved_scene(n003_busy: int, limit: int) -> Snapshot:
    # n001 full and n002 with 2 GPUs free until 1000, n003 with 8 - n003_busy
    # free until 5000. J1 (2 x 8 GPUs, two thirds of the cluster: large)
    # holds n001 and n002 from 1000; J2 (2 GPUs, predicted 100 s, limit
    # `limit`) backfills now.
    c = flat_cluster(3)
    run = [running(job(91, gpus_per_node=8, time=1000), c, {"n001": tuple(range(8))}, 0),
           running(job(92, gpus_per_node=6, time=1000), c, {"n002": tuple(range(6))}, 0),
           running(job(93, gpus_per_node=n003_busy, time=5000), c,
                   {"n003": tuple(range(n003_busy))}, 0)]  # fmt: skip
    pend = [job(1, nodes=2, gpus_per_node=8, time=3600, submit=0),
            job(2, gpus_per_node=2, time=limit, submit=1)]  # fmt: skip
    snap = snapshot(c, pend, now=10, running_jobs=run, backfill=BackfillMode.EASY,
                    order=QueueOrder.FCFS)  # fmt: skip
    snap.predicted = {1: 3600.0, 2: 100.0}
    return snap


def _node_of(d: Decisions, job_id: int) -> int:
    start = next(s for s in d.starts if s.job_id == job_id)
    return start.alloc.nodes[0].node


@pytest.mark.parametrize("mode", [True, "large", "all", "overrun"])
def test_a_job_that_could_overrun_into_the_reservation_starts_outside_it(mode: object) -> None:
    """J2 ends before J1's reservation (1000) only if it ends as predicted
    (110; its limit runs to 2010). Best fit would put it on n002 (2 free
    GPUs, reserved for J1); steered, it takes n003 (4 free), outside."""
    steered = decide(_reserved_scene(n003_busy=4, limit=2000), steer=mode)
    assert steered.pending[1].planned_start == 1000
    assert sorted(steered.pending[1].planned_nodes) == [0, 1]
    assert _node_of(steered, 2) == 2
    plain = decide(_reserved_scene(n003_busy=4, limit=2000), steer=False)
    assert sorted(plain.pending[1].planned_nodes) == [0, 1] and _node_of(plain, 2) == 1


def test_overrun_lets_a_job_that_surely_ends_in_time_fill_the_gap() -> None:
    """J2's limit (100 s) ends before J1's reservation: it can never delay
    it, so "overrun" puts it on the reserved n002 and leaves n003 to longer
    jobs; "all" sends every job outside the reservation."""
    assert _node_of(decide(_reserved_scene(4, limit=100), steer="overrun"), 2) == 1
    assert _node_of(decide(_reserved_scene(4, limit=100), steer="all"), 2) == 2


def test_large_steers_around_large_jobs_only() -> None:
    """In the site's order (no protected, so no large, jobs) J1 holds only
    the EASY reservation: "large" keeps best fit, "all" steers around it."""
    got = {m: decide(_reserved_scene(4, 2000), steer=m, order="priority")
           for m in ("large", "all")}  # fmt: skip
    assert sorted(got["all"].pending[1].planned_nodes) == [0, 1]
    assert _node_of(got["large"], 2) == 1 and _node_of(got["all"], 2) == 2


@pytest.mark.parametrize("mode", [True, "all", "overrun"])
def test_a_job_uses_a_reserved_node_it_could_overrun_only_when_nothing_else_fits(
    mode: object,
) -> None:
    """n003 is full: J2 backfills on the reserved n002, ending as predicted
    (110) before J1's reservation starts (1000), which stays where it was."""
    d = decide(_reserved_scene(n003_busy=8, limit=2000), steer=mode)
    assert _node_of(d, 2) == 1
    assert d.pending[1].planned_start == 1000 and sorted(d.pending[1].planned_nodes) == [0, 1]


def test_an_unknown_steer_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="steer 'away'"):
        TidePolicy(build_index(flat_cluster(1)), steer="away")


def test_the_reservation_takes_the_nodes_that_free_earliest_under_the_predictions() -> None:
    """By their limits n001 and n002 free first (1000, 2000): Slurm reserves
    them at 2000. By the predictions n003 and n002 free first (200, 300):
    tide reserves those at 300."""
    c = flat_cluster(3)
    run = [running(job(90 + k, gpus_per_node=8, time=limit), c,
                   {f"n{k:03d}": tuple(range(8))}, 0)
           for k, limit in ((1, 1000), (2, 2000), (3, 3000))]  # fmt: skip
    snap = snapshot(c, [job(1, nodes=2, gpus_per_node=8, time=3600)], now=10, running_jobs=run,
                    backfill=BackfillMode.EASY, order=QueueOrder.FCFS)  # fmt: skip
    snap.predicted = {91: 900.0, 92: 300.0, 93: 200.0, 1: 3600.0}
    slurm = decide(snap, "slurm")
    assert slurm.pending[1].planned_start == 2000
    assert sorted(slurm.pending[1].planned_nodes) == [0, 1]
    tide = decide(snap)
    assert tide.pending[1].planned_start == 300
    assert sorted(tide.pending[1].planned_nodes) == [1, 2]


def test_the_reservation_keeps_a_large_job_under_one_switch_when_it_can() -> None:
    """Two leaves of two nodes: gpu001 frees at 100, gpu002 and gpu003 at
    200, gpu004 at 5000. At 200 three nodes are free; the 2-node job is
    reserved on leaf 1's two (one switch), not across the leaves."""
    c = tree_cluster([2, 2])
    run = [running(job(90 + k, gpus_per_node=8, time=limit), c,
                   {f"gpu{k:03d}": tuple(range(8))}, 0)
           for k, limit in ((1, 100), (2, 200), (3, 200), (4, 5000))]  # fmt: skip
    snap = snapshot(c, [job(1, nodes=2, gpus_per_node=8, time=3600)], now=10, running_jobs=run,
                    backfill=BackfillMode.EASY, order=QueueOrder.FCFS)  # fmt: skip
    d = decide(snap)
    assert d.pending[1].planned_start == 200 and sorted(d.pending[1].planned_nodes) == [0, 1]


# -- steering never delays the large job's reservation (property) ---------------------


@st.composite
def _scenes(draw: st.DrawFn) -> Snapshot:
    """Up to 6 nodes partly busy (jobs with limits and predictions), a large
    job first in the queue (at least half the nodes), then smaller jobs."""
    n = draw(st.integers(2, 6))
    c = flat_cluster(n)
    now = draw(st.integers(0, 2000))
    run, predicted = [], {}
    for k in range(n):
        busy = draw(st.integers(0, 8))
        if not busy:
            continue
        limit = draw(st.integers(now + 1, 8000))
        j = job(100 + k, gpus_per_node=busy, time=limit)
        run.append(running(j, c, {f"n{k + 1:03d}": tuple(range(busy))}, 0))
        predicted[j.id] = float(draw(st.integers(1, limit)))
    pend = [job(1, nodes=draw(st.integers(-(-n // 2), n)), gpus_per_node=8,
                time=draw(st.integers(600, 9000)), submit=0)]  # fmt: skip
    for k in range(draw(st.integers(1, 8))):
        limit = draw(st.integers(10, 3000))
        pend.append(job(k + 2, gpus_per_node=draw(st.integers(1, 8)), time=limit, submit=k + 1))
        predicted[k + 2] = float(draw(st.integers(1, limit)))
    predicted[1] = float(pend[0].request.time_limit)
    snap = snapshot(c, pend, now=now, running_jobs=run, backfill=BackfillMode.EASY,
                    order=QueueOrder.FCFS)  # fmt: skip
    snap.predicted = predicted
    return snap


def _then(snap: Snapshot, d: Decisions) -> Snapshot:
    """The next cycle at the same time: the jobs started now are running."""
    by_id = {j.id: j for j in snap.pending}
    started = []
    for s in d.starts:
        j = by_id.pop(s.job_id)
        started.append(Running(j, s.alloc, snap.now, snap.now + j.request.time_limit))
    nxt = snapshot(snap.cluster, list(by_id.values()), now=snap.now,
                   running_jobs=[*snap.running, *started], backfill=BackfillMode.EASY,
                   order=QueueOrder.FCFS)  # fmt: skip
    nxt.predicted = dict(snap.predicted)
    return nxt


@settings(max_examples=150, deadline=None)
@given(_scenes(), st.sampled_from([True, "large", "all", "overrun"]))
def test_steering_never_delays_the_large_jobs_reservation(snap: Snapshot, mode: object) -> None:
    """Steering (every mode) moves only where other jobs start: the large
    job's reservation is the one it gets without steering; whatever starts
    on its nodes ends (as planned) before it begins; and in the next cycle,
    with those jobs running, its reservation is no later (or it starts)."""
    d = decide(snap, steer=mode)
    plain = decide(snap, steer=False)
    info, other = d.pending.get(1), plain.pending.get(1)
    if info is None or info.planned_start is None:
        assert (info is None) == (other is None)
        return
    assert other is not None
    assert (info.planned_start, info.planned_nodes) == (other.planned_start, other.planned_nodes)
    start, nodes = info.planned_start, set(info.planned_nodes)
    for s in d.starts:
        if nodes & {na.node for na in s.alloc.nodes}:
            assert snap.now + snap.predicted[s.job_id] <= start
    nxt = decide(_then(snap, d), steer=mode)
    if any(s.job_id == 1 for s in nxt.starts):
        return
    later = nxt.pending[1].planned_start
    assert later is not None and later <= start
