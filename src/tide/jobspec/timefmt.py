"""Slurm's spellings of durations, memory sizes and --begin times.

Durations ("minutes", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S") follow the
sbatch(1) --time description; memory sizes follow --mem ("[K|M|G|T]", MB by
default); --begin times follow sbatch(1) --begin, evaluated in UTC against a
`now` the caller passes in (the parser never reads the clock).

Bad input raises ValueError with a short reason; callers add the option name.
"""

from __future__ import annotations

import calendar
import math
import re
from datetime import UTC, datetime, timedelta

from tide.defaults import TIME_INFINITE

UNLIMITED_WORDS = ("UNLIMITED", "INFINITE")

# --- durations -----------------------------------------------------------

_DAYS_RE = re.compile(r"(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?")
_CLOCK_RE = re.compile(r"(\d+)(?::(\d+)(?::(\d+))?)?")


def parse_duration(text: str) -> int | None:
    """Seconds for a Slurm duration; None for UNLIMITED, INFINITE or -1.

    "90" is 90 minutes, "1:30" is 1 minute 30 seconds, "1:00:00" one hour,
    "2-12" two and a half days. Fields are not bounded ("0:90" is 90 s).
    """
    s = text.strip()
    if s.upper() in UNLIMITED_WORDS or s == "-1":
        return None
    m = _DAYS_RE.fullmatch(s)
    if m:
        d, h, mi, sec = (int(g) if g else 0 for g in m.groups())
        return ((d * 24 + h) * 60 + mi) * 60 + sec
    m = _CLOCK_RE.fullmatch(s)
    if not m:
        raise ValueError("not a time")
    a, b, c = m.groups()
    if c is not None:  # H:M:S
        return (int(a) * 60 + int(b)) * 60 + int(c)
    return int(a) * 60 + (int(b) if b is not None else 0)  # M or M:S


def parse_time_limit(text: str) -> int | None:
    """--time / --time-min: seconds, rounded up to whole minutes as Slurm
    does; 0 and UNLIMITED both mean no limit (None)."""
    seconds = parse_duration(text)
    if seconds is None:
        return None
    minutes = math.ceil(seconds / 60)
    return minutes * 60 if minutes else None


def parse_job_time(text: str) -> int:
    """--time (and scontrol's TimeLimit=): seconds rounded up to whole minutes;
    0, UNLIMITED, INFINITE and -1 request no limit (TIME_INFINITE), as sbatch
    reads them: a job's time limit, unlike the partition default it replaces."""
    seconds = parse_duration(text)
    if seconds is None or seconds == 0:
        return TIME_INFINITE
    return math.ceil(seconds / 60) * 60


def format_duration(seconds: int | None) -> str:
    """Seconds as squeue shows a time limit: "D-HH:MM:SS" or "HH:MM:SS";
    None (and TIME_INFINITE) is "UNLIMITED"."""
    if seconds is None or seconds >= TIME_INFINITE:
        return "UNLIMITED"
    if seconds < 0:
        raise ValueError(f"negative duration {seconds}")
    minutes, sec = divmod(int(seconds), 60)
    hours, mi = divmod(minutes, 60)
    days, h = divmod(hours, 24)
    clock = f"{h:02d}:{mi:02d}:{sec:02d}"
    return f"{days}-{clock}" if days else clock


# --- memory --------------------------------------------------------------

_MEM_RE = re.compile(r"(\d+)(?:([KMGTkmgt])[Bb]?)?")
_MEM_SCALE = {"K": 0, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_mem(text: str) -> int:
    """MB for "4096", "512K" (rounded up), "4G", "2T", "16GB"."""
    m = _MEM_RE.fullmatch(text.strip())
    if not m:
        raise ValueError("not a memory size")
    number, unit = int(m.group(1)), (m.group(2) or "M").upper()
    if unit == "K":
        return math.ceil(number / 1024)
    return number * _MEM_SCALE[unit]


def format_mem(mb: int) -> str:
    """MB in the largest unit that divides it: 4096 -> "4G", 1000 -> "1000"."""
    if mb < 0:
        raise ValueError(f"negative memory size {mb}")
    value, unit = mb, ""
    for next_unit in ("G", "T"):
        if value == 0 or value % 1024:
            break
        value, unit = value // 1024, next_unit
    return f"{value}{unit}"


# --- --begin -------------------------------------------------------------

_CLOCK_WORDS = {"midnight": 0, "elevenses": 11, "noon": 12, "fika": 15, "teatime": 16}
_DELTA_UNITS = (
    ("seconds", 1), ("second", 1), ("minutes", 60), ("minute", 60),
    ("hours", 3600), ("hour", 3600), ("days", 86400), ("day", 86400),
    ("weeks", 604800), ("week", 604800),
)  # longest spelling first, so "minutes" is not read as "minute" + "s"
_TIME_RE = re.compile(r"(\d\d?):(\d\d)(?::(\d\d))?[ \t]*([ap]m)?", re.IGNORECASE)
_ISO_DATE_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d?)")
_US_DATE_RE = re.compile(r"(\d\d?)[./]?(\d\d?)[./]?(\d\d)?")
_DELTA_RE = re.compile(r"now[ \t]*(?:([+-])[ \t]*(\d+)[ \t]*([a-z]*))?", re.IGNORECASE)


