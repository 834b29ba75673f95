"""Durations in tide's YAML: explicit units ("90s", "30m", "12h", "7d", "1d12h"),
Slurm's formats ("2-00:00:00", "01:30:00"), or UNLIMITED. A bare number is
rejected: Slurm reads it as minutes, most people as seconds.
"""

from __future__ import annotations

import re

from tide.config.values import UNLIMITED, parse_time

_UNITS = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(value: object) -> int | None:
    """-> seconds, None for unlimited. Raises ValueError with the fix."""
    if value is None:
        return None
    if isinstance(value, int | float):  # bool is an int too
        raise ValueError(f"{value!r} has no unit; write e.g. '{value}m' (minutes), "
                         f"'{value}s' or '{value}h'")
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a duration; write e.g. '30m' or '2-00:00:00'")
    text = value.strip()
    if text.upper() in UNLIMITED:
        return None
    m = _UNITS.match(text.lower())
    if m and any(m.groups()):
        d, h, mi, s = (int(x or 0) for x in m.groups())
        return ((d * 24 + h) * 60 + mi) * 60 + s
    if text.isdigit():
        raise ValueError(f"{text!r} has no unit; write e.g. '{text}m' (minutes) or '{text}s'")
    try:
        return parse_time(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a duration; write e.g. '90s', '30m', '7d' "
                         "or '2-00:00:00'") from None


def format_duration(seconds: int | None) -> str:
    """Seconds -> the shortest unit form: 86400 -> '1d', 5400 -> '1h30m'."""
    if seconds is None:
        return "UNLIMITED"
    if seconds == 0:
        return "0s"
    out, rest = [], int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        n, rest = divmod(rest, size)
        if n:
            out.append(f"{n}{unit}")
    return "".join(out)
