"""Requeue and lost-work rules, once in the core (issue 13 item 2;
tide.sched.requeue), table-driven; and both worlds deciding by them: the
twin honours the partition's Requeue=, MaxBatchRequeue and the backoff as
the live controller does (tests/server/test_recovery*.py drive the server)."""

from __future__ import annotations

import pytest

from tide.model import JobRequest, Partition
from tide.model.sched_config import SchedulerConfig
from tide.sched.requeue import (
    MAX_BACKOFF,
    Requeue,
    RequeuePolicy,
    decide,
    lost_gpu_seconds,
    requeue_policy,
    requeueable,
)
from tide.sim.engine import Engine
from tide.sim.events import Fault
from tide.sim.workload.base import SimJob
from tide.testing.builders import flat_cluster

YES, NO = Partition("p", requeue=True), Partition("p", requeue=False)


@pytest.mark.parametrize(
    ("asked", "partition", "job_requeue", "expected"),
    [
        (None, None, True, True),  # JobRequeue=1, Slurm's default
        (None, None, False, False),  # JobRequeue=0
        (None, NO, True, False),  # the partition's Requeue=NO wins over the cluster
        (None, YES, False, True),
        (True, NO, False, True),  # the job's --requeue wins over everything
        (False, YES, True, False),  # --no-requeue
        (None, Partition("p"), False, False),  # a partition that does not say
    ],
)
def test_requeueable(asked: bool | None, partition: Partition | None, job_requeue: bool,
                     expected: bool) -> None:  # fmt: skip
    assert requeueable(asked, partition, job_requeue) is expected


POL = RequeuePolicy(max_restarts=2, backoff=5.0)


@pytest.mark.parametrize(
    ("retryable", "forced", "can", "restarts", "expected"),
    [
        (True, False, True, 0, Requeue(True, 5.0)),  # first restart: the backoff
        (True, False, True, 1, Requeue(True, 10.0)),  # doubles
        (True, False, True, 2, Requeue(False, capped=True)),  # MaxBatchRequeue=2 reached
        (True, False, False, 0, Requeue(False)),  # not requeueable
        (False, False, True, 0, Requeue(False)),  # the program's own verdict
        (False, True, False, 9, Requeue(True)),  # a person's/preemption's: always, at once
    ],
)
def test_decide(retryable: bool, forced: bool, can: bool, restarts: int,
                expected: Requeue) -> None:  # fmt: skip
    assert decide(POL, retryable, forced, can, restarts) == expected


def test_the_backoff_is_capped() -> None:
    assert RequeuePolicy(backoff=100).delay(10) == MAX_BACKOFF == 600.0


@pytest.mark.parametrize(
    ("gpus", "start", "checkpoint", "end", "lost"),
    [
        (8, 100.0, None, 400.0, 2400.0),  # no checkpoint: everything since the start
        (8, 100.0, 300.0, 400.0, 800.0),  # since the last checkpoint
        (8, 100.0, 50.0, 400.0, 2400.0),  # a checkpoint of an earlier attempt: the start
        (2, 100.0, None, 90.0, 0.0),  # never negative
    ],
)
def test_lost_gpu_seconds(gpus: int, start: float, checkpoint: float | None, end: float,
                          lost: float) -> None:  # fmt: skip
    assert lost_gpu_seconds(gpus, start, checkpoint, end) == lost


def test_settings_from_slurm_keys_with_errors_naming_the_key() -> None:
    cfg = SchedulerConfig(extra={"JobRequeue": "0", "MaxBatchRequeue": "x",
                                 "RequeueExit": "75, 140", "RequeueBackoff": "2.5"})  # fmt: skip
    pol, errors = requeue_policy(cfg)
    assert pol == RequeuePolicy(False, 5, frozenset({75, 140}), 2.5)
    assert errors == ["MaxBatchRequeue='x': write a whole number, e.g. 5; using 5"]


def _twin(partition_requeue: bool | None, extra: dict[str, str], failures: list[float]):  # type: ignore[no-untyped-def]
    c = flat_cluster(1)
    c.partitions[0].requeue = partition_requeue
    faults = [Fault(t, "n001", 10.0) for t in failures]
    job = SimJob(1, 0.0, 1000.0, JobRequest(gpus=8, time_limit=5000))
    (res,) = Engine(c, SchedulerConfig(extra=extra), "slurm", faults=faults).run([job]).results
    return res


def test_the_twin_ends_a_job_whose_partition_says_requeue_no() -> None:
    res = _twin(False, {}, [100.0])
    assert (res.state, res.restarts, res.end) == ("NODE_FAIL", 0, 100.0)


def test_the_twin_requeues_after_the_backoff_and_stops_at_max_batch_requeue() -> None:
    """Failures at 100 (restart 1 after 3 s: the node is back at 110, so
    at 110) and at 300 (MaxBatchRequeue=1 reached: NODE_FAIL)."""
    res = _twin(None, {"MaxBatchRequeue": "1", "RequeueBackoff": "3"}, [100.0, 300.0])
    assert (res.state, res.restarts, res.end) == ("NODE_FAIL", 1, 300.0)
    one = _twin(None, {"RequeueBackoff": "30"}, [100.0])
    assert (one.state, one.restarts, one.end) == ("COMPLETED", 1, 1130.0)  # 100 + 30 + 1000
