"""tide.efficiency: progress reports -> tokens/s, step time percentiles, MFU."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.efficiency import (
    SERIES_MAX,
    EfficiencyError,
    Measured,
    Progress,
    bucket,
    bucket_value,
    group_figures,
    job_figures,
    model_flops_per_token,
    percentile,
    tokens_between,
)
from tide.model.gpu_peaks import peak_tflops


def test_steady_run_gives_rate_step_time_and_mfu() -> None:
    p = Progress(flops_per_token=6 * 7e9)
    for step in range(0, 101):  # one step every 0.5 s, 4096 tokens each
        p.record(step, 4096, 1000 + 0.5 * step, attempt=0)
    f = job_figures(Measured(p, gpus=8, peak_tflops=312.0, alloc_gpu_seconds=8 * 60.0))
    assert f.tokens_per_s == pytest.approx(8192)
    assert f.step_p50 == pytest.approx(0.5, rel=0.01)
    assert f.step_p95 == pytest.approx(0.5, rel=0.01)
    assert f.steps == 100
    assert f.mfu == pytest.approx(8192 * 6 * 7e9 / (8 * 312e12))
    # useful tokens (101 steps) over the 60 allocated seconds at the same peak
    assert f.mfu_effective == pytest.approx(101 * 4096 * 6 * 7e9 / (8 * 60 * 312e12))


def test_percentiles_follow_the_distribution_of_steps() -> None:
    p = Progress()
    t = 0.0
    for step in range(1, 101):  # 90 steps of 1 s, 10 of 3 s
        t += 3.0 if step > 90 else 1.0
        p.record(step, 0, t, 0)
    assert percentile(p.hist, 50) == pytest.approx(1.0, rel=0.01)
    assert percentile(p.hist, 95) == pytest.approx(3.0, rel=0.01)


def test_a_restart_redoes_steps_that_are_not_useful_and_no_interval_spans_it() -> None:
    p = Progress()
    for step in range(0, 11):
        p.record(step, 100, float(step), attempt=0)
    # requeued: resumes from a checkpoint at step 5, long after
    for k, step in enumerate(range(6, 16)):
        p.record(step, 100, 1000.0 + k, attempt=1)
    assert p.tokens == 2100
    assert p.useful_tokens == 1600  # steps 0..15; steps 6..10 were done twice
    assert p.step_seconds == pytest.approx(10 + 9)  # the restart gap is not a step
    assert p.max_step == 15


def test_reports_every_few_steps_spread_tokens_over_the_steps() -> None:
    p = Progress()
    p.record(10, 1000, 0.0, 0)
    p.record(20, 1000, 5.0, 0)
    assert p.step_seconds == 5.0
    assert p.steps == 10
    assert percentile(p.hist, 50) == pytest.approx(0.5, rel=0.01)


def test_series_is_bounded_and_keeps_the_newest_point() -> None:
    p = Progress()
    for step in range(5 * SERIES_MAX):
        p.record(step, 1, float(step), 0)
    assert len(p.series) <= SERIES_MAX
    assert p.series[-1] == (5 * SERIES_MAX - 1.0, 5.0 * SERIES_MAX, 5 * SERIES_MAX - 1)
    assert tokens_between(p.series, 0, 1e9) == pytest.approx(5 * SERIES_MAX - 1, rel=0.01)
    assert Progress.from_dict(p.to_dict()) == p


def test_group_mfu_is_weighted_by_gpu_time_and_skips_unknown_models() -> None:
    a, b, c = Progress(flops_per_token=1e9), Progress(flops_per_token=1e9), Progress()
    for p, rate in ((a, 1000.0), (b, 3000.0), (c, 50.0)):
        for step in range(11):
            p.record(step, rate, float(step), 0)
    g = group_figures(
        [
            Measured(a, 1, 100.0, 10.0),
            Measured(b, 1, 100.0, 10.0),
            Measured(c, 1, 100.0, 10.0),
        ]
    )
    assert g.mfu == pytest.approx((1000 + 3000) * 1e9 / (2 * 100e12))
    assert g.tokens == pytest.approx(11 * (1000 + 3000 + 50))
    assert g.tokens_per_s == pytest.approx((1000 + 3000 + 50) / 3)


def test_unknown_peak_or_model_gives_no_mfu() -> None:
    p = Progress()
    p.record(0, 1, 0.0, 0)
    p.record(1, 1, 1.0, 0)
    f = job_figures(Measured(p, 1, None, 1.0))
    assert f.mfu is None and f.mfu_effective is None and f.tokens_per_s == 1.0


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("params=7B", 42e9),
        ("run 3; tide.params=1.3e9", 7.8e9),
        ("flops_per_token=4.2e10 params=7B", 4.2e10),
        ("nothing declared", None),
        ("", None),
    ],
)
def test_model_declarations_in_a_comment(comment: str, expected: float | None) -> None:
    got = model_flops_per_token(comment)
    assert got == (pytest.approx(expected) if expected else None)


@pytest.mark.parametrize("comment", ["params=-1", "params=lots", "flops_per_token=0", "params="])
def test_bad_declarations_name_the_key_and_the_fix(comment: str) -> None:
    with pytest.raises(EfficiencyError, match=r"(params|flops_per_token)=.*e\.g\."):
        model_flops_per_token(comment)


def test_gpu_peaks_match_vendor_names_and_overrides() -> None:
    assert peak_tflops("a100") == 312.0
    assert peak_tflops("NVIDIA A100-SXM4-80GB") == 312.0
    assert peak_tflops("H100 PCIe") == 756.0
    assert peak_tflops("h100") == 989.0
    assert peak_tflops("tpu") is None
    assert peak_tflops("") is None
    assert peak_tflops("a100", {"A100": 624.0}) == 624.0
    assert peak_tflops("mystery-x", {"mystery": 10.0}) == 10.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 5), st.floats(0.001, 100.0), st.floats(0, 1e6)),
        min_size=1,
        max_size=60,
    ),
    st.lists(st.integers(0, 59), max_size=3),
)
def test_invariants_hold_for_any_report_stream(
    reports: list[tuple[int, float, float]], restarts_at: list[int]
) -> None:
    """Useful tokens never exceed tokens; timed steps and seconds add up to
    the intervals; percentiles lie within the step times seen (2 % buckets)."""
    p = Progress()
    step, t, attempt = 0, 0.0, 0
    per_step: list[float] = []
    for i, (dsteps, dt, tokens) in enumerate(reports):
        if i in restarts_at:
            attempt, step, t = attempt + 1, max(0, step - 3), t + 100
            p.record(step, tokens, t, attempt)
            continue
        step, t = step + dsteps, t + dt
        before = p.steps
        p.record(step, tokens, t, attempt)
        if p.steps > before:
            per_step.append(dt / dsteps)
    assert p.useful_tokens <= p.tokens + 1e-6
    assert p.measured_tokens <= p.tokens + 1e-6
    assert len(p.series) <= SERIES_MAX
    if per_step:
        lo, hi = min(per_step), max(per_step)
        for q in (50, 95):
            v = percentile(p.hist, q)
            assert v is not None and lo / 1.021 <= v <= hi * 1.021
    assert math.isfinite(p.step_seconds)


# ------------------------------------------------ per-step times from tide.job


class _Clock:
    """A stand-in for time.monotonic that the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def helper(monkeypatch: pytest.MonkeyPatch) -> tuple[_Clock, list[dict[str, Any]]]:
    """tide.job on a hand-moved clock, its reports captured instead of sent."""
    import tide.job as tj

    clock, sent = _Clock(), []
    state = tj._new_state()
    state["atexit"] = True  # the test flushes by hand
    monkeypatch.setattr(tj, "_state", state)
    monkeypatch.setattr(tj, "time", clock)
    monkeypatch.setattr(tj, "_notify", sent.append)
    monkeypatch.setenv("RANK", "0")
    return clock, sent


