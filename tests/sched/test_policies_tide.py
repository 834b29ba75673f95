"""tide: the Slurm cycle with predicted run times, smallest predicted area
first with protected (aged, large) jobs ahead, shortest predicted job first
behind the first blocked job, backfill every cycle."""

from __future__ import annotations

import pytest

from tide.model import JobRequest, Reservation
from tide.model.sched_config import BackfillMode, QueueOrder
from tide.sched.index import build_index
from tide.sched.policies.tide_policy import AGED, PROMISE, TidePolicy
from tide.sched.predict import JobInfo
from tide.sched.state import Usage
from tide.sched.types import Reason, Snapshot
from tide.sim.engine import Engine
from tide.sim.workload.base import SimJob
from tide.testing.builders import decide, flat_cluster, job, running, snapshot

# -- the driver keeps the policy's run-time model ------------------------------------------


def test_engine_feeds_predictions_only_to_policies_that_use_them() -> None:
    c = flat_cluster(1)
    req = JobRequest(name="j", nodes_min=1, nodes_max=1, gpus_per_node=8, time_limit=3600)
    jobs = [SimJob(i, 0, 100.0 * i, req, user="u", account="a") for i in (1, 2)]
    eng = Engine(c, snapshot(c, []).config, "tide")
    eng.run(jobs)
    # the fixed configuration's model: the mean of the user's last two runs
    assert eng.predictor is not None and eng.predictor.kind == "tsafrir"
    assert eng.predictor.predict(JobInfo(99, "u", 3600, 8, 300.0), 300.0) == 150
    assert Engine(c, snapshot(c, []).config, "slurm").predictor is None


# -- planning with predictions ------------------------------------------------------


def _blocked_scene(predicted: dict[int, float]) -> Snapshot:
    # n001 runs R (limit ends 1000); J1 needs both nodes; J2 could use n002
    c = flat_cluster(2)
    r = running(job(9, gpus_per_node=8, time=1000), c, {"n001": tuple(range(8))}, 0, cores=0)
    pend = [job(1, nodes=2, gpus_per_node=8, time=3600), job(2, gpus_per_node=8, time=500,
                                                               submit=1)]  # fmt: skip
    snap = snapshot(c, pend, now=1, running_jobs=[r], backfill=BackfillMode.EASY,
                    order=QueueOrder.FCFS)  # fmt: skip
    snap.predicted = predicted
    return snap


def test_predicted_end_moves_the_reservation_earlier() -> None:
    slurm = decide(_blocked_scene({9: 100, 2: 500}), "slurm")
    tide = decide(_blocked_scene({9: 100, 2: 500}))
    assert slurm.pending[1].planned_start == 1000
    assert tide.pending[1].planned_start == 100
    # J2 (predicted 500 s) would delay J1's reservation at 100: not backfilled by
    # tide; Slurm, trusting R's limit, backfills it before 1000
    assert [s.job_id for s in slurm.starts] == [2]
    assert tide.starts == []


def test_a_job_predicted_short_backfills_before_the_reservation() -> None:
    d = decide(_blocked_scene({9: 100, 2: 50}))
    assert [s.job_id for s in d.starts] == [2]
    assert d.pending[1].planned_start == 100


def test_a_running_job_past_its_prediction_is_planned_to_its_limit() -> None:
    snap = _blocked_scene({9: 100, 2: 50})
    snap.now = 150  # R outlived its 100 s prediction
    d = decide(snap)
    assert d.pending[1].planned_start == 1000


def test_the_first_predicted_start_is_remembered() -> None:
    d = decide(_blocked_scene({9: 100, 2: 500}), promises=True)
    assert d.meta[1] == {PROMISE: (100, 0)}
    assert decide(_blocked_scene({9: 100, 2: 500})).meta == {}  # off by default


