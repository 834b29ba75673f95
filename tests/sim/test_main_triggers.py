"""When the twin runs a main pass after an event (tide.sched.triggers): ends in a
burst share one pass, submissions wait for slurmctld's background thread where its
phase is known. The real engine runs; the answers are worked out by hand."""

from __future__ import annotations

import pytest

from tide.model import JobRequest
from tide.model.sched_config import SchedulerConfig
from tide.sim.engine import Engine
from tide.sim.workload.base import SimJob
from tide.testing.builders import flat_cluster


def _job(jid: int, submit: float, run: float) -> SimJob:
    req = JobRequest(name=f"j{jid}", nodes_min=1, nodes_max=1, gpus_per_node=1, time_limit=600)
    return SimJob(id=jid, submit=submit, duration=run, request=req, user="u", account="root")


def _cfg(**kw: object) -> SchedulerConfig:
    cfg = SchedulerConfig(bf_interval=30, bf_resolution=1)
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def _run(cfg: SchedulerConfig, jobs: list[SimJob]) -> dict[int, tuple[float, str]]:
    out = Engine(flat_cluster(3, gpus=1), cfg).run(jobs)
    return {r.job_id: (r.start, r.nodelist) for r in out.results}


def _burst() -> list[SimJob]:
    # n001 frees at 10.03, n002 at 10.00, n003 stays busy; job 4 waits for a node
    return [_job(1, 0.0, 10.03), _job(2, 0.0, 10.0), _job(3, 0.0, 500.0), _job(4, 1.0, 5.0)]


def test_a_pass_at_every_end_without_sched_min_interval() -> None:
    got = _run(_cfg(), _burst())
    assert got[4] == (10.0, "n002")


def test_ends_within_sched_min_interval_share_one_pass() -> None:
    # the pass at 10.00 is left to the end at 10.03, which sees both nodes free:
    # the lowest one, as Slurm's pass after a burst of ends did
    got = _run(_cfg(sched_min_interval=0.1), _burst())
    assert got[4] == (10.03, "n001")


def test_ends_further_apart_get_a_pass_each() -> None:
    jobs = [_job(1, 0.0, 10.5), _job(2, 0.0, 10.0), _job(3, 0.0, 500.0), _job(4, 1.0, 5.0)]
    got = _run(_cfg(sched_min_interval=0.1), jobs)
    assert got[4] == (10.0, "n002")


def test_submissions_wait_for_the_background_thread() -> None:
    # wake-ups at x.3; the first submission is served at the next one, the second
    # only 3 whole seconds after that main pass (batch_sched_delay); backfill (every
    # 30 s) comes later than both
    jobs = [_job(1, 5.0, 100.0), _job(2, 6.0, 100.0)]
    got = _run(_cfg(background_phase=0.3), jobs)
    assert (got[1][0], got[2][0]) == (pytest.approx(5.3), pytest.approx(8.3))
    got = _run(_cfg(), jobs)  # phase unknown (tide's own controller): at once
    assert got[1][0] == 5.0 and got[2][0] == 6.0


def test_a_replayed_history_keeps_its_own_pass_times() -> None:
    # replaying a controller's passes (tide sim export): its pass at 10.00 ran, so
    # the twin runs it too, whatever sched_min_interval says
    engine = Engine(flat_cluster(3, gpus=1), _cfg(sched_min_interval=0.1))
    engine.passes = [0.0, 1.0, 10.0, 10.04]
    out = {r.job_id: (r.start, r.nodelist) for r in engine.run(_burst()).results}
    assert out[4] == (10.0, "n002")