def _replay(sent: list[dict[str, Any]], server_times: list[float], sketches: bool) -> Progress:
    """The server's side: fold the helper's reports, arriving at server_times."""
    p = Progress()
    for body, t in zip(sent, server_times, strict=True):
        times = {int(k): n for k, n in body["step_times"].items()} if sketches and (
            "step_times" in body) else None  # fmt: skip
        p.record(body["step"], body.get("tokens", 0.0), t, 0, times)
    return p


# 20 steps: 17 of 1 s, one of 2 s, one of 4 s, one of 8 s. By nearest rank,
# p50 = the 10th shortest = 1 s; p95 = the 19th = 4 s; p90 = the 18th = 2 s.
DURATIONS = [1.0] * 8 + [8.0] + [1.0] * 5 + [2.0] + [1.0] * 4 + [4.0]


def test_the_helper_sends_per_step_times_so_percentiles_are_per_step(
    helper: tuple[_Clock, list[dict[str, Any]]],
) -> None:
    import tide.job as tj

    clock, sent = helper
    arrivals = []
    tj.notify_step(0, every=5.0, tokens=100)
    arrivals.append(clock.now)
    for step, d in enumerate(DURATIONS, start=1):
        clock.now += d
        before = len(sent)
        tj.notify_step(step, every=5.0, tokens=100)
        if len(sent) > before:
            arrivals.append(clock.now)
    tj._flush()  # what exit sends: the steps since the last report
    arrivals += [clock.now] * (len(sent) - len(arrivals))
    assert 2 < len(sent) < len(DURATIONS)  # batched: a report every >= 5 s
    assert sent[-1]["step"] == 20 and sum(b.get("tokens", 0) for b in sent) == 2100
    sketched = sum(n for b in sent for n in b.get("step_times", {}).values())
    assert sketched == 20  # every step timed once, none twice

    p = _replay(sent, arrivals, sketches=True)
    assert percentile(p.hist, 50) == pytest.approx(1.0, rel=0.01)
    assert percentile(p.hist, 90) == pytest.approx(2.0, rel=0.01)
    assert percentile(p.hist, 95) == pytest.approx(4.0, rel=0.01)
    assert percentile(p.hist, 100) == pytest.approx(8.0, rel=0.01)
    assert p.steps == 20 and p.step_seconds == pytest.approx(sum(DURATIONS))
    # the same reports timed by the server only: interval means blur the tail
    blurred = _replay(sent, arrivals, sketches=False)
    assert percentile(blurred.hist, 95) != pytest.approx(4.0, rel=0.05)


