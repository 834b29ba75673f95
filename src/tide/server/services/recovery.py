"""Recovery rules: why an attempt ended, whether the job goes back to the queue,
and what the failure cost (docs/recovery.md).

The requeue and lost-work rules live once in the core (tide.sched.requeue),
used here and by the twin (tide.sim.faults), so lost GPU-hours compare across
the live controller and simulated policies:

* lost GPU-seconds of an attempt that ended involuntarily (node failure,
  preemption, a crashed task, a time limit) = its GPUs x (end - its last
  checkpoint, or its start when it reported none in this attempt);
* a job is requeueable when it says so (--requeue / --no-requeue), else when
  its partition says so (Requeue=), else by the cluster's JobRequeue (default
  1, as in Slurm);
* retryable failures: the node failed, the job was preempted, a task or the
  batch shell died of a signal tide did not send (killed, crashed), or the
  exit code is listed in RequeueExit. An exit code is otherwise the program's
  own verdict and ends the job FAILED.
* at most MaxBatchRequeue restarts (default 5); restart n waits
  RequeueBackoff x 2^(n-1) seconds (default 5 s, at most 10 minutes).
"""

from __future__ import annotations

import json
import signal as signals
from dataclasses import dataclass
from typing import Any

from tide.exec.base import ExitReport
from tide.model import Cluster
from tide.model.sched_config import SchedulerConfig
from tide.sched import requeue as rules
from tide.sched.requeue import RequeuePolicy, requeue_policy
from tide.store.models import JobRow

REQUEUE = "requeue:"  # cancel_requested prefix: a person asked for a requeue
NODE_FAIL = "node_fail:"  # ...: a node of the job failed or was set DOWN
PREEMPT = "preempt:"  # ...: the scheduler preempts the job, PreemptMode=CANCEL (issue 7)
PREEMPT_ACTOR = "preempt"  # "requeue:preempt": a preemption requeue
_NAMED = {  # executor reasons with a state of their own
    "timeout": ("TIMEOUT", "time limit reached"),
    "oom": ("OUT_OF_MEMORY", "out of memory"),
    "out_of_memory": ("OUT_OF_MEMORY", "out of memory"),
}


Policy = RequeuePolicy  # the cluster's requeue settings (tide.sched.requeue)


def policy(config: SchedulerConfig) -> Policy:
    """The cluster's recovery settings, from its slurm.conf keys (or the YAML
    scheduler's `extra`). A bad value keeps that key's default; policy_errors
    names it (the server logs it at start and shows it in GET /v1/cluster)."""
    return requeue_policy(config)[0]


def policy_errors(config: SchedulerConfig) -> list[str]:
    return requeue_policy(config)[1]


@dataclass(slots=True, frozen=True)
class Ending:
    """How one attempt ended, decided from the exit report and what tide asked."""

    state: str  # the final state, unless the job goes back to the queue
    cause: str  # in words: "node g2 failed: ...", "task 1 on g2 killed by SIGKILL"
    retryable: bool = False  # a failure a requeue may cure
    forced: bool = False  # a person asked for the requeue: it happens regardless
    voluntary: bool = False  # a person ended it: the lost work is not counted
    exit_code: int = 0
    signal: int = 0
    actor: str = "executor"
    counted: bool = False  # the caller already added the lost work to the job's total


def requeueable(row: JobRow, cluster: Cluster, pol: Policy) -> bool:
    """The core's rule (tide.sched.requeue) on the stored job."""
    asked = json.loads(row.request).get("requeue")
    part = cluster.partition(row.run_partition or row.partition.split(",")[0])
    return rules.requeueable(None if asked is None else bool(asked), part, pol.job_requeue)


def signal_name(sig: int) -> str:
    try:
        return signals.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def classify(report: ExitReport, asked: str, message: str, pol: Policy) -> Ending:
    """The ending of an attempt: `asked` is the job's cancel_requested, `message`
    the executor's account of the end (the first failure's cause)."""
    code, sig = report.exit_code, report.signal
    who = asked.split(":", 1)[1] if ":" in asked else asked
    where = f" on {report.node}" if report.node else ""
    reason = report.reason.lower()
    if asked.startswith(REQUEUE) and who == PREEMPT_ACTOR:
        # a preemption requeue (tide.server.services.preemption): the lost work is
        # real, and preemption already added it to the job's total
        return Ending("PREEMPTED", "preempted", True, True, False, code, sig, who, True)
    if asked.startswith(REQUEUE):
        return Ending("REQUEUED", f"requeued by {who}", True, True, True, code, sig, who)
    if asked.startswith(NODE_FAIL) or reason == "node_fail":
        return Ending("NODE_FAIL", message or f"node failure{where}", True, False, False, code, sig)
    if asked.startswith(PREEMPT):  # PreemptMode=CANCEL: the job ends
        return Ending("PREEMPTED", f"preempted by job {who}", False, False, False, code, sig)
    if asked or reason in ("cancelled", "canceled"):
        why = f"cancelled by {who}" if asked else message or "cancelled"
        return Ending("CANCELLED", why, voluntary=True, exit_code=code, signal=sig)
    if reason in _NAMED:
        state, why = _NAMED[reason]
        return Ending(state, message or why, exit_code=code, signal=sig)
    if code == 0 and sig == 0:
        return Ending("COMPLETED", "")
    if sig:  # a signal tide did not send: killed or crashed, worth a retry
        return Ending("FAILED", message or f"killed by {signal_name(sig)}{where}", True, signal=sig)
    listed = code in pol.requeue_exit
    cause = (message or f"exit code {code}{where}") + (" (RequeueExit)" if listed else "")
    return Ending("FAILED", cause, listed, exit_code=code)


def lost_gpu_seconds(row: JobRow, end: float, ending: Ending) -> float:
    """The core's rule (tide.sched.requeue); nothing for a person's end or a success."""
    if ending.voluntary or ending.state == "COMPLETED" or row.start_time is None:
        return 0.0
    return rules.lost_gpu_seconds(row.gpus_alloc, row.start_time, row.last_checkpoint, end)


def describe(row: JobRow, values: dict[str, Any]) -> str:
    """A one-line account of a requeue, for the history."""
    ckpt = row.last_checkpoint_step
    tail = f" from checkpoint {ckpt}" if ckpt is not None else ""
    return f"restart {values['restarts']}{tail}"
