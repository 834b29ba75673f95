"""When a main scheduling pass runs after an event, as Slurm 22.05's slurmctld does. Pure.

Which jobs a main pass sees (what has ended, what was submitted) decides which
nodes the jobs it starts get, so both drivers ask these rules when to run one:

* **Ends.** A job's end asks for a pass at once (`_slurm_rpc_epilog_complete` calls
  `schedule()`, job_scheduler.c `_sched_agent`), but passes are at least
  `sched_min_interval` apart, and the request comes only once the job's nodes have
  completed (epilog), a few hundred ms after the end. Ends closer together than
  sched_min_interval are therefore served by one pass that sees all of them
  (`end_pass_waits`): in the recorded runs a pass after a burst of ends 30 ms
  apart put the released jobs on the nodes of every job of the burst.
* **Submissions.** `_slurm_rpc_submit_batch_job` only counts a request
  (`queue_job_scheduler`); slurmctld's background thread, which wakes about once a
  second (controller.c `_slurmctld_background`), runs the main scheduler for them
  when at least `batch_sched_delay` whole seconds have passed since it last did
  (`background_tick`, `background_may_run`). Until then new jobs are started by the
  backfill thread. A driver that knows the phase of that thread (a recorded Slurm
  run: slurmctld's start) applies it; without a phase a submission gets a pass at
  once (tide's own controller).

Both are functions of times and the configuration only: the twin's engine and
the live scheduling loop (tide.server.loop) call them.
"""

from __future__ import annotations

import math

from tide.model.sched_config import SchedulerConfig

BACKGROUND_PERIOD = 1.0  # seconds between wake-ups of slurmctld's background thread


def min_gap(config: SchedulerConfig) -> float:
    """The least time between two main passes (sched_min_interval)."""
    return max(0.0, config.sched_min_interval)


def end_pass_waits(config: SchedulerConfig, end: float, next_end: float | None) -> bool:
    """Whether the pass an end at `end` asks for is left to the next end (at
    `next_end`), because that one comes within sched_min_interval: the pass then
    serves both, as Slurm's does once the nodes of both have completed."""
    gap = min_gap(config)
    return gap > 0 and next_end is not None and next_end - end < gap - 1e-9


def submissions_wait(config: SchedulerConfig) -> bool:
    """Whether submissions wait for the background thread (its phase is known and
    batch_sched_delay is set) instead of getting a main pass at once."""
    return config.background_phase is not None and config.batch_sched_delay > 0


def background_tick(config: SchedulerConfig, t: float) -> float:
    """The background thread's first wake-up strictly after t."""
    phase = (config.background_phase or 0.0) % BACKGROUND_PERIOD
    k = math.floor((t - phase) / BACKGROUND_PERIOD) + 1
    tick = k * BACKGROUND_PERIOD + phase
    return tick if tick > t + 1e-9 else tick + BACKGROUND_PERIOD


def background_may_run(config: SchedulerConfig, t: float, last: float | None) -> bool:
    """At a wake-up at t with submissions counted: whether the background thread runs
    the main scheduler now (batch_sched_delay whole seconds of the Unix clock since
    it last did: Slurm compares time_t values)."""
    if last is None:
        return True
    epoch = config.epoch
    return math.floor(epoch + t) - math.floor(epoch + last) >= config.batch_sched_delay


__all__ = [
    "BACKGROUND_PERIOD",
    "background_may_run",
    "background_tick",
    "end_pass_waits",
    "min_gap",
    "submissions_wait",
]
