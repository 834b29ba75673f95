"""Twin metrics on hand-computed mini runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tide.sim.metrics import (
    JobResult,
    Sample,
    bounded_slowdown,
    compute_metrics,
    integrate,
    jain,
    size_class,
)


@pytest.mark.parametrize(
    ("wait", "run", "bsld"),
    [(0, 100, 1.0), (50, 5, 5.5), (90, 300, 1.3), (0, 5, 1.0), (10, 5, 1.5), (100, 1000, 1.1)],
)
def test_bounded_slowdown(wait: float, run: float, bsld: float) -> None:
    assert bounded_slowdown(wait, run) == pytest.approx(bsld)


@pytest.mark.parametrize(
    ("xs", "j"), [([1, 1, 1, 1], 1.0), ([1, 0, 0, 0], 0.25), ([1, 2], 0.9), ([], None), ([0], None)]
)
def test_jain(xs: list[float], j: float | None) -> None:
    assert jain(xs) == (pytest.approx(j) if j is not None else None)


def _mini() -> list[JobResult]:
    return [
        JobResult(1, account="x", gpus=2, nodes=2, submit=0, start=0, end=100,
                  state="COMPLETED", held_idle_gpu_seconds=360, leaf_switches=1,
                  min_leaf_switches=1),
        JobResult(2, account="y", gpus=1, nodes=1, submit=0, start=50, end=55, state="COMPLETED"),
        JobResult(3, account="y", gpus=4, nodes=2, submit=10, start=100, end=400,
                  state="COMPLETED", lost_gpu_seconds=720, restarts=1, leaf_switches=2,
                  min_leaf_switches=1),
        JobResult(4, account="z", gpus=8, nodes=1, submit=20, deadlocked=True),
    ]  # fmt: skip


TIMELINE = [  # t, allocated, idle while the head is blocked, queue, per account
    (0, 2, 0, 1, {"x": 2}),
    (50, 3, 0, 1, {"x": 2, "y": 1}),
    (55, 2, 0, 2, {"x": 2}),
    (100, 4, 4, 1, {"y": 4}),
    (400, 0, 0, 1, {}),
]


def test_counts_waits_and_slowdown() -> None:
    m = compute_metrics(_mini(), 8)
    assert (m["jobs"], m["jobs_completed"], m["jobs_deadlocked"]) == (4, 3, 1)
    assert m["jobs_never_started"] == 1
    # waits 0, 50, 90 (job 4 never started)
    assert m["mean_wait"] == pytest.approx(140 / 3)
    assert m["p50_wait"] == 50
    assert m["p95_wait"] == pytest.approx(50 + 0.9 * 40)  # linear: rank 1.9
    assert m["p99_wait"] == pytest.approx(50 + 0.98 * 40)
    assert m["max_wait"] == 90
    assert m["mean_bsld"] == pytest.approx((1 + 5.5 + 1.3) / 3)
    assert m["mean_flow"] == pytest.approx((100 + 55 + 390) / 3)
    assert m["makespan"] == 400
    assert m["held_idle_gpu_hours"] == pytest.approx(0.1)
    assert m["lost_gpu_hours"] == pytest.approx(0.2)


def test_percentiles_are_numpy_linear() -> None:
    waits = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    recs = [JobResult(i, gpus=1, submit=0, start=w, end=w + 1) for i, w in enumerate(waits)]
    m = compute_metrics(recs, 1)
    for key, q in (("p50_wait", 50), ("p95_wait", 95), ("p99_wait", 99)):
        assert m[key] == pytest.approx(float(np.percentile(waits, q, method="linear")))


def test_utilization_without_timeline() -> None:
    m = compute_metrics(_mini(), 8)
    allocated = 2 * 100 + 1 * 5 + 4 * 300 + 360  # runs plus GPUs held idle by the gang
    assert m["utilization"] == pytest.approx(allocated / (8 * 400))
    assert m["effective_utilization"] == pytest.approx((allocated - 360 - 720) / 3200)
    assert m["fragmentation"] is None  # needs the engine's timeline


def test_timeline_metrics() -> None:
    m = compute_metrics(_mini(), 8, TIMELINE, {"x": 2, "y": 1, "z": 1})
    assert m["utilization"] == pytest.approx(1405 / 3200)  # 2*50 + 3*5 + 2*45 + 4*300
    assert m["effective_utilization"] == pytest.approx((1405 - 360 - 720) / 3200)
    assert m["fragmentation"] == pytest.approx(4 * 300 / 3200)
    f = m["fairness"]
    x, y = 200 / 1405, 1205 / 1405
    assert f["accounts"]["x"] == {"achieved": pytest.approx(x), "target": 0.5}
    assert f["accounts"]["y"] == {"achieved": pytest.approx(y), "target": 0.25}
    assert f["accounts"]["z"] == {"achieved": 0.0, "target": 0.25}
    r = [x / 0.5, y / 0.25, 0.0]
    assert f["jain"] == pytest.approx(sum(r) ** 2 / (3 * sum(v * v for v in r)))


def test_fairness_defaults_to_equal_targets_and_skips_untargeted() -> None:
    f = compute_metrics(_mini(), 8, TIMELINE)["fairness"]
    assert {a: v["target"] for a, v in f["accounts"].items()} == {
        "x": pytest.approx(1 / 3),
        "y": pytest.approx(1 / 3),
        "z": pytest.approx(1 / 3),
    }
    g = compute_metrics(_mini(), 8, TIMELINE, {"x": 1, "y": 1})["fairness"]
    assert g["accounts"]["z"]["target"] is None and g["accounts"]["x"]["target"] == 0.5
    assert g["jain"] == pytest.approx(jain([2 * 200 / 1405, 2 * 1205 / 1405]))


def test_topology() -> None:
    t = compute_metrics(_mini(), 8)["topology"]
    assert t == {"multi_node_jobs": 2, "mean_leaf_switches": 1.5, "on_fewest_leaves": 0.5}
    flat = [JobResult(1, gpus=16, nodes=2, submit=0, start=0, end=1)]
    assert compute_metrics(flat, 16)["topology"]["multi_node_jobs"] == 0


def test_wait_by_size() -> None:
    recs = [
        JobResult(1, gpus=0, submit=0, start=10, end=20),
        JobResult(2, gpus=4, submit=0, start=30, end=40),
        JobResult(3, gpus=5, submit=0, start=100, end=200),
        JobResult(4, gpus=63, submit=0, start=0, end=200),
        JobResult(5, gpus=64, submit=0, start=7, end=300),
        JobResult(6, gpus=512, submit=5),  # never started: not in the waits
    ]
    w = compute_metrics(recs, 600)["wait_by_size"]
    assert w["1-4"] == {"jobs": 2, "mean": 20.0, "p50": 20.0, "p95": 29.0, "max": 30.0}
    assert w["5-63"]["jobs"] == 2 and w["5-63"]["mean"] == 50.0
    assert w["64+"] == {"jobs": 1, "mean": 7.0, "p50": 7.0, "p95": 7.0, "max": 7.0}
    assert [size_class(g) for g in (0, 1, 4, 5, 63, 64, 1024)] == [
        "1-4", "1-4", "1-4", "5-63", "5-63", "64+", "64+"]  # fmt: skip


def test_wait_counts_from_eligible() -> None:
    r = JobResult(1, gpus=1, submit=0, eligible=100, start=130, end=150)
    m = compute_metrics([r], 1)
    assert m["mean_wait"] == 30 and m["mean_flow"] == 50
    assert m["mean_bsld"] == pytest.approx(50 / 20)


def test_integrate_clips_to_window() -> None:
    s = [Sample(-10, 1, 0, 0), Sample(5, 3, 1, 2, {"a": 3})]
    out = integrate(s, 0, 10)
    assert out["allocated"] == 5 * 1 + 5 * 3 and out["blocked_idle"] == 5
    assert out["by_account"] == {"a": 15}


def test_empty_run() -> None:
    m = compute_metrics([], 8)
    assert m["jobs"] == 0 and m["utilization"] is None and m["mean_wait"] is None
    assert m["fairness"] == {"jain": None, "accounts": {}}
    assert not any(isinstance(v, float) and math.isnan(v) for v in m.values())


def test_engine_account_integrals_override_the_timeline() -> None:
    exact = {"x": 100.0, "y": 300.0}
    f = compute_metrics(_mini(), 8, TIMELINE, {"x": 1, "y": 1}, account_gpu_seconds=exact)
    assert f["fairness"]["accounts"]["x"]["achieved"] == pytest.approx(0.25)
    assert f["fairness"]["accounts"]["y"]["achieved"] == pytest.approx(0.75)


def test_window_extends_to_the_last_sample() -> None:
    """Two deadlocked gangs hold 8 GPUs each until the engine stops at 7200 s."""
    recs = [
        JobResult(1, account="a", gpus=16, nodes=2, submit=0, held_idle_gpu_seconds=8 * 7200,
                  deadlocked=True),
        JobResult(2, account="b", gpus=16, nodes=2, submit=0, held_idle_gpu_seconds=8 * 7200,
                  deadlocked=True),
    ]  # fmt: skip
    tl = [Sample(0, 16, 0, 2, {"a": 8, "b": 8}), Sample(7200, 16, 0, 2, {"a": 8, "b": 8})]
    m = compute_metrics(recs, 16, tl)
    assert m["makespan"] == 7200 and m["utilization"] == 1.0
    assert m["effective_utilization"] == 0.0 and m["held_idle_gpu_hours"] == 32
    assert m["jobs_deadlocked"] == 2 and m["mean_wait"] is None
