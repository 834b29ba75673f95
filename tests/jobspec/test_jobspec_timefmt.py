"""Slurm durations, memory sizes and --begin times, with hand-computed answers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tide.defaults import TIME_INFINITE
from tide.jobspec.timefmt import (
    format_duration,
    format_mem,
    parse_begin,
    parse_duration,
    parse_job_time,
    parse_mem,
    parse_time_limit,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0),
        ("5", 300),  # minutes
        ("90", 5400),
        ("1:30", 90),  # minutes:seconds
        ("0:90", 90),  # fields are not bounded
        ("1:00:00", 3600),  # hours:minutes:seconds
        ("2:03:04", 2 * 3600 + 3 * 60 + 4),
        ("1-0", 86400),  # days-hours
        ("2-12", 2 * 86400 + 12 * 3600),
        ("1-2:30", 86400 + 2 * 3600 + 30 * 60),  # days-hours:minutes
        ("1-2:30:15", 86400 + 2 * 3600 + 30 * 60 + 15),  # days-hours:minutes:seconds
        (" 10 ", 600),
        ("UNLIMITED", None),
        ("infinite", None),
        ("-1", None),
    ],
)
def test_parse_duration(text: str, seconds: int | None) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text", ["", "abc", "1:2:3:4", "1-2-3", "1.5", "-5", "1-", "h1", ":30", "1-2:3:4:5", "1h"]
)
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a time"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", None),  # zero means no limit
        ("UNLIMITED", None),
        ("10", 600),
        ("1:30", 120),  # seconds round up to the next minute
        ("0:30", 60),
        ("0:0:59", 60),
        ("2-0", 2 * 86400),
    ],
)
def test_parse_time_limit_rounds_up_to_minutes(text: str, seconds: int | None) -> None:
    assert parse_time_limit(text) == seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", TIME_INFINITE), ("UNLIMITED", TIME_INFINITE), ("infinite", TIME_INFINITE),
     ("-1", TIME_INFINITE), ("0:30", 60), ("2-0", 2 * 86400)],
)  # fmt: skip
def test_a_job_time_of_zero_or_unlimited_is_no_limit(text: str, seconds: int) -> None:
    """sbatch: "A time limit of zero requests that no time limit be imposed", and
    UNLIMITED/INFINITE the same (Slurm's INFINITE), never the partition default."""
    assert parse_job_time(text) == seconds
    assert (format_duration(seconds) == "UNLIMITED") == (seconds == TIME_INFINITE)
    assert parse_job_time(format_duration(seconds)) == seconds


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "00:00:00"),
        (59, "00:00:59"),
        (3600, "01:00:00"),
        (86399, "23:59:59"),
        (86400, "1-00:00:00"),
        (86400 + 2 * 3600 + 3 * 60 + 4, "1-02:03:04"),
        (12 * 86400, "12-00:00:00"),
        (None, "UNLIMITED"),
    ],
)
def test_format_duration(seconds: int | None, text: str) -> None:
    assert format_duration(seconds) == text


