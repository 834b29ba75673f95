"""`tide sim` progress: a live bar on a terminal, periodic lines in a log.

The engine reports (virtual time, jobs ended, jobs submitted) often; this reads
the clock, redraws at most 10 times a second on a terminal, and otherwise
writes one line every `TIDE_PROGRESS_EVERY` seconds (default 10) to stderr, so
a long run under nohup or CI shows that it moves and when it will end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from tide.cli.plain_console import as_rich
from tide.sim.progress import ProgressFn, ProgressMeter, clock_text, sim_time

if TYPE_CHECKING:
    from tide.cli.plain_console import ConsoleLike

# Rich's progress bar loads only on a terminal: a run writing to a log or a
# pipe (benchmarks, CI) never needs it.


def _log_period() -> float:
    try:
        return max(0.0, float(os.environ.get("TIDE_PROGRESS_EVERY", "10")))
    except ValueError:
        return 10.0


@contextmanager
def watch(console: ConsoleLike, policy: str, total: int | None) -> Iterator[ProgressFn]:
    """A ProgressFn that shows the run as it goes (bar or log lines)."""
    meter = ProgressMeter(total, time.monotonic())
    if console.is_terminal:
        with _bar(console, policy, meter) as bar_report:
            yield bar_report
        return
    period = _log_period()
    last = meter.started
    latest = (0.0, 0, 0)  # the last report, printed or not

    def report(t: float, done: int, submitted: int) -> None:
        nonlocal last, latest
        latest = (t, done, submitted)
        clock = time.monotonic()
        if clock - last >= period:
            meter.update(clock, t, done, submitted)
            last = clock
            console.print(meter.line(policy), highlight=False, soft_wrap=True)

    yield report
    if meter.now > meter.started:  # it took long enough to log: say where it ended
        meter.update(time.monotonic(), *latest)
        console.print(meter.line(policy), highlight=False, soft_wrap=True)


@contextmanager
def _bar(console: ConsoleLike, policy: str, meter: ProgressMeter) -> Iterator[ProgressFn]:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("simulated {task.fields[t]}  jobs {task.fields[jobs]}  {task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[eta]}"),
    )
    with Progress(*columns, console=as_rich(console), transient=True, auto_refresh=False) as bar:
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


@contextmanager
def watch_many(
    console: ConsoleLike, policies: list[str], total: int | None
) -> Iterator[Callable[[str, float, int, int], None]]:
    """Progress of several policies replayed side by side (sim compare's workers):
    `report(policy, t, done, submitted)`; one bar per policy on a terminal, else
    every period one line per running policy and one line when each ends."""
    meters = {p: ProgressMeter(total, time.monotonic()) for p in policies}
    ended: set[str] = set()
    if console.is_terminal:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("simulated {task.fields[t]}  jobs {task.fields[jobs]}"),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=as_rich(console), transient=True) as bar:
            tasks = {p: bar.add_task(p, total=total, t=sim_time(0), jobs="0") for p in policies}

            def show(policy: str, t: float, done: int, submitted: int) -> None:
                if submitted < 0:  # ended
                    bar.remove_task(tasks[policy])
                    took = clock_text(time.monotonic() - meters[policy].started)
                    bar.console.print(f"{policy}: done in {took}", highlight=False)
                    return
                meters[policy].update(time.monotonic(), t, done, submitted)
                bar.update(tasks[policy], completed=done, t=sim_time(t), jobs=f"{done:,}")

            yield show
        return
    period, last = _log_period(), time.monotonic()

    def log(policy: str, t: float, done: int, submitted: int) -> None:
        nonlocal last
        clock = time.monotonic()
        m = meters[policy]
        if submitted >= 0:
            m.update(clock, t, done, submitted)
        else:
            m.update(clock, m.t, m.done, m.submitted)
        if submitted < 0:  # the policy's run ended
            ended.add(policy)
            console.print(f"{policy}: done in {clock_text(meters[policy].elapsed)}",
                          highlight=False, soft_wrap=True)  # fmt: skip
        elif clock - last >= period:
            last = clock
            for p in policies:
                if p not in ended and meters[p].now > meters[p].started:
                    console.print(meters[p].line(p), highlight=False, soft_wrap=True)

    yield log
