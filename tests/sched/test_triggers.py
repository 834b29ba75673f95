"""When a main pass runs after an event (tide.sched.triggers): table-driven, with
hand-computed answers from Slurm 22.05's rules."""

from __future__ import annotations

import pytest

from tide.model.sched_config import SchedulerConfig
from tide.sched import triggers


def _cfg(**kw: object) -> SchedulerConfig:
    cfg = SchedulerConfig()
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


@pytest.mark.parametrize(
    ("gap", "end", "next_end", "waits"),
    [
        (0.1, 10.00, 10.03, True),  # a burst: one pass serves both ends
        (0.1, 10.00, 10.10, False),  # a full interval later: a pass of its own
        (0.1, 10.00, 10.50, False),
        (0.1, 10.00, None, False),  # no end queued
        (0.0, 10.00, 10.00, False),  # sched_min_interval unset: a pass at every end
    ],
)
def test_an_end_leaves_its_pass_to_an_end_within_the_interval(
    gap: float, end: float, next_end: float | None, waits: bool
) -> None:
    assert triggers.end_pass_waits(_cfg(sched_min_interval=gap), end, next_end) is waits


@pytest.mark.parametrize(
    ("phase", "t", "tick"),
    [
        (0.3, 5.0, 5.3),
        (0.3, 5.3, 6.3),  # strictly after
        (0.3, 5.31, 6.3),
        (-4.7, 5.0, 5.3),  # slurmctld started 4.7 s before time zero
        (0.0, 2.0, 3.0),
    ],
)
def test_background_thread_wakes_once_a_second_on_its_phase(
    phase: float, t: float, tick: float
) -> None:
    assert triggers.background_tick(_cfg(background_phase=phase), t) == pytest.approx(tick)


@pytest.mark.parametrize(
    ("last", "t", "runs"),
    [
        (None, 0.3, True),  # never ran: at once
        (0.3, 1.3, False),
        (0.3, 2.3, False),
        (0.3, 3.3, True),  # 3 whole seconds of time_t
        (0.9, 3.1, True),  # floor(3.1) - floor(0.9) = 3, although 2.2 s passed
        (0.1, 2.9, False),  # 2.8 s but 2 whole seconds
    ],
)
def test_background_thread_schedules_every_batch_sched_delay_whole_seconds(
    last: float | None, t: float, runs: bool
) -> None:
    cfg = _cfg(background_phase=0.3, batch_sched_delay=3, epoch=1_796_154_351.0)
    assert triggers.background_may_run(cfg, t, last) is runs


def test_submissions_wait_only_where_the_background_phase_is_known() -> None:
    assert not triggers.submissions_wait(_cfg())  # tide's controller: a pass at once
    assert triggers.submissions_wait(_cfg(background_phase=0.3))
    assert not triggers.submissions_wait(_cfg(background_phase=0.3, batch_sched_delay=0))


def test_min_gap_is_sched_min_interval() -> None:
    assert triggers.min_gap(_cfg(sched_min_interval=0.1)) == 0.1
    assert triggers.min_gap(_cfg()) == 0.0
