"""Run-time predictions (tide.sched.predict): hand-computed model updates,
the correction rules, determinism."""

from __future__ import annotations

import math

import pytest

from tide.sched.predict import (
    Correction,
    JobInfo,
    LossShape,
    NagLinear,
    RuntimeModel,
    corrected,
)

# -- the online learner (NAG: Ross, Mineiro, Langford 2013) -------------------------


def test_nag_first_step_by_hand() -> None:
    m = NagLinear(2, eta=1.0)
    # x = (1, 2), an under-prediction: d loss / d prediction = -1
    m.fit([1.0, 2.0], -1.0)
    # scales s = (1, 2); N = (1/1)^2 + (2/2)^2 = 2; t = 1
    # w0 = 0 + 1 x 1 / (sqrt(2 x 1 / 1) x 1) = 1/sqrt(2)
    # w1 = 0 + 1 x 2 / (sqrt(2 x 4 / 1) x 2) = 1/sqrt(8)
    assert m.w == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(8)], rel=1e-6)
    assert m.predict([1.0, 2.0]) == pytest.approx(math.sqrt(2), rel=1e-6)


def test_nag_second_step_rescales_a_feature_that_grew() -> None:
    m = NagLinear(2, eta=1.0)
    m.fit([1.0, 2.0], -1.0)
    # x = (1, 4), an over-prediction (+1): s1 grows 2 -> 4, so w1 is halved first
    m.fit([1.0, 4.0], 1.0)
    # N = 2 + 1 + 1 = 4, t = 3; G0 = 1 + 1 = 2, G1 = 4 + 16 = 20
    w0 = 1 / math.sqrt(2) - 1 / math.sqrt(4 * 2 / 3)
    w1 = 1 / math.sqrt(8) / 2 - 4 / (math.sqrt(4 * 20 / 3) * 4)
    assert m.w == pytest.approx([w0, w1], rel=1e-6)


def test_l2_pulls_weights_back() -> None:
    plain, reg = NagLinear(1, eta=1.0), NagLinear(1, eta=1.0, l2=0.5)
    for m in (plain, reg):
        m.fit([1.0], -1.0)
        m.fit([1.0], 0.0)  # no loss gradient: only the regularizer moves w
    assert plain.w[0] == pytest.approx(1.0, rel=1e-6)
    # g = 0.5 x 1 = 0.5; G = 1 + 0.25; N = 2; t = 3: w -= 0.5 / sqrt(2 x 1.25 / 3)
    assert reg.w[0] == pytest.approx(1.0 - 0.5 / math.sqrt(2 * 1.25 / 3), rel=1e-6)


# -- the asymmetric loss -------------------------------------------------------------


def test_loss_slopes_on_either_side_of_the_threshold() -> None:
    loss = LossShape(over=1.0, under=3.0, threshold=60.0)
    assert loss.slope(100.0) == 1.0  # over-predicted by more than 60 s
    assert loss.slope(60.0) == 0.0
    assert loss.slope(10.0) == -3.0  # within the threshold counts as under
    assert loss.slope(-500.0) == -3.0


def test_job_weight_favours_long_narrow_jobs() -> None:
    loss = LossShape()
    assert loss.job_weight(1000.0, 10) == pytest.approx(5 + math.log(100))
    assert loss.job_weight(10.0, 100) == pytest.approx(5 + math.log(0.1))
    assert LossShape(weight="one").job_weight(1000.0, 10) == 1.0


# -- the model over jobs ---------------------------------------------------------------


def _job(i: int, limit: float | None = 3600.0, user: str = "u", size: int = 4) -> JobInfo:
    return JobInfo(i, user, limit, size, submit=100.0 * i)


def test_tsafrir_mean_of_the_last_two_runs_capped_by_the_limit() -> None:
    m = RuntimeModel("tsafrir")
    assert m.predict(_job(1, 600), 0) == 600  # no history: the limit
    assert m.predict(_job(2, None), 0) is None
    m.observe(_job(1), 50, 100)
    assert m.predict(_job(3, 600), 100) == 50
    m.observe(_job(3), 100, 200)
    m.observe(_job(4), 300, 300)  # only the last two count: (100 + 300) / 2
    assert m.predict(_job(5, 600), 300) == 200
    assert m.predict(_job(6, 120), 300) == 120
    assert m.predict(_job(7, 60, user="v"), 300) == 60


def test_learned_model_trains_on_the_features_of_the_submission() -> None:
    m = RuntimeModel("learned", quadratic=False, loss=LossShape(weight="one"))
    first = m.predict(_job(1), 0)
    assert first == 1.0  # an untrained model predicts the 1 s floor
    x = list(m._x[1])
    m.observe(_job(1), 600.0, 700.0)
    assert 1 not in m._x  # features are dropped once learnt from
    # one NAG step with slope -1 (under-predicted) on x, as NagLinear does alone
    ref = NagLinear(len(x), eta=m.eta)
    ref.fit(x, -1.0)
    assert m.model is not None and m.model.w == pytest.approx(ref.w)
    assert m.predict(_job(2), 700.0) > first  # it learnt that jobs run longer


def test_learned_predictions_are_capped_by_the_limit() -> None:
    m = RuntimeModel("learned")
    for i in range(1, 40):
        m.predict(_job(i, 7200), 100.0 * i)
        m.observe(_job(i, 7200), 5000.0, 100.0 * i + 5000)
    p = m.predict(_job(99, 60), 9000)
    assert p is not None and p <= 60


def test_same_jobs_same_predictions() -> None:
    def replay() -> list[float | None]:
        m = RuntimeModel("learned")
        out = []
        for i in range(1, 60):
            job = _job(i, 3600.0 + 60 * (i % 7), user=f"u{i % 3}", size=1 + i % 5)
            out.append(m.predict(job, 100.0 * i))
            m.observe(job, 30.0 * (i % 11) + 10, 100.0 * i + 50)
        return out

    assert replay() == replay()


def test_unknown_kind_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="kind 'oracle'"):
        RuntimeModel("oracle")


# -- corrections (SC'15's correctors) -----------------------------------------------------


def test_no_correction_while_the_prediction_holds() -> None:
    for rule in Correction:
        assert corrected(rule, 100, 50, 1000) == 100
        assert corrected(rule, 5000, 50, 1000) == 1000  # never past the limit


def test_requested_time_correction() -> None:
    assert corrected(Correction.REQUESTED, 100, 100, 1000) == 1000
    assert corrected(Correction.REQUESTED, 100, 150, None) == math.inf


def test_doubling_correction() -> None:
    assert corrected(Correction.DOUBLING, 100, 150, 10_000) == 200
    assert corrected(Correction.DOUBLING, 100, 200, 10_000) == 400  # strictly beyond
    assert corrected(Correction.DOUBLING, 100, 401, 10_000) == 800
    assert corrected(Correction.DOUBLING, 100, 5000, 6000) == 6000
    assert corrected(Correction.DOUBLING, 0, 0, 100) == 1  # a zero prediction still grows


def test_tsafrir_correction_adds_increments_to_the_first_prediction() -> None:
    assert corrected(Correction.TSAFRIR, 100, 100, 10**6) == 160  # + 1 min
    assert corrected(Correction.TSAFRIR, 100, 160, 10**6) == 400  # + 5 min
    assert corrected(Correction.TSAFRIR, 100, 999, 10**6) == 1000  # + 15 min
    assert corrected(Correction.TSAFRIR, 100, 900_000, 10**6) == 10**6  # increments run out
    assert corrected(Correction.TSAFRIR, 100, 150, 120) == 120