def _late_scene(promised: bool) -> Snapshot:
    # at 170 R has outlived its prediction; J2 is predicted 50 s (limit 900)
    snap = _blocked_scene({9: 100, 2: 50})
    snap.pending[1].request.time_limit = 900
    snap.now = 170
    if promised:
        snap.pending[0].meta[PROMISE] = (100.0, 0)  # J1 was promised 100: broken
    return snap


def test_a_broken_promise_plans_with_limits() -> None:
    # with predictions J2 (170..220) ends before R's limit 1000 and backfills;
    # once J1's promised start has passed, J2's limit (170..1070) would delay J1
    assert [s.job_id for s in decide(_late_scene(False), promises=True).starts] == [2]
    assert decide(_late_scene(True), promises=True).starts == []
    assert [s.job_id for s in decide(_late_scene(True)).starts] == [2]  # without promises


def test_reservations_are_exact_not_rounded() -> None:
    snap = _blocked_scene({9: 100, 2: 500})
    snap.config.bf_resolution = 60
    assert decide(snap, "slurm").pending[1].planned_start == 1021  # 1 + 17 x 60
    assert decide(snap).pending[1].planned_start == 100


# -- order behind the first blocked job -----------------------------------------------


def _sjbf_scene(now: float) -> Snapshot:
    # J1 blocked (both nodes) until R ends at 50000; J2 (long) and J3 (short)
    # each fit n002 before then, but only one of them can take it
    c = flat_cluster(2)
    r = running(job(9, gpus_per_node=8, time=50000), c, {"n001": tuple(range(8))}, 0, cores=0)
    pend = [
        job(1, nodes=2, gpus_per_node=8, time=3600, submit=0),
        job(2, gpus_per_node=8, time=9000, submit=1),
        job(3, gpus_per_node=8, time=600, submit=2),
    ]
    return snapshot(c, pend, now=now, running_jobs=[r], backfill=BackfillMode.EASY,
                    order=QueueOrder.FCFS)  # fmt: skip


def test_shortest_job_backfills_first() -> None:
    assert [s.job_id for s in decide(_sjbf_scene(10), "slurm").starts] == [2]
    assert [s.job_id for s in decide(_sjbf_scene(10)).starts] == [3]


def _order_scene(now: float, young_submit: float) -> Snapshot:
    # R holds n001-n003 until 50000; J1 (long) and J2 (short) each want n004
    c = flat_cluster(4)
    held = {f"n00{k}": tuple(range(8)) for k in (1, 2, 3)}
    r = running(job(9, nodes=3, gpus_per_node=8, time=50000), c, held, 0, cores=0)
    pend = [job(1, gpus_per_node=8, time=9000, submit=0),
            job(2, gpus_per_node=8, time=600, submit=young_submit)]  # fmt: skip
    return snapshot(c, pend, now=now, running_jobs=[r], backfill=BackfillMode.EASY,
                    order=QueueOrder.FCFS)  # fmt: skip


def test_smallest_predicted_area_goes_first() -> None:
    assert [s.job_id for s in decide(_order_scene(10, 1), "slurm").starts] == [1]
    assert [s.job_id for s in decide(_order_scene(10, 1)).starts] == [2]
    assert [s.job_id for s in decide(_order_scene(10, 1), order="priority").starts] == [1]


def test_a_job_that_waited_long_is_not_overtaken() -> None:
    # J1 has waited AGED: protected, it goes before the younger, smaller J2
    d = decide(_order_scene(AGED + 10, AGED))
    assert [s.job_id for s in d.starts] == [1]