@given(st.integers(min_value=0, max_value=10**9))
def test_format_then_parse_duration_is_identity(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(
    ("text", "mb"),
    [
        ("4096", 4096),  # MB by default
        ("0", 0),
        ("1K", 1),  # KB round up to whole MB
        ("1025K", 2),
        ("512M", 512),
        ("1Mb", 1),
        ("4G", 4096),
        ("4g", 4096),
        ("16GB", 16384),
        ("2T", 2 * 1024 * 1024),
    ],
)
def test_parse_mem(text: str, mb: int) -> None:
    assert parse_mem(text) == mb


@pytest.mark.parametrize("text", ["", "1.5G", "4X", "G", "-1", "4GiB", "4 G", "4P"])
def test_parse_mem_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a memory size"):
        parse_mem(text)


@pytest.mark.parametrize(
    ("mb", "text"),
    [(0, "0"), (1000, "1000"), (1024, "1G"), (1536, "1536"), (4096, "4G"),
     (1024 * 1024, "1T"), (2 * 1024 * 1024, "2T"), (1024**3, "1024T")],
)
def test_format_mem(mb: int, text: str) -> None:
    assert format_mem(mb) == text


@given(st.integers(min_value=0, max_value=2**40))
def test_format_then_parse_mem_is_identity(mb: int) -> None:
    assert parse_mem(format_mem(mb)) == mb


# --begin, against a fixed "now": Sunday 2024-03-10 14:30:15 UTC.
NOW = datetime(2024, 3, 10, 14, 30, 15, tzinfo=UTC).timestamp()


def _at(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", _at(2024, 3, 10, 14, 30, 15)),
        ("now+60", _at(2024, 3, 10, 14, 31, 15)),  # seconds by default
        ("now+10minutes", _at(2024, 3, 10, 14, 40, 15)),
        ("now+1hour", _at(2024, 3, 10, 15, 30, 15)),
        ("now+2days", _at(2024, 3, 12, 14, 30, 15)),
        ("now+1week", _at(2024, 3, 17, 14, 30, 15)),
        ("now + 5 seconds", _at(2024, 3, 10, 14, 30, 20)),
        ("NOW+1HOUR", _at(2024, 3, 10, 15, 30, 15)),
        ("now-1day", _at(2024, 3, 9, 14, 30, 15)),
        ("16:00", _at(2024, 3, 10, 16, 0)),  # later today
        ("14:31", _at(2024, 3, 10, 14, 31)),
        ("14:30", _at(2024, 3, 11, 14, 30)),  # this minute has begun: tomorrow
        ("09:15:30", _at(2024, 3, 11, 9, 15, 30)),
        ("4:00pm", _at(2024, 3, 10, 16, 0)),
        ("4:00 PM", _at(2024, 3, 10, 16, 0)),
        ("12:00am", _at(2024, 3, 11, 0, 0)),
        ("12:30pm", _at(2024, 3, 11, 12, 30)),
        ("midnight", _at(2024, 3, 11, 0, 0)),
        ("noon", _at(2024, 3, 11, 12, 0)),
        ("elevenses", _at(2024, 3, 11, 11, 0)),
        ("fika", _at(2024, 3, 10, 15, 0)),
        ("teatime", _at(2024, 3, 10, 16, 0)),
        ("today", _at(2024, 3, 10, 0, 0)),
        ("tomorrow", _at(2024, 3, 11, 0, 0)),
        ("tomorrow 09:00", _at(2024, 3, 11, 9, 0)),
        ("tomorrowT09:00", _at(2024, 3, 11, 9, 0)),
        ("today teatime", _at(2024, 3, 10, 16, 0)),
        ("2024-01-20T12:34:00", _at(2024, 1, 20, 12, 34)),
        ("2025-02-03", _at(2025, 2, 3, 0, 0)),
        ("2025-02-03T08:05", _at(2025, 2, 3, 8, 5)),
        ("0401", _at(2024, 4, 1, 0, 0)),  # MMDD still ahead this year
        ("0301", _at(2025, 3, 1, 0, 0)),  # MMDD already past: next year
        ("03/10", _at(2025, 3, 10, 0, 0)),  # today's midnight has passed
        ("12/25/24", _at(2024, 12, 25, 0, 0)),
        ("12.25.25", _at(2025, 12, 25, 0, 0)),
        ("12/25/24-10:00", _at(2024, 12, 25, 10, 0)),
        ("uts1700000000", 1700000000.0),
    ],
)
def test_parse_begin(text: str, expected: float) -> None:
    assert parse_begin(text, NOW) == expected


@pytest.mark.parametrize(
    "text",
    ["", "  ", "later", "25:00", "12:60", "13:00pm", "now+1fortnight", "now+", "13/01",
     "2024-13-01", "uts12", "now tomorrow", "1:5"],
)
def test_parse_begin_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_begin(text, NOW)


def test_parse_begin_reads_no_clock() -> None:
    """The same text against different `now`s gives answers relative to each."""
    assert parse_begin("now+1hour", 0.0) == 3600.0
    assert parse_begin("now+1hour", 1000.0) == 4600.0
