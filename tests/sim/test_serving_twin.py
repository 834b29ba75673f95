"""The twin with services (tide.sim.serving): the day builder, the replica
latency model and routing by hand, the engine's autoscaling and accounting,
the four patterns on a short synthetic day, seed 000's cost arithmetic."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tide.model import JobRequest
from tide.model.service import Autoscaling
from tide.sched.serving import hpa
from tide.sim.serving.engine import ServingEngine
from tide.sim.serving.metrics import Prices, costs, figures
from tide.sim.serving.scenario import (
    Lending,
    Scenario,
    ServiceDef,
    service_spec,
    setup,
)
from tide.sim.serving.service_sim import ReplicaModel, ServiceSim, Slo
from tide.sim.serving.trace import RequestTrace, TraceError, build_days, read_azure
from tide.sim.workload.base import SimJob


def trace(times: list[float], ctx: int = 1000, gen: int = 10) -> RequestTrace:
    n = len(times)
    return RequestTrace(np.asarray(times, float), np.full(n, ctx, np.int32),
                        np.full(n, gen, np.int32))  # fmt: skip


# --- traces ------------------------------------------------------------------------------


def test_read_azure_and_its_errors(tmp_path: Path):
    good = tmp_path / "t.csv"
    good.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:17:04.0319600,3180,8\n"
                    "2023-11-16 18:17:03.9799600,4808,10\n")  # fmt: skip
    t = read_azure(good)
    assert t.t.tolist() == pytest.approx([0.0, 0.052]) and t.ctx.tolist() == [4808, 3180]
    bad = tmp_path / "b.csv"
    bad.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:04,x,8\n")
    with pytest.raises(TraceError, match=r"b\.csv:2: .* fix or remove the line"):
        read_azure(bad)
    with pytest.raises(TraceError, match="header"):
        read_azure(good.with_name("h.csv")) if good.with_name("h.csv").write_text("a,b\n") else 0


def test_days_follow_the_profile_exactly_for_whole_shares():
    hour = trace([i * 36.0 for i in range(100)])  # 100 requests in the hour
    profile = (1.0, 2.0, 0.0, 0.5) + (0.0,) * 20
    day = build_days(hour, 1.0, profile, seed=3)
    counts = np.bincount((day.t // 3600).astype(int), minlength=24)
    assert counts[0] == 100 and counts[1] == 200 and counts[2] == 0
    assert 30 < counts[3] < 70  # thinned to about half
    assert np.all(np.diff(day.t) >= 0)
    again = build_days(hour, 1.0, profile, seed=3)
    assert np.array_equal(day.t, again.t)  # seeded


def test_weekends_are_scaled():
    hour = trace([i * 3.6 for i in range(1000)])
    week = build_days(hour, 7.0, (1.0,) * 24, weekend=0.5, seed=1)
    per_day = np.bincount((week.t // 86400).astype(int), minlength=7)
    assert per_day[0] == 24_000
    assert abs(per_day[5] - 12_000) < 600 and abs(per_day[6] - 12_000) < 600


# --- the replica model and routing ----------------------------------------------------

FLAT = ReplicaModel(prefill_tps=1000.0, tpot_base=0.1, tpot_slope=0.0, max_batch=1)


def test_latencies_by_hand_with_one_slot():
    sim = ServiceSim("s", trace([0.0, 0.5]), FLAT, Slo(), period=10.0, horizon=100.0)
    sim.add_ready(1, 0.0)
    sim.advance(10.0)
    # first: prefill 1 s + one decode step = TTFT 1.1 s, ends at 0 + 1 + 10 x 0.1 = 2.0
    # second waits for the slot until 2.0: TTFT 2.0 + 1.1 - 0.5 = 2.6, ends at 4.0
    assert sim.ttft.tolist() == pytest.approx([1.1, 2.6])
    assert sim.e2e.tolist() == pytest.approx([2.0, 3.5])
    assert sim.tpot.tolist() == pytest.approx([0.1, 0.1])
    obs = sim.observe(10.0, current=1)
    assert obs.inflight == pytest.approx((2.0 + 3.5) / 10.0)  # time-weighted mean
    assert obs.requests == 2 and obs.ready == 1 and obs.p95 == pytest.approx(2.6)


def test_batch_slows_decode_and_routing_takes_the_least_loaded():
    m = ReplicaModel(prefill_tps=1e9, tpot_base=0.1, tpot_slope=0.5, max_batch=4)
    sim = ServiceSim("s", trace([0.0, 0.0, 0.0]), m, Slo(), period=10.0, horizon=100.0)
    sim.add_ready(1, 0.0)
    sim.advance(1.0)
    # on one replica: the second request sees a batch of 2 (tpot 0.15), the third of 3 (0.2)
    assert sim.tpot.tolist() == pytest.approx([0.1, 0.15, 0.2])
    sim2 = ServiceSim("s", trace([0.5, 0.5, 0.5, 0.5]), m, Slo(), 10.0, 100.0)
    sim2.add_ready(1, 0.0)
    sim2.add_ready(2, 0.0)
    sim2.advance(1.0)
    assert sorted(sim2.tpot.tolist()) == pytest.approx([0.1, 0.1, 0.15, 0.15])  # 2 + 2


def test_buffered_requests_wait_for_a_replica_or_fail():
    sim = ServiceSim("s", trace([0.0, 50.0, 70.0]), FLAT, Slo(), 10.0, 200.0, buffer=30.0)
    sim.advance(75.0)
    assert sim.failed.tolist() == [True, False, False]  # waited 75 s > 30 s
    assert sim.observe(80.0, current=0).buffered == 2
    sim.add_ready(1, 80.0)
    assert sim.ttft[1] == pytest.approx(80.0 + 1.1 - 50.0)
    assert sim.drain(1, 81.0) == pytest.approx(84.0)  # the second one ends at 84


# --- the engine ---------------------------------------------------------------------


def step_scenario(
    pattern_jobs: list[SimJob] | None = None, serving: int = 1, **lending: float
) -> Scenario:
    """3 training nodes + `serving` serving nodes, 8 GPUs each; one service,
    quiet -> 50x for 20 min -> quiet."""
    times = list(np.arange(0, 3600, 10.0))  # 0.1/s
    times += list(np.arange(3600, 4800, 0.2))  # 5/s for 20 min
    times += list(np.arange(4800, 10800, 10.0))
    svc = ServiceDef(service_spec("web", 2, 4, 2.0, 30.0, down_window=120.0),
                     trace(sorted(times), ctx=600, gen=40),
                     ReplicaModel(prefill_tps=6000, tpot_base=0.03, tpot_slope=0.03,
                                  max_batch=8))  # fmt: skip
    return Scenario("step", 3 + serving, 8, serving, [svc], pattern_jobs or [], 10800.0,
                    Lending(**lending), leaf_size=4)  # type: ignore[arg-type]  # fmt: skip


def test_the_autoscaler_follows_the_step_and_replicas_are_accounted():
    out = ServingEngine.for_setup(setup(step_scenario(), "split")).run_serving([])
    run = out.services[0]
    ups = [e for e in run.scale_events if e[2] > e[1] and e[0] > 300]  # after the cold start
    downs = [e for e in run.scale_events if e[2] < e[1]]
    assert ups and 3600 <= ups[0][0] <= 3700  # quiet hour: no change; the step: at once
    assert max(e[2] for e in ups) >= 3
    assert downs and downs[-1][2] == 1 and downs[-1][0] >= 4800 + 120  # after the window
    assert all(a == pytest.approx(30.0) for a in run.ready_after)  # free GPUs: startup only
    assert run.sim.failed.sum() == 0
    f = figures(out)
    # serving GPU-hours: 2 GPUs per replica over their lives, within the horizon
    assert f["cluster"]["serving_gpu_hours"] == pytest.approx(run.gpu_seconds / 3600)
    assert 2 * 3 < f["cluster"]["serving_gpu_hours"] < 2 * 4 * 3


def borrowers(n: int, gpus: int = 4, hours: float = 10.0, submit: float = 0.0, first: int = 1):
    jobs = []
    for i in range(first - 1, first - 1 + n):
        req = JobRequest(name="t", nodes_min=1, nodes_max=1, gpus_per_node=gpus,
                         time_limit=int(hours * 3600 * 1.2), requeue=True)  # fmt: skip
        jobs.append(SimJob(id=i + 1, submit=submit, duration=hours * 3600, request=req,
                           account="train", checkpoint_interval=600.0, checkpoint_cost=20.0,
                           original={"borrow": True}))  # fmt: skip
    return jobs


@pytest.mark.parametrize("pattern", ["split", "bridge", "tidal", "unified"])
def test_patterns_on_a_step(pattern: str):
    # 6 x 4-GPU training jobs fill the 3 training nodes, 2 x 6-GPU ones borrow the serving
    # pool (2 nodes: one replica keeps 2 GPUs busy; the step needs 6 more GPUs)
    jobs = borrowers(6, gpus=4) + borrowers(2, gpus=6, first=7)
    sc = step_scenario(jobs, serving=2, lend_after=300.0, keep_idle=0,
                       reclaim_objective=90.0, switch_gap=60.0,
                       bridge_max_time=20 * 3600.0)  # fmt: skip
    st = setup(sc, pattern)
    out = ServingEngine.for_setup(st).run_serving(st.jobs)
    f = figures(out)
    svc, tr, cl = f["service"], f["training"], f["cluster"]
    if pattern == "split":
        assert tr["borrowed_gpu_hours"] == 0 and tr["preemptions"] == 0
    if pattern in ("bridge", "tidal"):
        assert tr["borrowed_gpu_hours"] > 0  # the quiet serving node went to training
    if pattern == "tidal":
        # the step reclaims: replicas ready within the objective, the borrower saved
        # its checkpoint on the warning (grace 90 - 30 - 10 = 50 s > 20 s cost)
        assert tr["preemptions"] >= 1 and tr["lost_gpu_hours"] == 0
        assert svc["ready_after_max"] <= 90.0 + 1e-6
    if pattern == "bridge":
        assert cl["switching_gpu_hours"] > 0
    if pattern == "unified":
        assert tr["preemptions"] >= 1  # replicas take GPUs from training
    assert svc["failed"] == 0


def test_costs_are_seed_000s_arithmetic():
    # seed 000's example: 2,000 GPU-hours a month at 15 = 30,000 saved, 12,000 more upkeep,
    # net 18,000 a month; 180,000 invested pays back in 10 months
    runs = {
        "split": {"training": {"useful_train_gpu_hours": 10_000.0},
                  "service": {"slo_attainment": 0.999}},
        "tidal": {"training": {"useful_train_gpu_hours": 12_000.0},
                  "service": {"slo_attainment": 0.999}},
    }  # fmt: skip
    prices = Prices(gpu_hour=15.0, investment={"tidal": 180_000}, opex={"tidal": 12_000})
    c = costs(runs, prices, horizon_hours=730.0, capacity_gpus=100)
    assert c["split"]["shortfall_gpu_hours_month"] == 2000
    assert c["tidal"]["monthly_net_saving"] == pytest.approx(30_000 - 12_000)
    assert c["tidal"]["payback_months"] == pytest.approx(10.0)
    runs["tidal"]["service"]["slo_attainment"] = 0.9
    assert not costs(runs, prices, 730.0, 100)["tidal"]["meets_slo"]
    assert math.isinf(costs(runs, Prices(opex={"tidal": 50_000}, investment={"tidal": 1}),
                            730.0, 100)["tidal"]["payback_months"])  # fmt: skip


# --- one autoscaler for the twin and the live controller -------------------------------


def test_twin_and_live_controller_decide_alike_from_the_same_measurements():
    """The twin's simulated router and the live router's stats, for the same
    requests, give the autoscaler the same observations and so the same
    decisions: both drivers run tide.sched.serving.hpa.decide."""
    from tide.model.service import Autoscaling
    from tide.sched.serving import hpa
    from tide.serve import controller as live
    from tide.sim.serving import engine as twin

    assert live.hpa.decide is twin.hpa.decide is hpa.decide
    assert live.rollout_step is twin.rollout_step
    rng = np.random.default_rng(7)
    times = np.sort(rng.uniform(0, 600, 900)) * np.linspace(1, 0.3, 900)
    times = np.sort(times)
    spec = Autoscaling(min_replicas=1, max_replicas=10, target_inflight=2.0, period=10.0,
                       down_window=60.0)  # fmt: skip
    sim = ServiceSim("s", trace(list(times), ctx=2000, gen=60),
                     ReplicaModel(max_batch=4), Slo(), 10.0, 700.0)  # fmt: skip
    for rid in range(4):
        sim.add_ready(rid, 0.0)
    st_twin, st_live = hpa.HpaState(), hpa.HpaState()
    desired, prev, seen = 4, None, 0
    cum = 0.0
    for k in range(1, 61):
        now = k * 10.0
        obs_twin = sim.observe(now, desired)
        # the live router's counters for the same period: cumulative in-flight
        # seconds and requests, its window p95, its buffered count
        cum += float(sim.inflight_s[k - 1])
        seen += obs_twin.requests
        stats = {"uptime": now, "inflight_seconds": cum, "requests": seen, "inflight": 0,
                 "buffered": obs_twin.buffered,
                 "window": {"ttfb": {"p95": obs_twin.p95}}}  # fmt: skip
        obs_live = live.observation(prev, stats, desired, obs_twin.ready)
        prev = stats
        if k == 1:
            continue  # the live controller's first look has no previous stats
        assert obs_live.inflight == pytest.approx(obs_twin.inflight)
        assert obs_live.requests == obs_twin.requests
        d_twin, st_twin = hpa.decide(spec, st_twin, obs_twin, now)
        d_live, st_live = hpa.decide(spec, st_live, obs_live, now)
        assert (d_twin.desired, d_twin.reason) == (d_live.desired, d_live.reason)
        desired = d_twin.desired


def test_the_period_starts_with_the_services_running():
    """A week compares steady operation: the first replicas are loaded at t=0
    (they were running before), so the first requests are served, not failed
    after the router's buffer while a model loads (that cold start used to fail
    the same few requests in every pattern)."""
    out = ServingEngine.for_setup(setup(step_scenario(), "split")).run_serving([])
    run = out.services[0]
    first = run.sim.ttft[:4]  # requests at 0, 10, 20 and 30 s
    assert not run.sim.failed[:4].any() and np.all(first < 1.0), first
    assert all(a == pytest.approx(30.0) for a in run.ready_after)  # scale-ups only


def test_buffered_requests_are_not_counted_in_flight_twice():
    """The live router counts a request waiting for a replica as in flight too;
    the observation takes it out (the autoscaler adds the buffered ones), as
    the twin's simulated router never counts it: 6 requests waited the whole
    10 s period with no replica, so 6 are buffered and none is in flight."""
    from tide.serve import controller as live

    prev = {"uptime": 10.0, "inflight_seconds": 5.0, "buffered_seconds": 0.0, "requests": 3}
    stats = {"uptime": 20.0, "inflight_seconds": 65.0, "buffered_seconds": 60.0,
             "requests": 9, "inflight": 6, "buffered": 6,
             "window": {"ttfb": {"p95": None}}}  # fmt: skip
    obs = live.observation(prev, stats, 0, 0)
    assert (obs.inflight, obs.buffered, obs.requests) == (0.0, 6, 6)
    assert live.observation(None, stats, 0, 0).inflight == 0.0
    spec = Autoscaling(min_replicas=0, max_replicas=10, target_inflight=2.0)
    d, _ = hpa.decide(spec, hpa.HpaState(), obs, 20.0)
    assert d.desired == 3  # ceil(6 / 2), not ceil(12 / 2)


def test_unified_replicas_go_before_a_training_backlog():
    """Pattern 1 (Kubernetes-first): a PriorityClass orders the scheduling queue,
    so a scale-up's replicas are considered before training jobs queued long
    before them, and preempt training at once; without it they waited behind
    the backlog (hours in the week scenario) and preempted nothing."""
    jobs = borrowers(6, gpus=4) + borrowers(2, gpus=6, first=7)
    jobs += borrowers(12, gpus=4, first=9)  # a backlog that cannot start before the step
    sc = step_scenario(jobs, serving=2)
    st = setup(sc, "unified")
    f = figures(ServingEngine.for_setup(st).run_serving(st.jobs))
    svc, tr = f["service"], f["training"]
    assert tr["preemptions"] >= 1
    # decision -> ready: the pass, the 30 s grace and the 30 s startup, not the backlog
    assert svc["ready_after_max"] <= 30.0 + 30.0 + 60.0 + 1e-6, svc
    assert svc["failed"] == 0


def test_report_calls_near_equal_objectives_a_tie_and_names_who_misses_it():
    from tide.sim.serving.report import explain

    def pattern(att: float, useful: float, idle: float, lost: float) -> dict:
        return {
            "service": {"slo_attainment": att, "under_replicated_hours": 1.0,
                        "ready_after_max": 45.0},
            "training": {"useful_train_gpu_hours": useful, "borrowed_gpu_hours": 0.0,
                         "lost_gpu_hours": lost, "preemptions": 1},
            "cluster": {"idle_gpu_hours": idle, "switching_gpu_hours": 0.0,
                        "wasted_share": (idle + lost) / 1000.0},
            "cost": {"monthly_cost": 100.0, "meets_slo": att >= 0.99,
                     "monthly_net_saving": 0.0, "payback_months": None, "investment": 0.0},
        }  # fmt: skip

    result = {
        "patterns": {"split": pattern(0.9915, 500, 300, 0), "tidal": pattern(0.9917, 600, 200, 5),
                     "unified": pattern(0.94, 700, 100, 20)},
        "prices": {"slo_target": 0.99, "baseline": "split", "gpu_hour": 15.0},
    }  # fmt: skip
    text = "\n".join(explain(result))
    assert "split, tidal tie (within 0.1 point)" in text
    assert "met (99% of requests) by split, tidal, missed by unified" in text
    assert "split 30.0%, tidal 20.5%, unified 12.0% of it delivered nothing" in text


def test_unified_partition_holds_its_nodes_as_a_tuple_and_saves_as_all():
    """The unified pattern's one partition spans every node. Its nodes were a list
    (Partition.nodes is a tuple everywhere else), so it compared unequal to the same
    partition read from YAML and was saved as `gpu[001-004]`, not `ALL`."""
    from tide.config.loaded import LoadedCluster
    from tide.config.yaml_save import save_yaml

    st = setup(step_scenario(serving=1), "unified")
    (part,) = st.cluster.partitions
    assert part.nodes == tuple(n.name for n in st.cluster.nodes) == ("gpu001", "gpu002",
                                                                      "gpu003", "gpu004")
    text = save_yaml(LoadedCluster(st.cluster, st.config, st.accounts, pools=st.pools))
    assert "  nodes: ALL\n" in text
