"""tide.efficiency: progress reports -> tokens/s, step time percentiles, MFU."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide.efficiency import (
    SERIES_MAX,
    EfficiencyError,
    Measured,
    Progress,
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
