"""Moved to tide.display (shared by the client and the server, which may not
import each other); kept so code written against the old name still runs."""

from tide.display import (
    STATE_CODE,
    duration,
    hms,
    midnight,
    parse_time,
    percent,
    print_json,
    seconds_short,
    si,
    table,
    timestamp,
)

__all__ = [
    "STATE_CODE",
    "duration",
    "hms",
    "midnight",
    "parse_time",
    "percent",
    "print_json",
    "seconds_short",
    "si",
    "table",
    "timestamp",
]
