"""The server's Schedule step (tide.server.schedule.PolicyDriver) drives the
twin's policy objects as the twin's engine does: it keeps bound pods and
policy meta between passes, and feeds run-time predictions to policies that
plan with them (issue 13 item 1). No server needed: the driver is pure."""

from __future__ import annotations

from dataclasses import replace

from tide.model.sched_config import SchedulerConfig
from tide.server.schedule import PolicyDriver
from tide.testing.builders import flat_cluster, job, running, snapshot

CLUSTER = flat_cluster(2, 8)


def test_predictions_follow_the_twins_rule() -> None:
    d = PolicyDriver(CLUSTER, SchedulerConfig(policy="tide"))
    assert d.name == "tide" and d.predictor is not None
    d.job_ended(7, "alice", 100.0)
    d.job_ended(8, "alice", 300.0)
    snap = snapshot(CLUSTER, [job(1, gpus=1, time=3600), job(2, gpus=1, time=120)])
    assert d._predictions(snap) == {1: 200.0, 2: 120.0}  # mean of the last two, <= limit


def test_a_started_job_keeps_the_prediction_made_at_its_start() -> None:
    d = PolicyDriver(CLUSTER, SchedulerConfig(policy="tide"))
    d.job_ended(7, "alice", 100.0)
    first = job(1, gpus=1, time=3600)
    snap = snapshot(CLUSTER, [first])
    decisions = d(snap)
    assert [s.job_id for s in decisions.starts] == [1]
    d.keep(snap, decisions)
    d.job_ended(8, "alice", 900.0)  # a later end changes what pending jobs get, not this one
    later = replace(snapshot(CLUSTER, [job(2, gpus=1, time=3600)], now=10.0),
                    running=[running(first, CLUSTER, {"n001": (0,)}, 0.0)])  # fmt: skip
    assert d._predictions(later) == {1: 100.0, 2: 500.0}


def test_policies_without_predictions_get_none() -> None:
    d = PolicyDriver(CLUSTER, SchedulerConfig(policy="slurm"))
    d.job_ended(7, "alice", 100.0)
    assert d.predictor is None
    assert d._predictions(snapshot(CLUSTER, [job(1, gpus=1)])) == {}


def test_bound_pods_hold_their_gpus_between_passes() -> None:
    """k8s-default binds the pods of a gang that cannot all fit; the next pass
    sees them bound (their GPUs held), as the engine's usage does."""
    d = PolicyDriver(CLUSTER, SchedulerConfig(policy="k8s-default"))
    big = job(1, gpus=24)  # 24 pods of one GPU on 16 GPUs: 16 bind, the gang waits
    snap = snapshot(CLUSTER, [big])
    decisions = d(snap)
    d.keep(snap, decisions)
    assert set(d.bound) == {1} and d.bound[1].gpu_count == 16
    again = d(snap)  # the bound pods hold their GPUs: nothing more binds, nothing starts
    assert again.starts == [] and sum(a.gpu_count for a in again.binds.values()) == 0
    d.keep(snapshot(CLUSTER, []), decisions.__class__())  # the job left the queue
    assert d.bound == {}
