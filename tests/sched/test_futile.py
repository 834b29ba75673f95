"""tide.sched.futile: which pending jobs wait for GPUs alone, and when a pass
with none free decides nothing; tide.sim.pending.PendingJobs.others counts
the rest as jobs come, change and go."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tide.model import Job, JobRequest
from tide.model.job import Dependency, DependencyItem, DependencyType
from tide.model.sched_config import SchedulerConfig
from tide.sched.futile import pass_is_futile, waits_only_for_gpus
from tide.sim.pending import PendingJobs

PLAIN = JobRequest(name="j", gpus_per_node=1, time_limit=60)
AFTER = Dependency((DependencyItem(DependencyType.AFTEROK, ("1",)),))


def job(jid: int = 1, req: JobRequest = PLAIN, eligible: float | None = 0.0, held: str = "") -> Job:
    return Job(id=jid, request=req, user="u", account="a", submit=0.0, eligible=eligible,
               held=held)  # fmt: skip


def test_an_eligible_gpu_job_waits_for_gpus_alone() -> None:
    assert waits_only_for_gpus(job())


@pytest.mark.parametrize(
    "other",
    [
        job(eligible=None),  # the pass may make it eligible
        job(req=replace(PLAIN, dependency=AFTER)),
        job(req=replace(PLAIN, begin=100.0)),  # a wake at its begin time
        job(req=replace(PLAIN, switches=1)),  # a wake when its wait runs out
        job(req=replace(PLAIN, reservation="maint")),
        job(req=replace(PLAIN, hold=True)),
        job(held="admin"),
        job(req=replace(PLAIN, gpus_per_node=None)),  # needs no GPU: starts on free cores
    ],
)
def test_jobs_a_pass_may_act_on_with_no_gpu_free(other: Job) -> None:
    assert not waits_only_for_gpus(other)


def test_a_pass_is_futile_only_with_no_gpu_free_and_nothing_else_waiting() -> None:
    cfg = SchedulerConfig()
    assert pass_is_futile(cfg, 0, 0)
    assert not pass_is_futile(cfg, 1, 0)
    assert not pass_is_futile(cfg, 0, 1)
    assert not pass_is_futile(replace(cfg, preempt_type="preempt/qos"), 0, 0)


def test_the_queue_counts_jobs_that_wait_on_more_than_gpus() -> None:
    q = PendingJobs()
    q[1] = job(1, eligible=None)  # the engine sets eligibility after putting a job in
    q[2] = job(2, req=replace(PLAIN, begin=50.0))
    q[1].eligible = 0.0
    assert q.others() == 1  # job 1 tested as it is when counted, not when put in
    q[3] = job(3, eligible=None)
    assert q.others() == 2
    q[3].eligible = 5.0
    assert q.others() == 2  # a change in place counts once touched
    q.touch(3)
    assert q.others() == 1
    q[4] = job(4, held="user")
    q.pop(2)
    assert q.others() == 1
    del q[4]
    assert q.others() == 0
    q[5] = job(5, eligible=None)
    q.clear()
    assert q.others() == 0