class _Begin:
    """What the --begin words said so far: a date and/or a time of day."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self.date: tuple[int | None, int, int] | None = None  # (year or None, month, day)
        self.clock: tuple[int, int, int] | None = None

    def resolve(self) -> float:
        if self.date is None and self.clock is None:
            raise ValueError("no date or time given")
        now = self.now
        clock = self.clock or (0, 0, 0)
        if self.date is None:  # a time alone: today if still ahead, else tomorrow
            day = now if (clock[0], clock[1]) > (now.hour, now.minute) else now + timedelta(1)
            self.date = (day.year, day.month, day.day)
        year, month, mday = self.date
        if year is None:  # MM/DD alone: this year if still ahead, else next year
            ahead = (month, mday, clock[0], clock[1]) > (now.month, now.day, now.hour, now.minute)
            year = now.year if ahead else now.year + 1
        # timegm normalises out-of-range days (Feb 31 -> Mar 2/3), as mktime does
        return float(calendar.timegm((year, month, mday, *clock, 0, 0, 0)))


def parse_begin(text: str, now: float) -> float:
    """Epoch seconds (UTC) for a --begin value, relative to `now`.

    Accepts now[{+|-}N[seconds|minutes|hours|days|weeks]], HH:MM[:SS] [AM|PM],
    YYYY-MM-DD[THH:MM[:SS]], MMDD[YY], MM/DD[/YY], MM.DD[.YY], the words
    midnight, elevenses, noon, fika, teatime, today, tomorrow (combinable,
    e.g. "tomorrow 16:00"), and uts<epoch>.
    """
    s = text.strip()
    if s[:3].lower() == "uts":
        if not s[3:].isdigit() or int(s[3:]) < 1_000_000:
            raise ValueError("uts needs epoch seconds")
        return float(int(s[3:]))
    state = _Begin(datetime.fromtimestamp(math.floor(now), UTC))
    pos = 0
    while pos < len(s):
        if s[pos] in " \t-T":  # separators, as in 2024-01-20T12:00
            pos += 1
            continue
        pos = _begin_word(s, pos, state)
    return state.resolve()


def _begin_word(s: str, pos: int, state: _Begin) -> int:
    """Read one word of a --begin value at `pos`; return where it ends."""
    low = s.lower()
    now = state.now
    if low.startswith("today", pos):
        state.date = (now.year, now.month, now.day)
        return pos + 5
    if low.startswith("tomorrow", pos):
        day = now + timedelta(1)
        state.date = (day.year, day.month, day.day)
        return pos + 8
    for word, hour in _CLOCK_WORDS.items():
        if low.startswith(word, pos):
            state.clock = (hour, 0, 0)
            return pos + len(word)
    if low.startswith("now", pos):
        return _begin_now(s, pos, state)
    if not s[pos].isdigit():
        raise ValueError(f"unexpected {s[pos:]!r}")
    if ":" in s[pos + 1 : pos + 3]:
        return _begin_clock(s, pos, state)
    return _begin_date(s, pos, state)


def _begin_now(s: str, pos: int, state: _Begin) -> int:
    m = _DELTA_RE.match(s, pos)
    assert m is not None  # "now" itself always matches
    sign, count, unit = m.groups()
    delta = 0
    if sign:
        scale = 1
        if unit:
            scale = next((n for name, n in _DELTA_UNITS if unit.lower() == name), 0)
            if not scale:
                raise ValueError(f"unknown time unit {unit!r}")
        delta = int(count) * scale * (-1 if sign == "-" else 1)
    elif m.end() < len(s) and not s[m.end()].isspace():
        raise ValueError(f"unexpected {s[m.end():]!r} after now")
    later = state.now + timedelta(seconds=delta)
    state.date = (later.year, later.month, later.day)
    state.clock = (later.hour, later.minute, later.second)
    return m.end()


def _begin_clock(s: str, pos: int, state: _Begin) -> int:
    m = _TIME_RE.match(s, pos)
    if not m:
        raise ValueError(f"not a time of day: {s[pos:]!r}")
    hour, minute, sec = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if hour > 23 or minute > 59 or sec > 59:
        raise ValueError(f"not a time of day: {m.group(0)!r}")
    half = (m.group(4) or "").lower()
    if half == "pm" and hour != 12:
        hour += 12
    elif half == "am" and hour == 12:
        hour = 0
    if hour > 23 or (half and int(m.group(1)) > 12):
        raise ValueError(f"not a time of day: {m.group(0)!r}")
    state.clock = (hour, minute, sec)
    return m.end()


def _begin_date(s: str, pos: int, state: _Begin) -> int:
    year: int | None
    m = _ISO_DATE_RE.match(s, pos)
    if m:
        year, month, day = (int(g) for g in m.groups())
        end = m.end()
    else:
        m = _US_DATE_RE.match(s, pos)
        if not m:
            raise ValueError(f"not a date: {s[pos:]!r}")
        month, day = int(m.group(1)), int(m.group(2))
        year = 2000 + int(m.group(3)) if m.group(3) else None
        end = m.end()
    if not (1 <= month <= 12 and 1 <= day <= 31):
        raise ValueError(f"not a date: {s[pos:end]!r}")
    state.date = (year, month, day)
    return end
