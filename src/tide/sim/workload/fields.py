"""Value parsers for tide JSONL job fields, with Slurm's spellings.

Each parser takes the JSON value and returns the typed value or raises
ValueError with a message that says what is accepted; the JSONL reader adds
the file, line and field name.
"""

from __future__ import annotations

import math
import re
from typing import Any

from tide.hostlist import HostlistError, expand

_TIME_RE = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
_TIME_HELP = "use seconds (a number) or a Slurm time string: MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]"


def slurm_time(value: Any) -> int | None:
    """A JSON number is seconds; a string follows sbatch --time, where a bare
    "30" means 30 minutes. UNLIMITED / INFINITE -> None."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a time; {_TIME_HELP}")
    if isinstance(value, int | float):
        if value < 0 or not math.isfinite(value):
            raise ValueError(f"{value!r} is not a time; {_TIME_HELP}")
        return math.ceil(value)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a time; {_TIME_HELP}")
    text = value.strip()
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return None
    m = _TIME_RE.match(text)
    if not m:
        raise ValueError(f"{value!r} is not a time; {_TIME_HELP}")
    days, first, second, third = m.groups()
    a = int(first)
    b = int(second) if second else None
    c = int(third) if third else None
    if days:  # D-HH, D-HH:MM, D-HH:MM:SS
        return int(days) * 86400 + a * 3600 + (b or 0) * 60 + (c or 0)
    if c is not None:  # HH:MM:SS
        return a * 3600 + (b or 0) * 60 + c
    if b is not None:  # MM:SS
        return a * 60 + b
    return a * 60  # MM


def seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a number of seconds")
    if value < 0 or not math.isfinite(value):
        raise ValueError(f"{value!r}: seconds must be a finite number >= 0")
    return float(value)


def optional_seconds(value: Any) -> float | None:
    return None if value is None else seconds(value)


def positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{value!r}: must be an integer >= 1")
    return value


def integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{value!r}: must be an integer")
    return value


def node_range(value: Any) -> tuple[int, int]:
    """nodes: 4, or "2-4" like sbatch -N."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value, value
    if isinstance(value, str):
        lo, sep, hi = value.strip().partition("-")
        if lo.isdigit() and (not sep or hi.isdigit()):
            a, b = int(lo), int(hi) if sep else int(lo)
            if 1 <= a <= b:
                return a, b
    raise ValueError(f"{value!r}: use a node count (4) or a range ('2-4')")


_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def memory_mb(value: Any) -> int:
    """MB as a number, or a string with K/M/G/T like --mem=16G."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        m = re.fullmatch(r"(\d+)([KMGT]?)B?", value.strip().upper())
        if m:
            return math.ceil(int(m.group(1)) * _MEM_UNITS[m.group(2) or "M"])
    raise ValueError(f"{value!r}: use megabytes (16384) or a size with a unit ('16G')")


def text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{value!r}: must be a string")
    return value


def names(value: Any) -> tuple[str, ...]:
    """A comma-separated string or a list of strings."""
    if isinstance(value, str):
        return tuple(x.strip() for x in value.split(",") if x.strip())
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return tuple(value)
    raise ValueError(f"{value!r}: use 'a,b' or a list of strings")


def hostlist(value: Any) -> tuple[str, ...]:
    try:
        return tuple(expand(text(value)))
    except HostlistError as e:
        raise ValueError(str(e)) from None


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r}: must be true or false")
    return value


def switches(value: Any) -> tuple[int, int | None]:
    """--switches=N[@time]: leaf-switch count and the longest wait for it."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value, None
    if isinstance(value, str):
        count, _, wait = value.partition("@")
        if count.strip().isdigit() and int(count) >= 1:
            return int(count), slurm_time(wait) if wait else None
    raise ValueError(f"{value!r}: use a switch count (1) or 'N@time' ('1@10:00')")


def amount(value: Any) -> float:
    """A positive count: a number, or a string with K/M/B/G/T (powers of 1000),
    as `params: "7B"` or `tokens_per_step: "4M"`."""
    from tide.efficiency import EfficiencyError, parse_amount

    if isinstance(value, int | float) and not isinstance(value, bool):
        if value > 0 and math.isfinite(value):
            return float(value)
    elif isinstance(value, str):
        try:
            return parse_amount("value", value)
        except EfficiencyError:
            pass
    raise ValueError(f"{value!r}: use a positive number (7e9) or one with K/M/B/T ('7B')")


def fraction(value: Any) -> float:
    """A share in (0, 1], as an MFU."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    raise ValueError(f"{value!r}: use a number above 0 and at most 1 (0.4 = 40 %)")
