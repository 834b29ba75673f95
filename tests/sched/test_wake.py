"""Time wakes the scheduler (issue 13 item 4): every policy's cycle reports
the next time its decisions can change with no event (Decisions.wake), and
EligibleTime is when the job became eligible. Table-driven, hand-computed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tide.model import AccountTree, Qos, Reservation
from tide.model.job import Dependency, DependencyItem, DependencyType
from tide.model.sched_config import SchedulerConfig
from tide.sched.index import build_index
from tide.sched.policies import POLICY_NAMES, policy_for
from tide.sched.wake import eligible_since
from tide.testing.builders import flat_cluster, job, running, snapshot

CLUSTER = flat_cluster(2, 8)
NOW = 1000.0


def _busy(job_id: int = 90, start: float = 0.0, time: int = 36000, qos: str = "normal"):  # type: ignore[no-untyped-def]
    r = job(job_id, nodes=2, gpus_per_node=8, time=time)
    r.qos = qos
    return running(r, CLUSTER, {"n001": tuple(range(8)), "n002": tuple(range(8))}, start)


def _begin(job_id: int, at: float):  # type: ignore[no-untyped-def]
    return job(job_id, gpus=1, begin=at, submit=NOW - 10)


def _switches(job_id: int, wait: int):  # type: ignore[no-untyped-def]
    j = job(job_id, nodes=2, gpus_per_node=8, switches=1, switches_wait=wait)
    j.eligible = NOW - 100
    return j


CASES = [
    # (what, pending, running, snapshot changes, expected wake)
    ("nothing waits on time", [job(1, gpus=1)], [], {}, None),
    ("a begin time", [_begin(1, NOW + 30)], [], {}, NOW + 30),
    ("the earliest of two begin times", [_begin(1, NOW + 30), _begin(2, NOW + 7)], [], {},
     NOW + 7),
    ("a begin time already past starts now, no wake", [_begin(1, NOW - 5)], [], {}, None),
    ("a --switches wait runs out", [_switches(1, 300)], [_busy()], {}, NOW + 200),
    ("a reservation starts", [job(1, gpus=1)], [],
     {"reservations": [Reservation("r", NOW + 50, NOW + 80, nodes=("n001",))]}, NOW + 50),
    ("a reservation ends", [job(1, gpus=1)], [],
     {"reservations": [Reservation("r", NOW - 50, NOW + 80, nodes=("n001",))]}, NOW + 80),
    ("a victim's grace ends", [job(1, gpus=1)], [_busy(90, time=1200)],
     {"preempting": {90: 1}}, 1200.0),
]


@pytest.mark.parametrize("policy", ["slurm", "tide"])
@pytest.mark.parametrize(("what", "pending", "runs", "changes", "wake"), CASES,
                         ids=[c[0] for c in CASES])
def test_the_cycle_reports_when_time_alone_changes_a_decision(
    policy: str, what: str, pending: list, runs: list, changes: dict, wake: float | None
) -> None:
    snap = replace(snapshot(CLUSTER, pending, now=NOW, running_jobs=runs), **changes)
    d = policy_for(SchedulerConfig(policy=policy), build_index(CLUSTER)).schedule(snap, None)  # type: ignore[arg-type]
    assert d.wake == wake, what


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_every_policy_wakes_at_a_begin_time(policy: str) -> None:
    snap = snapshot(CLUSTER, [_begin(1, NOW + 30)], now=NOW)
    ix = build_index(CLUSTER)
    from tide.sched.cycle import usage_from

    d = policy_for(SchedulerConfig(policy=policy), ix).schedule(snap, usage_from(ix, snap))
    assert d.wake == NOW + 30


def test_a_preempt_exempt_time_ending_wakes_when_jobs_wait() -> None:
    low = Qos("low", preempt_exempt_time=600)
    accounts = AccountTree(qos={"normal": Qos("normal"), "low": low})
    snap = snapshot(CLUSTER, [job(1, gpus=1)], now=NOW, running_jobs=[_busy(qos="low", start=900)],
                    preempt_type="preempt/qos", preempt_mode="REQUEUE")
    snap.accounts = accounts
    d = policy_for(SchedulerConfig(), build_index(CLUSTER)).schedule(snap, None)  # type: ignore[arg-type]
    assert d.wake == 1500.0


@pytest.mark.parametrize(
    ("submit", "begin", "dependency", "now", "eligible"),
    [
        (0.0, None, False, NOW, NOW),  # found eligible now
        (0.0, 400.0, False, NOW, 400.0),  # since its begin time, however late the cycle
        (500.0, 400.0, False, NOW, 500.0),  # a begin before its submission: since submitted
        (0.0, 400.0, True, NOW, NOW),  # it also waited for a dependency: now
    ],
)
def test_eligible_time_is_when_the_job_became_eligible(
    submit: float, begin: float | None, dependency: bool, now: float, eligible: float
) -> None:
    j = job(1, gpus=1, submit=submit, begin=begin)
    if dependency:
        dep = Dependency((DependencyItem(DependencyType.AFTEROK, ("7",)),))
        j.request = replace(j.request, dependency=dep)
    assert eligible_since(j, now) == eligible


def test_the_cycle_records_a_begin_time_as_eligible_time() -> None:
    snap = snapshot(CLUSTER, [_begin(1, NOW - 5)], now=NOW)
    d = policy_for(SchedulerConfig(), build_index(CLUSTER)).schedule(snap, None)  # type: ignore[arg-type]
    assert d.eligible == {1: NOW - 5}
    assert [s.job_id for s in d.starts] == [1]


@pytest.mark.parametrize("policy", ["slurm", "tide", "kueue"])
def test_the_twin_starts_a_begin_job_at_its_begin_time(policy: str) -> None:
    """The engine keeps no timers of its own: the core's wake starts the job."""
    from tide.model import JobRequest
    from tide.sim.engine import Engine
    from tide.sim.workload.base import SimJob

    jobs = [
        SimJob(1, 0.0, 100.0, JobRequest(gpus=1, time_limit=200)),
        SimJob(2, 10.0, 50.0, JobRequest(gpus=1, time_limit=200, begin=75.0)),
    ]
    cfg = SchedulerConfig(policy=policy, bf_resolution=1)
    out = Engine(CLUSTER, cfg, policy).run(jobs)
    second = next(r for r in out.results if r.job_id == 2)
    assert (second.start, second.eligible) == (75.0, 75.0)
