"""The scheduling core: pure functions from a snapshot to decisions.

`Scheduler`, `schedule`, `Decisions` and `Snapshot` load on first use, so
that importing one module of the core (the twin's count backend, the index)
does not import the whole cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tide.lazy import lazy_names

if TYPE_CHECKING:
    from tide.sched.scheduler import Scheduler, schedule
    from tide.sched.types import Decisions, Snapshot

__all__ = ["Decisions", "Scheduler", "Snapshot", "schedule"]
_HOME = {
    "Scheduler": "scheduler",
    "schedule": "scheduler",
    "Decisions": "types",
    "Snapshot": "types",
}


__getattr__ = lazy_names(__name__, _HOME, globals())
