"""`tide sim` progress: a live bar on a terminal, periodic lines in a log.

The engine reports (virtual time, jobs ended, jobs submitted) often; this reads
the clock, redraws at most 10 times a second on a terminal, and otherwise
writes one line every `TIDE_PROGRESS_EVERY` seconds (default 10) to stderr, so
a long run under nohup or CI shows that it moves and when it will end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from tide.sim.progress import ProgressFn, ProgressMeter, clock_text, sim_time


def _log_period() -> float:
    try:
        return max(0.0, float(os.environ.get("TIDE_PROGRESS_EVERY", "10")))
    except ValueError:
        return 10.0


@contextmanager
def watch(console: Console, policy: str, total: int | None) -> Iterator[ProgressFn]:
    """A ProgressFn that shows the run as it goes (bar or log lines)."""
    meter = ProgressMeter(total, time.monotonic())
    if console.is_terminal:
        with _bar(console, policy, meter) as report:
            yield report
        return
    period = _log_period()
    last = meter.started

    def report(t: float, done: int, submitted: int) -> None:
        nonlocal last
        clock = time.monotonic()
        if clock - last >= period:
            meter.update(clock, t, done, submitted)
            last = clock
            console.print(meter.line(policy), highlight=False, soft_wrap=True)

    yield report
    if meter.now > meter.started:  # it took long enough to log: say where it ended
        meter.update(time.monotonic(), meter.t, meter.done, meter.submitted)
        console.print(meter.line(policy), highlight=False, soft_wrap=True)


@contextmanager
def _bar(console: Console, policy: str, meter: ProgressMeter) -> Iterator[ProgressFn]:
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("simulated {task.fields[t]}  jobs {task.fields[jobs]}  {task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[eta]}"),
    )
    with Progress(*columns, console=console, transient=True, auto_refresh=False) as bar:
        task = bar.add_task(policy, total=meter.total, t=sim_time(0), jobs="0", rate="", eta="")
        last = 0.0

        def report(t: float, done: int, submitted: int) -> None:
            nonlocal last
            clock = time.monotonic()
            if clock - last < 0.1:
                return
            last = clock
            meter.update(clock, t, done, submitted)
            total = f"/{meter.total:,}" if meter.total is not None else ""
            eta = meter.eta()
            bar.update(
                task, completed=done, t=sim_time(t), jobs=f"{done:,}{total}",
                rate=f"{meter.rate():,.0f} jobs/s", eta=f"ETA {clock_text(eta)}" if eta else "",
            )  # fmt: skip
            bar.refresh()

        yield report
