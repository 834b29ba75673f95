"""Text output the Slurm way: fixed-width columns, Slurm's time and state spellings.

Shared by the client (tide.client, tide.cli, tide.slurm) and the server
(squeue text, dashboard), so neither imports the other.

Tables are plain text built with str methods (not Rich tables): `tide queue`
on 100,000 jobs must print in well under a second.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from tide.defaults import TIME_INFINITE

STATE_CODE = {
    "PENDING": "PD",
    "RUNNING": "R",
    "SUSPENDED": "S",
    "COMPLETING": "CG",
    "COMPLETED": "CD",
    "FAILED": "F",
    "CANCELLED": "CA",
    "TIMEOUT": "TO",
    "NODE_FAIL": "NF",
    "PREEMPTED": "PR",
    "REQUEUED": "RQ",
    "OUT_OF_MEMORY": "OOM",
    "DEADLINE": "DL",
}


def _dhms(seconds: float) -> tuple[int, int, int, int]:
    """Whole days, hours, minutes, seconds of a non-negative duration."""
    d, s = divmod(max(0, int(seconds)), 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return d, h, m, s


def duration(seconds: float | None) -> str:
    """Slurm's elapsed/limit format: M:SS, H:MM:SS, D-HH:MM:SS; None = UNLIMITED."""
    if seconds is None or seconds >= TIME_INFINITE:
        return "UNLIMITED"
    d, h, m, s = _dhms(seconds)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def hms(seconds: float | None) -> str:
    """sacct's Elapsed/Timelimit format: HH:MM:SS, D-HH:MM:SS; None = UNLIMITED."""
    if seconds is None or seconds >= TIME_INFINITE:
        return "UNLIMITED"
    d, h, m, s = _dhms(seconds)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def timestamp(t: float | None) -> str:
    """ISO-like local time as sacct prints it; 'Unknown' when absent."""
    if t is None:
        return "Unknown"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    right: set[int] | None = None,
    out: Any = None,
) -> None:
    """Print columns padded to the widest cell (one write for the whole table)."""
    out = out or sys.stdout
    right = right or set()
    cells = [[("" if c is None else str(c)) for c in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in cells:
        for i, c in enumerate(r):
            if len(c) > widths[i]:
                widths[i] = len(c)

    def fmt(r: Sequence[str]) -> str:
        return " ".join(
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(r)
        ).rstrip()

    lines = [fmt(list(headers))]
    lines.extend(fmt(r) for r in cells)
    out.write("\n".join(lines) + "\n")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def parse_time(text: str, now: float | None = None) -> float:
    """sacct-style times: now, now-1day, now-3hours, YYYY-MM-DD[THH:MM[:SS]],
    HH:MM[:SS] (today), or epoch seconds."""
    now = time.time() if now is None else now
    t = text.strip().lower()
    if t in ("now", ""):
        return now
    if t.startswith("now"):
        sign = 1 if t[3:4] == "+" else -1
        rest = t[4:]
        num = "".join(ch for ch in rest if ch.isdigit())
        unit = rest[len(num) :] or "seconds"
        mult = _UNITS.get(unit.rstrip("s") if unit not in _UNITS else unit)
        if not num or mult is None:
            raise ValueError(f"{text!r}: use now-N[seconds|minutes|hours|days|weeks]")
        return now + sign * int(num) * mult
    try:
        return float(t)
    except ValueError:
        pass
    for fmt in ("%Y-%m-%dt%H:%M:%S", "%Y-%m-%dt%H:%M", "%Y-%m-%d"):
        try:
            return time.mktime(time.strptime(t, fmt))
        except ValueError:
            continue
    for fmt in ("%H:%M:%S", "%H:%M"):
        try:
            hm = time.strptime(t, fmt)
        except ValueError:
            continue
        day = time.localtime(now)
        return time.mktime((*day[:3], hm.tm_hour, hm.tm_min, hm.tm_sec, *day[6:]))
    raise ValueError(
        f"{text!r} is not a time; use YYYY-MM-DD[THH:MM[:SS]], HH:MM, now-2days or epoch seconds"
    )


_UNITS = {
    "second": 1,
    "sec": 1,
    "s": 1,
    "minute": 60,
    "min": 60,
    "m": 60,
    "hour": 3600,
    "h": 3600,
    "day": 86400,
    "d": 86400,
    "week": 7 * 86400,
    "w": 7 * 86400,
}


def midnight(now: float | None = None) -> float:
    lt = time.localtime(time.time() if now is None else now)
    return time.mktime((*lt[:3], 0, 0, 0, *lt[6:]))


def si(value: float | None) -> str:
    """12345678 -> '12.3M' (k, M, G, T, P, E: powers of 1000); None -> 'Unknown'."""
    if value is None:
        return "Unknown"
    for unit, size in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.3g}"


def seconds_short(value: float | None) -> str:
    """A step time: '850ms', '1.24s', '2.5min'; None -> 'Unknown'."""
    if value is None:
        return "Unknown"
    if value < 1:
        return f"{value * 1000:.3g}ms"
    if value < 120:
        return f"{value:.3g}s"
    return f"{value / 60:.3g}min"


def percent(value: float | None) -> str:
    """0.4123 -> '41.2%'; None -> 'Unknown'."""
    return "Unknown" if value is None else f"{100 * value:.1f}%"
