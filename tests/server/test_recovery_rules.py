"""The recovery rules (tide.server.services.recovery) and the job-side helper
(tide.job), on their own: which endings requeue, what a failure costs, how
the cluster's settings are read, and the checkpoint files."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import tide.job as tj
from tide.exec.base import ExitReport
from tide.model import Cluster, Partition
from tide.model.sched_config import SchedulerConfig
from tide.sched.requeue import MAX_BACKOFF
from tide.server.services import recovery as rc


def _end(code: int = 0, sig: int = 0, reason: str = "", asked: str = "", msg: str = "") -> Any:
    return rc.classify(ExitReport(1, code, sig, reason, "n2"), asked, msg, rc.Policy())


def test_endings_and_which_are_retryable() -> None:
    assert _end().state == "COMPLETED" and not _end().retryable
    crash = _end(sig=9, msg="task 1 on n2 killed by SIGKILL")
    assert (crash.state, crash.retryable, crash.signal) == ("FAILED", True, 9)
    assert crash.cause == "task 1 on n2 killed by SIGKILL"
    own = _end(code=3)
    assert (own.state, own.retryable, own.cause) == ("FAILED", False, "exit code 3 on n2")
    node = _end(asked="node_fail:tide", msg="node n2 failed: not responding")
    assert (node.state, node.retryable, node.cause) == ("NODE_FAIL", True, node.cause)
    assert _end(reason="node_fail").state == "NODE_FAIL"
    assert _end(reason="timeout").state == "TIMEOUT" and not _end(reason="timeout").retryable
    asked = _end(asked="requeue:alice")
    assert asked.forced and asked.voluntary and asked.state == "REQUEUED"
    assert _end(asked="alice").state == "CANCELLED" and _end(asked="alice").voluntary
    pre = _end(asked="requeue:preempt")
    assert (pre.state, pre.forced, pre.voluntary, pre.counted) == ("PREEMPTED", True, False, True)
    cancel_mode = _end(asked="preempt:42")
    assert cancel_mode.state == "PREEMPTED" and not cancel_mode.retryable
    listed = rc.classify(ExitReport(1, 75), "", "", rc.Policy(requeue_exit=frozenset({75})))
    assert listed.retryable and listed.cause.endswith("(RequeueExit)")


def test_settings_from_slurm_keys_with_named_errors() -> None:
    keys = {"JobRequeue": "0", "MaxBatchRequeue": "2", "RequeueExit": "75, 140"}
    cfg = SchedulerConfig(extra={**keys, "RequeueBackoff": "1.5"})
    assert rc.policy(cfg) == rc.Policy(False, 2, frozenset({75, 140}), 1.5)
    assert rc.policy_errors(cfg) == []
    bad = SchedulerConfig(extra={"MaxBatchRequeue": "lots", "RequeueExit": "x"})
    assert rc.policy(bad) == rc.Policy()
    errors = rc.policy_errors(bad)
    assert errors[0].startswith("MaxBatchRequeue='lots': write a whole number")
    assert errors[1].startswith("RequeueExit='x'")
    assert [rc.Policy(backoff=2).delay(n) for n in (1, 2, 3)] == [2, 4, 8]
    assert rc.Policy(backoff=100).delay(10) == MAX_BACKOFF


def _row(**kw: Any) -> Any:
    base = {"request": "{}", "run_partition": "gpu", "partition": "gpu"}
    base.update({"start_time": 100.0, "last_checkpoint": None, "gpus_alloc": 4})
    return SimpleNamespace(**{**base, **kw})


def test_requeueable_job_then_partition_then_cluster() -> None:
    cl = Cluster(partitions=[Partition("gpu", requeue=False), Partition("cpu")])
    pol = rc.Policy()
    assert not rc.requeueable(_row(), cl, pol)  # the partition says no
    assert rc.requeueable(_row(request=json.dumps({"requeue": True})), cl, pol)
    assert rc.requeueable(_row(run_partition="cpu", partition="cpu"), cl, pol)  # cluster default
    assert not rc.requeueable(_row(run_partition="cpu"), cl, rc.Policy(job_requeue=False))


def test_lost_gpu_seconds_count_from_the_last_checkpoint_of_the_attempt() -> None:
    fail = _end(sig=9)
    assert rc.lost_gpu_seconds(_row(), 160.0, fail) == 4 * 60.0
    assert rc.lost_gpu_seconds(_row(last_checkpoint=150.0), 160.0, fail) == 4 * 10.0
    # a checkpoint from an earlier attempt does not count in this one
    assert rc.lost_gpu_seconds(_row(last_checkpoint=50.0), 160.0, fail) == 4 * 60.0
    assert rc.lost_gpu_seconds(_row(), 160.0, _end()) == 0.0
    assert rc.lost_gpu_seconds(_row(), 160.0, _end(asked="requeue:bob")) == 0.0


def test_job_helper_checkpoints_and_signal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDE_CHECKPOINT_DIR", str(tmp_path / "ck"))
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    monkeypatch.delenv("TIDE_RESTART_COUNT", raising=False)
    assert tj.restart_count() == 2 and tj.latest_checkpoint() is None
    for step in (9, 19, 100):
        tj.atomic_write(tj.checkpoint_path(step), str(step).encode())
    (tmp_path / "ck" / ".ckpt-000000200.pt.123.tmp").write_bytes(b"half")  # never counted
    step, path = tj.latest_checkpoint()  # type: ignore[misc]
    assert step == 100 and path.read_bytes() == b"100"
    tj.install_signal_handler(signal.SIGUSR2)
    assert not tj.should_checkpoint()
    os.kill(os.getpid(), signal.SIGUSR2)
    assert tj.should_checkpoint() and not tj.should_checkpoint()  # True once
    signal.signal(signal.SIGUSR2, signal.SIG_DFL)
    monkeypatch.delenv("TIDE_URL", raising=False)
    tj.notify_checkpoint(100)  # outside a job: nothing to report, no error
