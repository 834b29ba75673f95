"""Advance reservations (scontrol create reservation)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Reservation:
    """Holds nodes (or a GPU count on any nodes) for a time window.

    Only the listed accounts/users may run inside it, and only jobs that name
    it with --reservation. With MAINT, nobody runs on its nodes in the window
    (jobs whose time limit would cross into it wait).
    """

    name: str
    start: float
    end: float
    nodes: tuple[str, ...] = ()  # explicit nodes
    gpus: int = 0  # or: a GPU count, on nodes the scheduler picks
    accounts: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()  # MAINT, IGNORE_JOBS, ...
    partition: str = ""

    @property
    def maint(self) -> bool:
        return "MAINT" in self.flags

    def active(self, now: float) -> bool:
        return self.start <= now < self.end

    def admits(self, user: str, account: str) -> bool:
        if self.maint:
            return False
        return user in self.users or account in self.accounts
