"""Recovery rules: why an attempt ended, whether the job goes back to the queue,
and what the failure cost (docs/recovery.md).

The rules are the twin's (tide.sim.faults), so lost GPU-hours compare across
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
from tide.store.models import JobRow

REQUEUE = "requeue:"  # cancel_requested prefix: a person asked for a requeue
NODE_FAIL = "node_fail:"  # ...: a node of the job failed or was set DOWN
PREEMPT = "preempt:"  # ...: the scheduler preempts the job, PreemptMode=CANCEL (issue 7)
PREEMPT_ACTOR = "preempt"  # "requeue:preempt": a preemption requeue
MAX_BACKOFF = 600.0
_NAMED = {  # executor reasons with a state of their own
    "timeout": ("TIMEOUT", "time limit reached"),
    "oom": ("OUT_OF_MEMORY", "out of memory"),
    "out_of_memory": ("OUT_OF_MEMORY", "out of memory"),
}


@dataclass(slots=True, frozen=True)
class Policy:
    job_requeue: bool = True  # JobRequeue: the default for jobs that do not say
    max_restarts: int = 5  # MaxBatchRequeue
    requeue_exit: frozenset[int] = frozenset()  # RequeueExit: exit codes worth a retry
    backoff: float = 5.0  # RequeueBackoff (tide): seconds before the first restart

    def delay(self, restarts: int) -> float:
        """Seconds a job waits before restart number `restarts` (1, 2, ...)."""
        return min(MAX_BACKOFF, self.backoff * 2 ** max(0, restarts - 1))


def policy(config: SchedulerConfig) -> Policy:
    """The cluster's recovery settings, from its slurm.conf keys (or the YAML
    scheduler's `extra`). A bad value keeps that key's default; policy_errors
    names it (the server logs it at start and shows it in GET /v1/cluster)."""
    return _parse(config)[0]


def policy_errors(config: SchedulerConfig) -> list[str]:
    return _parse(config)[1]


def _parse(config: SchedulerConfig) -> tuple[Policy, list[str]]:
    extra = {k.lower(): (k, v.strip()) for k, v in config.extra.items()}
    d = Policy()
    errors: list[str] = []

    def get(key: str, convert: Any, default: Any, fix: str) -> Any:
        name, text = extra.get(key.lower(), (key, None))
        if text is None or text == "":
            return default
        try:
            return convert(text)
        except ValueError:
            errors.append(f"{name}={text!r}: {fix}; using {default!r}")
            return default

    def codes(text: str) -> frozenset[int]:
        return frozenset(int(c) for c in text.replace(" ", "").split(",") if c)

    return (
        Policy(
            get("JobRequeue", lambda t: bool(int(t)), d.job_requeue, "write 0 or 1"),
            max(0, get("MaxBatchRequeue", int, d.max_restarts, "write a whole number, e.g. 5")),
            get("RequeueExit", codes, d.requeue_exit, "write exit codes, e.g. 75,140"),
            max(0.0, get("RequeueBackoff", float, d.backoff, "write seconds, e.g. 5")),
        ),
        errors,
    )


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
    req = json.loads(row.request)
    if req.get("requeue") is not None:
        return bool(req["requeue"])
    part = cluster.partition(row.run_partition or row.partition.split(",")[0])
    if part is not None and part.requeue is not None:
        return part.requeue
    return pol.job_requeue


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
    """GPUs x (end - the attempt's last checkpoint, or its start): the twin's rule."""
    if ending.voluntary or ending.state == "COMPLETED" or row.start_time is None:
        return 0.0
    since = row.start_time
    if row.last_checkpoint is not None and row.last_checkpoint > since:
        since = row.last_checkpoint
    return float(row.gpus_alloc) * max(0.0, end - since)


def describe(row: JobRow, values: dict[str, Any]) -> str:
    """A one-line account of a requeue, for the history."""
    ckpt = row.last_checkpoint_step
    tail = f" from checkpoint {ckpt}" if ckpt is not None else ""
    return f"restart {values['restarts']}{tail}"
