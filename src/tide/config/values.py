"""Typed values from Slurm's text: numbers, YES/NO, times, TRES lists.

Each converter names the key, the bad value and the fix when it fails, so a
reader only has to pass the key, the raw text and where the line is.
Time formats follow slurm.conf(5) "MaxTime": minutes, M:S, H:M:S, D-H,
D-H:M, D-H:M:S; UNLIMITED / INFINITE mean no limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tide.config.errors import ConfigError

UNLIMITED = {"UNLIMITED", "INFINITE", "INFINITY", "-1"}
_TIME_RE = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


@dataclass(frozen=True, slots=True)
class Loc:
    """Where a value came from, for error messages."""

    file: str
    line: int | None = None

    def error(self, problem: str, fix: str = "") -> ConfigError:
        return ConfigError(self.file, self.line, problem, fix)


def parse_time(text: str) -> int | None:
    """Slurm time string -> seconds (None = unlimited). Raises ValueError.

    A bare number is minutes; with a day part, the first field after '-' is
    hours ("2-12" = 2 days 12 hours); without, "M:S" and "H:M:S".
    """
    t = text.strip()
    if t.upper() in UNLIMITED:
        return None
    m = _TIME_RE.match(t)
    if not m:
        raise ValueError(text)
    days, a, b, c = m.groups()
    if days is not None:  # D-H, D-H:M, D-H:M:S
        hours, mins, secs = int(a), int(b or 0), int(c or 0)
        return ((int(days) * 24 + hours) * 60 + mins) * 60 + secs
    if b is None:  # minutes
        return int(a) * 60
    if c is None:  # M:S
        return int(a) * 60 + int(b)
    return (int(a) * 60 + int(b)) * 60 + int(c)  # H:M:S


def format_time(seconds: int | None) -> str:
    """Seconds -> Slurm's D-HH:MM:SS (or HH:MM:SS); None -> UNLIMITED."""
    if seconds is None:
        return "UNLIMITED"
    days, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    hms = f"{h:02d}:{m:02d}:{s:02d}"
    return f"{days}-{hms}" if days else hms


def to_time(key: str, value: str, loc: Loc) -> int | None:
    try:
        return parse_time(value)
    except ValueError:
        raise loc.error(
            f"{key}={value!r} is not a Slurm time",
            f"write minutes, H:M:S, D-H:M:S or UNLIMITED, such as {key}=2-00:00:00",
        ) from None


def to_int(key: str, value: str, loc: Loc, minimum: int = 0) -> int:
    v = value.strip()
    if not re.fullmatch(r"[+-]?\d+", v):
        raise loc.error(
            f"{key}={value!r} is not a number",
            f"write an integer of at least {minimum} such as {key}={max(minimum, 1) * 64}"
            if minimum > 0
            else f"write a non-negative integer such as {key}=10",
        )
    n = int(v)
    if n < minimum:
        raise loc.error(f"{key}={value!r} is below {minimum}", f"write {key}={minimum} or more")
    return n


def to_int_or_unlimited(key: str, value: str, loc: Loc, minimum: int = 0) -> int | None:
    if value.strip().upper() in UNLIMITED:
        return None
    return to_int(key, value, loc, minimum)


def to_float(key: str, value: str, loc: Loc) -> float:
    try:
        return float(value)
    except ValueError:
        raise loc.error(
            f"{key}={value!r} is not a number", f"write a decimal such as {key}=1.0"
        ) from None


_TRUE = {"YES", "Y", "TRUE", "1", "ON"}
_FALSE = {"NO", "N", "FALSE", "0", "OFF"}


def to_bool(key: str, value: str, loc: Loc) -> bool:
    v = value.strip().upper()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise loc.error(f"{key}={value!r} is not YES or NO", f"write {key}=YES or {key}=NO")


def split_list(value: str) -> tuple[str, ...]:
    """'a, b,,c' -> ('a', 'b', 'c')."""
    return tuple(p.strip() for p in value.split(",") if p.strip())


def tres_name(name: str) -> str:
    """Slurm TRES names are case-insensitive in type: 'GRES/gpu' -> 'gres/gpu'."""
    return name.strip().lower()


def _tres_pairs(key: str, value: str, loc: Loc) -> list[tuple[str, str]]:
    pairs = []
    for item in split_list(value):
        name, eq, amount = item.partition("=")
        if not eq or not name.strip() or not amount.strip():
            raise loc.error(
                f"{key} item {item!r} is not NAME=VALUE",
                f"write TRES as {key}=cpu=64,gres/gpu=8",
            )
        pairs.append((tres_name(name), amount.strip()))
    return pairs


def to_tres(key: str, value: str, loc: Loc) -> dict[str, int]:
    """'cpu=64,mem=100G,gres/gpu=8' -> {'cpu': 64, 'mem': 102400, 'gres/gpu': 8}.

    mem takes Slurm's unit suffixes and is kept in MB; -1 removes a limit.
    """
    out: dict[str, int] = {}
    for name, amount in _tres_pairs(key, value, loc):
        if amount == "-1":
            continue
        unit = amount[-1].upper()
        if name == "mem" and unit in _MEM_UNITS:
            num = to_int(f"{key} {name}", amount[:-1], loc)
            out[name] = int(num * _MEM_UNITS[unit])
        else:
            out[name] = to_int(f"{key} {name}", amount, loc)
    return out


def to_weights(key: str, value: str, loc: Loc) -> dict[str, float]:
    """PriorityWeightTRES=CPU=1000,GRES/gpu=3000 -> {'cpu': 1000.0, 'gres/gpu': 3000.0}."""
    return {name: to_float(f"{key} {name}", amount, loc) for name, amount in _tres_pairs(
        key, value, loc)}