def test_steps_between_calls_share_the_interval(
    helper: tuple[_Clock, list[dict[str, Any]]],
) -> None:
    """A loop that calls every 4 steps: each of those steps gets a quarter."""
    import tide.job as tj

    clock, sent = helper
    tj.notify_step(0, every=0)
    clock.now += 2.0
    tj.notify_step(4, every=0)  # 4 steps in 2 s: 0.5 s each
    clock.now += 3.0
    tj.notify_step(4, every=0)  # the same step again: no time, no steps
    clock.now += 1.0
    tj.notify_step(5, every=0)  # 4 s since step 4 was first reached
    assert [b.get("step_times") for b in sent] == [
        None,
        {str(bucket(0.5)): 4},
        None,
        {str(bucket(4.0)): 1},
    ]


def test_exit_sends_nothing_when_everything_went(
    helper: tuple[_Clock, list[dict[str, Any]]],
) -> None:
    import tide.job as tj

    _, sent = helper
    tj.notify_step(0, every=0, tokens=5)
    tj._flush()
    assert sent == [{"event": "step", "step": 0, "tokens": 5.0}]


def test_a_sketch_goes_into_the_histogram_as_sent() -> None:
    """Hand-made: 3 steps of 0.5 s and one of 2 s in one report of 4 steps."""
    p = Progress()
    p.record(0, 0, 10.0, 0)
    p.record(4, 4000, 13.5, 0, {bucket(0.5): 3, bucket(2.0): 1})
    assert p.hist == {bucket(0.5): 3, bucket(2.0): 1}
    assert percentile(p.hist, 50) == pytest.approx(0.5, rel=0.01)  # 2nd of 4
    assert percentile(p.hist, 75) == pytest.approx(0.5, rel=0.01)  # 3rd of 4
    assert percentile(p.hist, 95) == pytest.approx(2.0, rel=0.01)  # 4th of 4
    assert p.steps == 4 and p.step_seconds == 3.5 and p.measured_tokens == 4000


def test_bucket_middles_are_within_one_percent() -> None:
    for t in (1e-4, 0.0123, 0.5, 1.0, 1.999, 37.0, 86400.0):
        assert bucket_value(bucket(t)) == pytest.approx(t, rel=0.01)
