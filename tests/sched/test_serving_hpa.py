"""The autoscaler (tide.sched.serving.hpa): Kubernetes HPA arithmetic by hand,
stabilization windows, rate limits, scale to zero, the daily profile; and
hypothesis properties (no flapping under noise, bounds always hold)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.model.service import Autoscaling, DailyProfile
from tide.sched.serving.hpa import HpaState, Observation, decide, recommend

CONC = Autoscaling(min_replicas=1, max_replicas=20, target_inflight=4.0)


@pytest.mark.parametrize(
    ("current", "ready", "inflight", "buffered", "want"),
    [
        (2, 2, 17.0, 0, 5),  # 17 / 2 / 4 = 2.125 -> ceil(2 x 2.125) = 5 (the docstring's example)
        (2, 2, 8.0, 0, 2),  # exactly on target
        (2, 2, 8.7, 0, 2),  # ratio 1.0875: within the 0.1 tolerance, no change
        (2, 2, 9.0, 0, 3),  # ratio 1.125: outside it
        (4, 4, 4.0, 0, 1),  # ratio 0.25 -> ceil(4 x 0.25) = 1
        (4, 2, 16.0, 0, 4),  # only ready replicas are measured: 16 / 2 / 4 = 2 -> 4
        (0, 0, 0.0, 3, 1),  # buffered requests and nothing ready: scale from zero
        (0, 0, 0.0, 9, 3),  # ... with enough replicas for them: ceil(9 / 4)
        (3, 0, 0.0, 0, 3),  # replicas starting, nothing to measure: keep
        (2, 2, 4.0, 8, 3),  # buffered requests count as load: 12 / 2 / 4 = 1.5 -> 3
    ],
)
def test_recommendation_is_hpa_arithmetic(current, ready, inflight, buffered, want):
    obs = Observation(current=current, ready=ready, inflight=inflight, buffered=buffered)
    assert recommend(CONC, obs)[0] == want


def test_latency_metric_and_the_larger_recommendation_wins():
    spec = Autoscaling(max_replicas=20, target_inflight=4.0, target_p95=0.5)
    # in flight says 2 (on target), p95 1.0 s against 0.5 s says ceil(2 x 2) = 4
    r, why = recommend(spec, Observation(current=2, ready=2, inflight=8.0, p95=1.0))
    assert (r, "p95" in why) == (4, True)
    # fast answers, heavy concurrency: in flight wins
    r, why = recommend(spec, Observation(current=2, ready=2, inflight=24.0, p95=0.1))
    assert (r, "in flight" in why) == (6, True)


def run(spec: Autoscaling, loads: list[float], period: float = 10.0, ready_lag: bool = False):
    """Drive decide() like a driver: each period the replicas asked for are ready."""
    state, current, out = HpaState(), spec.min_replicas, []
    for k, load in enumerate(loads):
        now = k * period
        obs = Observation(current=current, ready=current, inflight=load, requests=int(load > 0))
        d, state = decide(spec, state, obs, now)
        current = d.desired
        out.append(current)
    return out


def test_scale_up_at_once_and_down_only_after_the_window():
    spec = Autoscaling(min_replicas=1, max_replicas=10, target_inflight=1.0, down_window=60.0)
    # load 4 for 3 periods, then 0: up to 4 at once; down only when 60 s of lower
    # recommendations have passed (the 4 recorded at t=20 leaves the window after t=80)
    got = run(spec, [4, 4, 4, 0, 0, 0, 0, 0, 0, 0])
    assert got == [4, 4, 4, 4, 4, 4, 4, 4, 1, 1]


def test_scale_up_rate_limit_doubles_or_adds_four():
    spec = Autoscaling(min_replicas=1, max_replicas=100, target_inflight=1.0)
    # 1 -> at most max(2, 5) = 5 -> max(10, 9) = 10 -> 20 -> 40 -> 50 (the load)
    assert run(spec, [50] * 6) == [5, 10, 20, 40, 50, 50]


def test_up_window_takes_the_lowest_recent_recommendation():
    spec = Autoscaling(max_replicas=10, target_inflight=1.0, up_window=30.0)
    # a one-period spike is ignored while the window still holds a lower recommendation
    got = run(spec, [1, 8, 1, 1, 6, 6, 6, 6])
    assert got[:4] == [1, 1, 1, 1]
    assert got[-1] == 6 and got[4] == 1  # 6 sustained for the whole 30 s window


def test_max_and_min_bound_the_result():
    spec = Autoscaling(min_replicas=2, max_replicas=3, target_inflight=1.0)
    assert run(spec, [100, 100, 0]) == [3, 3, 3]
    d, _ = decide(spec, HpaState(), Observation(current=3, ready=3, inflight=100.0), 0.0)
    assert "capped at max 3" in d.reason


def test_scale_to_zero_after_idle_and_back_from_zero():
    spec = Autoscaling(
        min_replicas=0, max_replicas=4, target_inflight=1.0, down_window=0.0,
        scale_to_zero_after=60.0,
    )  # fmt: skip
    state, current = HpaState(), 1
    seen = []
    for k in range(12):
        now = k * 10.0
        busy = k < 2
        obs = Observation(current, current, inflight=float(busy), requests=int(busy))
        d, state = decide(spec, state, obs, now)
        current = d.desired
        seen.append(current)
    # last request at t=10: kept at 1 until t=70, then 0
    assert seen == [1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    assert "scale to zero" in d.reason or current == 0
    d, state = decide(spec, state, Observation(0, 0, buffered=2), 130.0)
    assert d.desired == 2 and "waiting" in d.reason
    d, state = decide(spec, state, Observation(2, 0, buffered=9), 140.0)
    assert d.desired == 2  # replicas starting: they will take the waiting requests


def test_a_service_at_zero_nobody_called_stays_at_zero():
    """The idle hold keeps a running replica for scale_to_zero_after; it does not
    start one for a service created at zero (it used to, at the first evaluation,
    and stopped it again once the hold ran out)."""
    spec = Autoscaling(min_replicas=0, max_replicas=4, target_inflight=1.0,
                       scale_to_zero_after=60.0)  # fmt: skip
    state = HpaState()
    for now in (0.0, 1.0, 30.0):
        d, state = decide(spec, state, Observation(0, 0), now)
        assert d.desired == 0, d.reason
    d, state = decide(spec, state, Observation(0, 0, buffered=1), 31.0)
    assert d.desired == 1 and "waiting" in d.reason


def test_daily_profile_sets_a_scheduled_minimum():
    profile = DailyProfile(points=((8 * 3600.0, 4), (20 * 3600.0, 1)), utc_offset=3600.0)
    assert profile.minimum_at(0.0) == 1  # 01:00 local: yesterday's 20:00 point
    assert profile.minimum_at(7 * 3600.0) == 4  # 08:00 local
    assert profile.minimum_at(19 * 3600.0 - 1) == 4
    assert profile.minimum_at(19 * 3600.0) == 1  # 20:00 local
    spec = Autoscaling(min_replicas=1, max_replicas=10, target_inflight=4.0, schedule=profile)
    d, _ = decide(spec, HpaState(), Observation(current=1, ready=1, inflight=0.0), 9 * 3600.0)
    assert d.desired == 4 and "scheduled minimum 4 (from 08:00)" in d.reason


# --- properties ----------------------------------------------------------------

SPECS = st.builds(
    Autoscaling,
    min_replicas=st.integers(0, 3),
    max_replicas=st.integers(3, 30),
    target_inflight=st.floats(0.5, 8.0),
    down_window=st.sampled_from([0.0, 30.0, 60.0, 300.0]),
    up_window=st.sampled_from([0.0, 0.0, 20.0]),
    scale_to_zero_after=st.sampled_from([30.0, 300.0]),
)


@settings(max_examples=200, deadline=None)
@given(spec=SPECS, loads=st.lists(st.floats(0.0, 200.0), min_size=1, max_size=60))
def test_bounds_always_hold(spec: Autoscaling, loads: list[float]):
    for n in run(spec, loads):
        assert n <= spec.max_replicas
        assert n >= min(spec.min_replicas, spec.max_replicas)


@settings(max_examples=200, deadline=None)
@given(spec=SPECS, loads=st.lists(st.floats(0.0, 200.0), min_size=2, max_size=60))
def test_no_scale_down_within_the_window_after_a_scale_up(spec: Autoscaling, loads):
    """HPA's promise: after a scale-up to N at t, the count stays >= N until
    t + down_window, whatever the metric does meanwhile."""
    period = 10.0
    got = run(spec, loads, period)
    prev = spec.min_replicas
    for k, n in enumerate(got):
        if n > prev:
            for j in range(k + 1, len(got)):
                if (j - k) * period < spec.down_window:
                    assert got[j] >= n, (k, j, got)
        prev = n


@settings(max_examples=200, deadline=None)
@given(
    level=st.floats(2.0, 40.0),
    noise=st.lists(st.floats(-0.09, 0.09), min_size=30, max_size=60),
)
def test_noise_within_tolerance_never_moves_a_settled_service(level: float, noise: list[float]):
    spec = Autoscaling(min_replicas=1, max_replicas=100, target_inflight=1.0)
    n = math.ceil(level)
    state = HpaState()
    for k, e in enumerate(noise):
        obs = Observation(current=n, ready=n, inflight=n * (1 + e), requests=1)
        d, state = decide(spec, state, obs, k * 10.0)
        assert d.desired == n


@settings(max_examples=100, deadline=None)
@given(
    level=st.integers(2, 30),
    noise=st.lists(st.floats(-0.5, 0.5), min_size=40, max_size=80),
)
def test_noisy_load_changes_direction_at_most_once_per_window(level: int, noise: list[float]):
    """Large noise (+-50%) around a steady level: the count may go up, but a
    reversal (down after up) needs a whole down_window of lower demand, so the
    number of reversals is bounded by the run's length over the window."""
    spec = Autoscaling(min_replicas=1, max_replicas=200, target_inflight=1.0, down_window=120.0)
    got = run(spec, [level * (1 + e) for e in noise])
    reversals = sum(
        1 for a, b, c in zip(got, got[1:], got[2:], strict=False) if (b - a) * (c - b) < 0
    )
    assert reversals <= len(noise) * 10.0 / spec.down_window + 1
