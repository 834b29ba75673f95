"""Progress of a twin run, as a user watches it: simulated time, jobs done of
the total, jobs per second and the time left.

The engine reports facts (`Engine.progress(t, done, submitted)`: virtual time,
jobs ended, jobs submitted so far); `ProgressMeter` turns them into a rate and
an ETA against a clock the caller passes in (the engine reads no clock), and
decides when a new line is due. `tide sim` draws it as a bar on a terminal and
writes it as periodic lines otherwise (docs/twin.md, "Progress").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

# (virtual time, jobs ended, jobs submitted): what the engine reports
ProgressFn = Callable[[float, int, int], None]


@dataclass(slots=True)
class ProgressMeter:
    """Rates and ETA from successive reports. `total` is the number of jobs in
    the workload when known (None: no percentage and no ETA)."""

    total: int | None
    started: float  # clock reading at the start of the run
    t: float = 0.0
    done: int = 0
    submitted: int = 0
    now: float = 0.0  # clock reading of the last report
    _window: list[tuple[float, int]] = field(default_factory=list)  # (clock, done) samples

    def update(self, clock: float, t: float, done: int, submitted: int) -> None:
        self.t, self.done, self.submitted, self.now = t, done, submitted, clock
        self._window.append((clock, done))
        # the rate over the last ~30 s of wall time follows a run whose pace changes
        while len(self._window) > 2 and clock - self._window[1][0] > 30.0:
            self._window.pop(0)

    @property
    def elapsed(self) -> float:
        return max(0.0, self.now - self.started)

    def rate(self) -> float:
        """Jobs ended per second of wall time, recently (overall while young)."""
        c0, d0 = self._window[0] if self._window else (self.started, 0)
        if self.now - c0 < 1.0:
            c0, d0 = self.started, 0
        span = self.now - c0
        return (self.done - d0) / span if span > 0 else 0.0

    def eta(self) -> float | None:
        """Seconds left at the recent rate; None while unknown."""
        if self.total is None:
            return None
        rate = self.rate()
        if rate <= 0:
            return None
        return max(0, self.total - self.done) / rate

    def line(self, policy: str) -> str:
        """One self-contained line (for logs)."""
        total = f"{self.total:,}" if self.total is not None else "?"
        pct = f" ({self.done / self.total:.0%})" if self.total else ""
        eta = self.eta()
        left = f", ETA {clock_text(eta)}" if eta is not None else ""
        return (
            f"{policy}: simulated {sim_time(self.t)}, jobs done {self.done:,}/{total}{pct}, "
            f"{self.rate():,.0f} jobs/s, elapsed {clock_text(self.elapsed)}{left}"
        )


def sim_time(seconds: float) -> str:
    """Virtual time as D-HH:MM:SS (Slurm's duration form)."""
    s = max(0, int(seconds))
    days, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{days}-{h:02d}:{m:02d}:{s:02d}" if days else f"{h:02d}:{m:02d}:{s:02d}"


def clock_text(seconds: float) -> str:
    """Wall time: 7s, 3m05s, 1h02m."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
