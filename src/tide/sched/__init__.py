"""The scheduling core: pure functions from a snapshot to decisions.

`Scheduler`, `schedule`, `Decisions` and `Snapshot` load on first use, so
that importing one module of the core (the twin's count backend, the index)
does not import the whole cycle.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tide.sched.cycle import Scheduler, schedule
    from tide.sched.types import Decisions, Snapshot

__all__ = ["Decisions", "Scheduler", "Snapshot", "schedule"]
_HOME = {"Scheduler": "cycle", "schedule": "cycle", "Decisions": "types", "Snapshot": "types"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