def test_a_large_job_is_protected_from_its_submission() -> None:
    # J1 wants the whole cluster (2 x 8 GPUs, BIG = half of it): it holds the
    # reservation at R's end although J2 and J3 have smaller areas; J3 fits
    # before it, J2 (6000 s on n002) would delay it
    c = flat_cluster(2)
    r = running(job(9, gpus_per_node=8, time=5000), c, {"n001": tuple(range(8))}, 0, cores=0)
    pend = [job(1, nodes=2, gpus_per_node=8, time=3600, submit=0),
            job(2, gpus_per_node=8, time=6000, submit=1),
            job(3, gpus_per_node=8, time=600, submit=2)]  # fmt: skip
    snap = snapshot(c, pend, now=10, running_jobs=[r], backfill=BackfillMode.EASY,
                    order=QueueOrder.FCFS)  # fmt: skip
    d = decide(snap)
    assert d.pending[1].reason is Reason.RESOURCES and d.pending[1].planned_start == 5000
    assert [s.job_id for s in d.starts] == [3]
    # unprotected (no job is that big), the smaller areas go first: J3 starts
    # on n002, J2 holds the reservation there at J3's end, J1 waits behind it
    d = decide(snap, big=2.0)
    assert [s.job_id for s in d.starts] == [3]
    assert d.pending[2].reason is Reason.RESOURCES and d.pending[2].planned_start == 610
    assert d.pending[1].reason is Reason.PRIORITY


def test_an_unknown_order_is_a_clear_error() -> None:
    ix = build_index(flat_cluster(1))
    with pytest.raises(ValueError, match="order 'lifo'"):
        TidePolicy(ix, order="lifo")


def test_the_first_blocked_job_keeps_its_reservation() -> None:
    d = decide(_sjbf_scene(10))
    assert d.pending[1].reason is Reason.RESOURCES
    assert d.pending[1].planned_start == 50000


def _cap_scene() -> Snapshot:
    # account a may use 16 GPUs and runs 8; its large job (16 GPUs, half of the
    # 32-GPU cluster) waits for the cap, its small job (8) would fit under it
    from tide.model import Account, AccountTree, Limits

    c = flat_cluster(4)
    r = running(job(9, gpus_per_node=8, time=5000, account="a"), c,
                {"n001": tuple(range(8))}, 0, cores=0)  # fmt: skip
    pend = [job(1, nodes=2, gpus_per_node=8, time=3600, submit=0, account="a"),
            job(2, gpus_per_node=8, time=600, submit=1, account="a"),
            job(3, gpus_per_node=8, time=600, submit=2, account="b")]  # fmt: skip
    snap = snapshot(c, pend, now=10, running_jobs=[r], backfill=BackfillMode.EASY,
                    order=QueueOrder.FCFS)  # fmt: skip
    capped = Account("a", limits=Limits(grp_tres={"gres/gpu": 16}))
    snap.accounts = AccountTree(accounts={"a": capped, "b": Account("b")})
    return snap


def test_a_large_job_keeps_its_accounts_cap() -> None:
    d = decide(_cap_scene())
    assert d.pending[1].reason is Reason.ASSOC_GRP_GRES
    # the account's small job would take what the large one waits for: it waits;
    # another account's job is not held back
    assert [s.job_id for s in d.starts] == [3]
    assert {s.job_id for s in decide(_cap_scene(), "slurm").starts} == {2, 3}


# -- site rules keep the real limits ---------------------------------------------------


def test_no_start_into_a_maintenance_window_on_a_short_prediction() -> None:
    c = flat_cluster(1)
    snap = snapshot(c, [job(1, gpus_per_node=1, time=3600)])
    snap.reservations = [
        Reservation("maint", start=1800, end=7200, nodes=("n001",), flags=("MAINT",))
    ]
    snap.predicted = {1: 60}
    assert decide(snap).starts == []


def test_max_wall_sees_the_limit_not_the_prediction() -> None:
    from tide.model import Account, AccountTree, Limits

    c = flat_cluster(1)
    snap = snapshot(c, [job(1, gpus_per_node=1, time=7200, account="a")])
    snap.accounts = AccountTree(accounts={"a": Account("a", limits=Limits(max_wall=3600))})
    snap.predicted = {1: 60}
    d = decide(snap)
    assert d.starts == [] and d.pending[1].reason is Reason.ASSOC_MAX_WALL


def test_backfill_none_is_honoured() -> None:
    snap = _sjbf_scene(10)
    snap.config.backfill = BackfillMode.NONE
    assert decide(snap).starts == []


