"""Requeue and lost-work rules, once for both worlds (docs/recovery.md). Pure.

The live controller (tide.server.services.recovery, lifecycle) and the twin
(tide.sim.faults, tide.sim.preemption) and the core's preemption
(tide.sched.preempt_rules) all decide with these functions:

* a job is requeueable when it says so (--requeue / --no-requeue), else when
  its partition says so (Requeue=), else by the cluster's JobRequeue
  (default 1, as in Slurm);
* an involuntary end (node failure, preemption, a retryable failure) puts a
  requeueable job back at most MaxBatchRequeue times (default 5); a person's
  requeue always does; restart n waits RequeueBackoff x 2^(n-1) seconds
  (default 5 s, at most 10 minutes; none for a person's or a preemption's
  requeue), as a begin time (so the core wakes for it, tide.sched.wake);
* the work an attempt loses = its GPUs x (end - its last checkpoint, or its
  start when it saved none in this attempt).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tide.model import Partition
from tide.model.sched_config import SchedulerConfig

MAX_BACKOFF = 600.0  # seconds


@dataclass(slots=True, frozen=True)
class RequeuePolicy:
    job_requeue: bool = True  # JobRequeue: the default for jobs that do not say
    max_restarts: int = 5  # MaxBatchRequeue
    requeue_exit: frozenset[int] = frozenset()  # RequeueExit: exit codes worth a retry
    backoff: float = 5.0  # RequeueBackoff (tide): seconds before the first restart

    def delay(self, restarts: int) -> float:
        """Seconds a job waits before restart number `restarts` (1, 2, ...)."""
        return min(MAX_BACKOFF, self.backoff * 2 ** max(0, restarts - 1))


def requeue_policy(config: SchedulerConfig) -> tuple[RequeuePolicy, list[str]]:
    """The cluster's settings from its slurm.conf keys (or the YAML scheduler's
    `extra`), and an error naming each bad value (that key keeps its default)."""
    keys = _Keys(config, [])
    d = RequeuePolicy()
    pol = RequeuePolicy(
        keys.get("JobRequeue", lambda t: bool(int(t)), d.job_requeue, "write 0 or 1"),
        max(0, keys.get("MaxBatchRequeue", int, d.max_restarts, "write a whole number, e.g. 5")),
        keys.get("RequeueExit", _codes, d.requeue_exit, "write exit codes, e.g. 75,140"),
        max(0.0, keys.get("RequeueBackoff", float, d.backoff, "write seconds, e.g. 5")),
    )
    return pol, keys.errors


T = TypeVar("T")


@dataclass(slots=True)
class _Keys:
    config: SchedulerConfig
    errors: list[str]

    def get(self, key: str, convert: Callable[[str], T], default: T, fix: str) -> T:
        extra = {k.lower(): (k, v.strip()) for k, v in self.config.extra.items()}
        name, text = extra.get(key.lower(), (key, None))
        if text is None or text == "":
            return default
        try:
            return convert(text)
        except ValueError:
            self.errors.append(f"{name}={text!r}: {fix}; using {default!r}")
            return default


def _codes(text: str) -> frozenset[int]:
    return frozenset(int(c) for c in text.replace(" ", "").split(",") if c)


def requeueable(asked: bool | None, partition: Partition | None, job_requeue: bool) -> bool:
    """`asked`: the job's --requeue (True) / --no-requeue (False) / neither (None)."""
    if asked is not None:
        return asked
    if partition is not None and partition.requeue is not None:
        return partition.requeue
    return job_requeue


@dataclass(slots=True, frozen=True)
class Requeue:
    """What happens to a job whose attempt ended."""

    again: bool  # back to the queue
    delay: float = 0.0  # seconds before it may start again (its begin time moves)
    capped: bool = False  # it would have gone back but reached MaxBatchRequeue


def decide(
    pol: RequeuePolicy, retryable: bool, forced: bool, can_requeue: bool, restarts: int
) -> Requeue:
    """`retryable`: a failure a requeue may cure; `forced`: a person or a
    preemption requeues it (always, at once); `restarts`: before this end."""
    if forced:
        return Requeue(True)
    can = retryable and can_requeue
    if can and restarts < pol.max_restarts:
        return Requeue(True, pol.delay(restarts + 1))
    return Requeue(False, capped=can)


def lost_gpu_seconds(gpus: int, start: float, last_checkpoint: float | None, end: float) -> float:
    """The work an attempt throws away: GPUs x seconds since its last checkpoint."""
    since = start if last_checkpoint is None else max(start, last_checkpoint)
    return float(gpus) * max(0.0, end - since)
