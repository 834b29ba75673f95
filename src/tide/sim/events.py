"""What the twin's engine schedules, and the records its rule modules
(tide.sim.faults, tide.sim.preemption) share with it: the event kinds of its
heap, a node failure, a suspension. Below the engine and those modules alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from tide.sched.types import Allocation

# event kinds, in tie order at equal times
SUBMIT, WAKE, REPAIR, END, FAIL, BACKFILL = range(6)
PREEMPT = 6  # a preempted job's grace is over: it is killed (docs/preemption.md)
COMPLETE = 7  # nodes of a killed job complete (SchedulerConfig.kill_completing)
BACKGROUND = -2  # WAKE data: a wake-up of slurmctld's background thread (tide.sched.triggers)


@dataclass(slots=True, frozen=True)
class Fault:
    """Node `node` fails at `time` and is repaired `repair_after` seconds later."""

    time: float
    node: str
    repair_after: float = 3600.0


@dataclass(slots=True)
class Suspension:
    """A job suspended by preemption: its GPUs and memory stay held, its cores
    are lent to the preemptor until that one has run and ended."""

    preemptor: int
    since: float
    left: float  # wall seconds it still had to run
    cores: Allocation  # the cores it released (and needs back to resume)
    started: bool = False  # the preemptor has started