def test_backfills_even_between_bf_intervals() -> None:
    snap = _sjbf_scene(10)
    snap.backfill = False  # the driver's bf_interval has not come round
    assert [s.job_id for s in decide(snap).starts] == [3]
    assert decide(snap, "slurm").starts == []
    ix = build_index(snap.cluster)
    usage = Usage.empty(ix)
    usage.allocate(snap.running[0].alloc)
    assert TidePolicy(ix, every_cycle=False).schedule(snap, usage).starts == []


# -- the claim, on the bundled demo scenario ------------------------------------------


@pytest.mark.slow
def test_tide_beats_slurm_on_the_demo_scenario() -> None:
    from tide.config.loader import bundled_cluster
    from tide.sim.metrics import compute_metrics
    from tide.sim.workload.scenarios import read_scenario

    metrics, half, waits = {}, {}, {}
    for policy in ("slurm", "tide"):
        loaded = bundled_cluster("demo")
        out = Engine(loaded.cluster, loaded.config, policy, accounts=loaded.accounts).run(
            read_scenario("demo")
        )
        metrics[policy] = compute_metrics(out.results, out.capacity_gpus, out.samples)
        half[policy] = [r.wait for r in out.results if r.gpus >= 64 and r.wait is not None]
        waits[policy] = [r.wait for r in out.results if r.wait is not None]
    slurm, tide = metrics["slurm"], metrics["tide"]
    assert tide["jobs_completed"] == tide["jobs"]  # nobody starves for good
    # smallest predicted area first: most jobs wait far less (measured: mean
    # wait 1728 s vs 8606 s, bounded slowdown 2.06 vs 14.25)
    assert tide["mean_wait"] < 0.5 * slurm["mean_wait"]
    assert tide["mean_bsld"] < 0.5 * slurm["mean_bsld"]
    assert tide["utilization"] > slurm["utilization"] - 0.02  # 0.685 vs 0.696
    # the job of half the cluster (64 GPUs) is protected from its submission:
    # it holds the reservation and starts within the hour (measured 3048 s;
    # slurm 1908 s, planning with limits and a reservation for every job)
    assert len(half["tide"]) == 1 and half["tide"][0] < 3600
    # the aging guard bounds every wait: protected after AGED, a job then
    # waits at most for what runs and what was protected before it
    assert max(waits["tide"]) < AGED + 12 * 3600


# -- the reservation holds under predictions (property) ------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tide.sched.policies.tide_policy import _planned  # noqa: E402
from tide.sched.predict import Correction  # noqa: E402


@st.composite
def _scenes(draw: st.DrawFn) -> Snapshot:
    n = draw(st.integers(2, 6))
    c = flat_cluster(n)
    now = draw(st.integers(0, 3000))
    free = list(range(n))
    run, predicted = [], {}
    for k in range(draw(st.integers(1, n))):
        if not free:
            break
        width = draw(st.integers(1, len(free)))
        nodes, free = free[:width], free[width:]
        limit = draw(st.integers(now + 1, 8000))  # still running at `now` (start 0)
        j = job(100 + k, nodes=width, gpus_per_node=8, time=limit)
        run.append(running(j, c, {f"n{i + 1:03d}": tuple(range(8)) for i in nodes}, 0, cores=0))
        predicted[j.id] = float(draw(st.integers(1, limit)))  # may have expired by `now`
    pend = []
    for k in range(draw(st.integers(1, 6))):
        limit = draw(st.integers(60, 9000))
        j = job(k + 1, nodes=draw(st.integers(1, n)), gpus_per_node=8, time=limit, submit=k)
        pend.append(j)
        predicted[j.id] = float(draw(st.integers(1, limit)))
    snap = snapshot(c, pend, now=now, running_jobs=run, backfill=BackfillMode.EASY,
                    order=QueueOrder.FCFS)  # fmt: skip
    snap.predicted = predicted
    return snap


