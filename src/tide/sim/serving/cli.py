"""`tide sim compare --patterns ...`: parse the pattern options, run, print."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tide.sim.serving.compare import compare, write
from tide.sim.serving.metrics import Prices
from tide.sim.serving.presets import PRESETS, azure_scenario
from tide.sim.serving.report import explain
from tide.sim.serving.scenario import PATTERNS
from tide.sim.serving.table import ROWS, best, fmt, value
from tide.sim.serving.trace import TraceError

SEED000_PRICE = 15.0  # seed 000's worked example: 15 per GPU-hour


class PatternOptionError(ValueError):
    pass


def amounts(flag: str, items: list[str] | None, patterns: list[str]) -> dict[str, float]:
    """['tidal=180000', ...] -> {'tidal': 180000.0}; errors name the flag and the fix."""
    out: dict[str, float] = {}
    for item in items or []:
        name, sep, num = item.partition("=")
        try:
            amount = float(num)
        except ValueError:
            amount = -1.0
        if not sep or name not in patterns or amount < 0:
            raise PatternOptionError(
                f"{flag} {item!r}: write PATTERN=AMOUNT with a pattern of this run "
                f"({', '.join(patterns)}) and an amount >= 0, e.g. {flag} tidal=180000"
            )
        out[name] = amount
    return out


def compare_patterns(
    patterns_text: str, scenario: str | None, days: float | None, seed: int, out: Path,
    price: float | None, investment: list[str] | None, opex: list[str] | None,
    burst_price: float | None, baseline: str, workers: int = 1,
) -> int:  # fmt: skip
    console = Console(stderr=True)
    patterns = [p.strip() for p in patterns_text.split(",") if p.strip()]
    bad = [p for p in patterns if p not in PATTERNS]
    try:
        if bad or not patterns:
            raise PatternOptionError(
                f"--patterns: unknown {', '.join(bad) or '(none)'}; choose from "
                f"{', '.join(PATTERNS)}"
            )
        name = scenario or "azure-week"
        if name not in PRESETS:
            raise PatternOptionError(
                f"--scenario {name!r} is not a patterns scenario; choose one of "
                f"{', '.join(PRESETS)}"
            )
        if days is not None and not 0 < days <= 31:
            raise PatternOptionError(f"--days {days:g}: give 0 < days <= 31")
        if baseline not in patterns:
            raise PatternOptionError(f"--baseline {baseline!r} is not one of --patterns")
        prices = Prices(
            gpu_hour=SEED000_PRICE if price is None else price,
            burst_gpu_hour=burst_price,
            investment=amounts("--investment", investment, patterns),
            opex=amounts("--opex", opex, patterns),
            baseline=baseline,
        )
        sc = azure_scenario(name, days=days, seed=seed)
    except (PatternOptionError, TraceError) as e:
        console.print(f"[red]error:[/red] {e}")
        return 1
    for note in sc.notes:
        console.print(f"[dim]{note}[/dim]")
    started = time.monotonic()
    last = [0.0]

    def progress(pattern: str, t: float) -> None:
        now = time.monotonic()
        if now - last[0] >= 2.0 or t >= sc.horizon:
            last[0] = now
            done = 100 * t / sc.horizon
            what = "done" if t >= sc.horizon else f"{done:5.1f}%"
            console.print(f"{pattern}: {what} of {sc.horizon / 86400:g} days "
                          f"({now - started:.0f} s)", highlight=False)  # fmt: skip

    result = compare(sc, patterns, prices, progress, workers)
    write(result, out)
    Console().print(_table(result))
    for line in explain(result):
        print(line.replace("**", ""))
    if price is None:
        print(f"(costs at seed 000's example price, {SEED000_PRICE:g} per GPU-hour: give --price)")
    print(f"wrote {out}/report.md, {out}/patterns.json and one folder per pattern")
    sys.stdout.flush()
    return 0


def _table(result: dict) -> Table:  # type: ignore[type-arg]
    names = list(result["patterns"])
    t = Table(title=f"patterns: {result['scenario']['name']}")
    t.add_column("figure")
    for n in names:
        t.add_column(n, justify="right")
    for label, section, key, kind, better in ROWS:
        w = set(best(result, section, key, better))
        cells = []
        for p in names:
            text = fmt(value(result["patterns"][p], section, key), kind)
            cells.append(f"[bold]{text}[/bold]" if p in w and len(w) < len(names) else text)
        t.add_row(label, *cells)
    return t
