"""The scheduling core: pure functions from a snapshot to decisions."""

from tide.sched.cycle import Scheduler, schedule
from tide.sched.types import Decisions, Snapshot

__all__ = ["Decisions", "Scheduler", "Snapshot", "schedule"]