@settings(max_examples=150, deadline=None)
@given(_scenes())
def test_backfill_never_delays_the_reservation_beyond_the_corrections(snap: Snapshot) -> None:
    """If every job ends when the plan says (its prediction, or once it has
    outlived it the correction's end: its limit), the reserved job starts at
    its planned time: nothing backfilled now runs on its nodes past then.
    (EASY holds one reservation, plus one per large job.)"""
    d = decide(snap)
    for info in d.pending.values():
        if info.planned_start is None:
            continue
        start, nodes = info.planned_start, set(info.planned_nodes or ())
        for r in snap.running:
            if nodes & {na.node for na in r.alloc.nodes}:
                assert _planned(r, snap, Correction.REQUESTED).end <= start
        for s in d.starts:
            if nodes & {na.node for na in s.alloc.nodes}:
                assert snap.now + snap.predicted[s.job_id] <= start


def _tiny_stream_and_a_big_job() -> list[SimJob]:
    # 2 x 8 GPUs kept busy by 1-4-GPU jobs of 2-10 s (limit 60 s) every 0.9 s;
    # at 100 s a 16-GPU job (the whole cluster) arrives: seed004 in small
    jobs = []
    for i in range(1, 400):
        req = JobRequest(name="tiny", nodes_min=1, nodes_max=1, gpus_per_node=1 + i % 4,
                         time_limit=60)  # fmt: skip
        jobs.append(SimJob(i, i * 0.9, 2.0 + (i * 7) % 9, req, user=f"u{i % 5}", account="a"))
    big = JobRequest(name="big", nodes_min=2, nodes_max=2, gpus_per_node=8, time_limit=3600)
    jobs.append(SimJob(1000, 100.0, 1800.0, big, user="t", account="b"))
    return sorted(jobs, key=lambda j: (j.submit, j.id))


@pytest.mark.parametrize("guard", [True, 0.9, None])
def test_guard_big_keeps_a_large_jobs_wait_within_slurms(guard: bool | float | None) -> None:
    """Planning with limits while a large job waits (guard_big: True from
    `big`, a number from that share of the cluster): no tiny job
    backfilled on a prediction it overruns can move the large job's
    reservation. None: the fixed configuration (GUARD = 1.0, the stream's
    large job is the whole cluster; docs/policies.md, the seed004 table)."""
    from tide.model.sched_config import SchedulerConfig

    waits = {}
    guarded = {} if guard is None else {"guard_big": guard}
    for name, kw in (("slurm", None), ("guarded", guarded)):
        eng = Engine(flat_cluster(2), SchedulerConfig(backfill=BackfillMode.EASY, bf_interval=30),
                     "slurm" if kw is None else "tide")  # fmt: skip
        if kw is not None:
            eng.policy = TidePolicy(eng.ix, **kw)  # type: ignore[arg-type]
        out = eng.run(_tiny_stream_and_a_big_job())
        waits[name] = next(r.wait for r in out.results if r.job_id == 1000)
    assert waits["guarded"] is not None and waits["slurm"] is not None
    assert waits["guarded"] <= waits["slurm"]  # measured 7.1 s vs 30 s


# -- fragmentation-aware placement (placement="fgd", tide.sched.frag) -----------------


def _frag_scene() -> Snapshot:
    # n001 has 2 GPUs free, n002 3, n003 none; the running jobs (6, 5, 2, 6
    # GPUs) and the pending one (1 GPU) are the mix the cluster sees
    c = flat_cluster(3)
    run = [running(job(91, gpus_per_node=6), c, {"n001": tuple(range(6))}, 0),
           running(job(92, gpus_per_node=5), c, {"n002": tuple(range(5))}, 0),
           running(job(93, gpus_per_node=2), c, {"n003": (0, 1)}, 0)]  # fmt: skip
    big = job(94, gpus_per_node=6)
    run.append(running(big, c, {"n003": (2, 3, 4, 5, 6, 7)}, 0, cores=0))
    return snapshot(c, [job(1, gpus_per_node=1, time=600)], now=1, running_jobs=run,
                    backfill=BackfillMode.EASY)  # fmt: skip


