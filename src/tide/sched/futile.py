"""When a scheduling pass can decide nothing: no GPU is free. Pure.

A backlog behind a whole-cluster job (seed004: ~90k small jobs while an
800-GPU job runs for 12 h) makes every PriorityCalcPeriod recalculation
move every pending job's priority, and the pass after it sort them all
again, although no job can start: no GPU is free. Priority drift alone
starts nothing on a full cluster (issue 12, item 1).

For a driver that reads starts (Snapshot.starts_only), a pass decides
starts, preemptions, eligibility (a job waiting on a dependency, a hold or
a begin time), wakes (begin times, --switches waits, reservations, grace
ends, exemptions: tide.sched.wake) and pending reasons. With no GPU free,
no preemption, no advance reservation, and every pending job asking for
GPUs and waiting on nothing but them (`waits_only_for_gpus`), it decides
none of these but the reasons (the one job shown waiting for Resources).
A driver that reads that reason may skip such a pass only as long as no
GPU comes free without a pass (the twin's engine: docs/twin.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from tide.model import Job, Reservation
from tide.model.sched_config import SchedulerConfig


def waits_only_for_gpus(job: Job) -> bool:
    """Whether, with no GPU free, a pass decides nothing for this pending job:
    it asks for GPUs (a job without cannot be ruled out by free GPUs) and is
    eligible, with no dependency, hold, begin time or --switches wait (the
    pass evaluates those and may set its eligibility or a wake) and no
    reservation (its window wakes the core)."""
    req = job.request
    return (
        job.eligible is not None
        and req.dependency is None
        and req.begin is None
        and req.switches is None
        and not req.reservation
        and not req.hold
        and not job.held
        and req.total_gpus(req.node_range()[0]) > 0
    )


def pass_is_futile(
    config: SchedulerConfig,
    free_gpus: int,
    others: int,
    reservations: Sequence[Reservation] = (),
) -> bool:
    """Whether a pass decides nothing a starts-only driver acts on: no GPU
    free (on any node), no pending job for which `waits_only_for_gpus` is
    false (`others`: how many there are), no preemption configured, no
    advance reservation."""
    return (
        free_gpus == 0
        and others == 0
        and config.preempt_type in ("", "preempt/none")
        and not reservations
    )


__all__ = ["pass_is_futile", "waits_only_for_gpus"]