def test_fgd_keeps_two_gpus_free_together() -> None:
    """Best fit puts a 1-GPU job on the node with the fewest free GPUs (n001:
    2 -> 1, and no 2-GPU job fits there any more); FGD puts it on n002 (3 ->
    2), where the 2-GPU jobs of the mix still fit."""
    best = decide(_frag_scene(), placement="bestfit")
    fgd = decide(_frag_scene(), placement="fgd")
    assert [s.alloc.nodes[0].node for s in best.starts] == [0]
    assert [s.alloc.nodes[0].node for s in fgd.starts] == [1]
    assert fgd.starts[0].alloc.nodes[0].gpus == (5,)  # n002's first free GPU


def test_fgd_is_best_fit_without_gpu_jobs_to_fragment_for() -> None:
    """No GPU job running or waiting: the mix is empty and FGD changes nothing."""
    c = flat_cluster(3)
    run = [running(job(91, cpus_per_task=4), c, {"n002": ()}, 0, cores=4)]
    pend = [job(i, cpus_per_task=2, time=600, submit=i) for i in (1, 2, 3)]
    snaps = [snapshot(c, list(pend), now=9, running_jobs=list(run)) for _ in range(2)]
    a = decide(snaps[0], placement="bestfit")
    b = decide(snaps[1], placement="fgd")
    assert len(a.starts) == 3 and [s.alloc for s in a.starts] == [s.alloc for s in b.starts]


def test_an_unknown_placement_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"placement 'worst'.*bestfit, fgd"):
        TidePolicy(build_index(flat_cluster(1)), placement="worst")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 8), min_size=2, max_size=5),
       st.lists(st.integers(1, 8), min_size=1, max_size=12))  # fmt: skip
def test_fgd_never_gives_a_gpu_twice(busy: list[int], asks: list[int]) -> None:
    """Whatever is running, the GPUs the fgd placement starts jobs on are
    free, exist, and go to one job each; no node gets more than it has."""
    c = flat_cluster(len(busy))
    run = [running(job(100 + i, gpus_per_node=b), c, {f"n{i + 1:03d}": tuple(range(b))}, 0)
           for i, b in enumerate(busy) if b]  # fmt: skip
    pend = [job(i + 1, gpus_per_node=g, time=600, submit=i) for i, g in enumerate(asks)]
    d = decide(snapshot(c, pend, now=100, running_jobs=run, backfill=BackfillMode.EASY),
                placement="fgd")  # fmt: skip
    held = {(na.node, g) for r in run for na in r.alloc.nodes for g in na.gpus}
    for s in d.starts:
        want = next(j for j in pend if j.id == s.job_id).request.gpus_per_node
        for na in s.alloc.nodes:
            assert len(na.gpus) == want and all(0 <= g < 8 for g in na.gpus)
            for g in na.gpus:
                assert (na.node, g) not in held
                held.add((na.node, g))
    assert len(d.starts) >= (1 if any(8 - b >= asks[0] for b in busy) else 0)


def test_fgd_in_the_twin_runs_every_job() -> None:
    """The twin drives the fgd placement like any other: every job of a
    mixed 1-8-GPU stream runs, none on GPUs another holds (the engine checks
    every allocation it applies)."""
    from tide.model.sched_config import SchedulerConfig

    jobs = []
    for i in range(1, 120):
        req = JobRequest(name="j", nodes_min=1, nodes_max=1, gpus_per_node=(1, 2, 1, 4, 8)[i % 5],
                         time_limit=300)  # fmt: skip
        jobs.append(SimJob(i, i * 5.0, 30.0 + (i * 13) % 200, req, user=f"u{i % 3}", account="a"))
    eng = Engine(flat_cluster(3), SchedulerConfig(backfill=BackfillMode.EASY), "tide")
    eng.policy = TidePolicy(eng.ix, placement="fgd")
    out = eng.run(jobs)
    assert len(out.results) == len(jobs) and all(r.wait is not None for r in out.results)


# -- guard for a large job of whole multi-GPU nodes (guard_nodes) --------------------


def _whole_nodes_scene(node_gpus: int = 8, eligible: float | None = 0.0, **ask: int) -> Snapshot:
    # R holds all 4 nodes (limit ends 1000, predicted 100); J1 waits for some
    c = flat_cluster(4, gpus=node_gpus)
    every = {f"n00{k}": tuple(range(node_gpus)) for k in (1, 2, 3, 4)}
    r = running(job(9, nodes=4, gpus_per_node=node_gpus, time=1000), c, every, 0, cores=0)
    big = job(1, time=3600, **ask)  # type: ignore[arg-type]
    big.eligible = eligible
    snap = snapshot(c, [big], now=1, running_jobs=[r], backfill=BackfillMode.EASY,
                    order=QueueOrder.FCFS)  # fmt: skip
    snap.predicted = {9: 100, 1: 3600}
    return snap


def test_a_large_job_of_whole_gpu_nodes_is_planned_with_limits() -> None:
    """3 whole 8-GPU nodes of 4 (75 %, not the whole cluster) waiting: the
    cycle plans with limits, so the reservation is at R's limit (1000), as
    slurm's; predictions would put it at 100, where a job backfilled on a
    short prediction that overruns would delay it."""
    d = decide(_whole_nodes_scene(nodes=3, gpus_per_node=8))
    assert d.pending[1].planned_start == 1000
    off = decide(_whole_nodes_scene(nodes=3, gpus_per_node=8), guard_nodes=False)
    assert off.pending[1].planned_start == 100


@pytest.mark.parametrize(
    "case",
    ["one node (25 %, not large)", "24 GPUs spread, not whole nodes",
     "whole 1-GPU nodes (SWF logs)", "not eligible yet"],
)  # fmt: skip
def test_other_jobs_are_planned_with_predictions(case: str) -> None:
    """Only a large job of whole multi-GPU nodes that is eligible turns the guard on."""
    snap = {
        "one node (25 %, not large)": lambda: _whole_nodes_scene(nodes=1, gpus_per_node=8),
        "24 GPUs spread, not whole nodes": lambda: _whole_nodes_scene(gpus=24),
        "whole 1-GPU nodes (SWF logs)": lambda: _whole_nodes_scene(1, nodes=3, gpus_per_node=1),
        "not eligible yet": lambda: _whole_nodes_scene(eligible=None, nodes=3, gpus_per_node=8),
    }[case]()
    d = decide(snap)
    assert d.pending[1].planned_start == 100


def test_guard_nodes_keeps_a_large_jobs_wait_within_slurms() -> None:
    """The tiny stream on 3 x 8 GPUs with a 16-GPU job (2 whole nodes of 3:
    large, not the whole cluster, so guard_big=1.0 leaves it alone): with
    guard_nodes its wait is close to slurm's (measured 7.1 s vs 6.0 s),
    without it tiny jobs backfilled on predictions keep delaying it (266.3 s)."""
    from tide.model.sched_config import SchedulerConfig

    jobs = _tiny_stream_and_a_big_job()
    waits = {}
    for name, kw in (("slurm", None), ("tide", {}), ("off", {"guard_nodes": False})):
        eng = Engine(flat_cluster(3), SchedulerConfig(backfill=BackfillMode.EASY, bf_interval=30),
                     "slurm" if kw is None else "tide")  # fmt: skip
        if kw is not None:
            eng.policy = TidePolicy(eng.ix, **kw)  # type: ignore[arg-type]
        out = eng.run(jobs)
        waits[name] = next(r.wait for r in out.results if r.job_id == 1000)
    tide, slurm, off = waits["tide"], waits["slurm"], waits["off"]
    assert tide is not None and slurm is not None and off is not None
    assert tide <= 2 * slurm and 10 * tide < off
