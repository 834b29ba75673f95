"""Slurm value formats: times, TRES lists, YES/NO, numbers."""

from __future__ import annotations

import pytest

from tide.config.durations import format_duration, parse_duration
from tide.config.errors import ConfigError
from tide.config.values import Loc, format_time, parse_time, to_bool, to_int, to_tres, to_weights

LOC = Loc("slurm.conf", 7)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("60", 3600),  # minutes
        ("1:30", 90),  # M:S
        ("01:00:00", 3600),  # H:M:S
        ("00:10:00", 600),
        ("7-0", 7 * 86400),  # D-H
        ("2-12", 2 * 86400 + 12 * 3600),
        ("1-02:30", 86400 + 2 * 3600 + 30 * 60),  # D-H:M
        ("1-00:00:30", 86430),  # D-H:M:S
        ("UNLIMITED", None),
        ("infinite", None),
        ("-1", None),
        ("0", 0),
    ],
)
def test_parse_time(text: str, seconds: int | None) -> None:
    assert parse_time(text) == seconds


@pytest.mark.parametrize("bad", ["1h", "abc", "1-2-3", "", "1:2:3:4"])
def test_parse_time_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_time(bad)


@pytest.mark.parametrize(
    ("seconds", "text"), [(None, "UNLIMITED"), (59, "00:00:59"), (3600, "01:00:00"),
                          (90061, "1-01:01:01")],
)
def test_format_time(seconds: int | None, text: str) -> None:
    assert format_time(seconds) == text
    assert parse_time(text) == seconds


def test_tres_units_and_case() -> None:
    assert to_tres("GrpTRES", "CPU=64,mem=2G,GRES/gpu=8,node=-1", LOC) == {
        "cpu": 64, "mem": 2048, "gres/gpu": 8}
    assert to_weights("PriorityWeightTRES", "CPU=1000,GRES/gpu=3000", LOC) == {
        "cpu": 1000.0, "gres/gpu": 3000.0}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: to_int("CPUs", "abc", LOC, minimum=1),
         "slurm.conf:7: CPUs='abc' is not a number; write an integer of at least 1 such as "
         "CPUs=64"),
        (lambda: to_int("Weight", "-3", LOC), "slurm.conf:7: Weight='-3' is below 0"),
        (lambda: to_bool("Default", "maybe", LOC), "Default='maybe' is not YES or NO"),
        (lambda: to_tres("GrpTRES", "gpu", LOC), "GrpTRES item 'gpu' is not NAME=VALUE"),
    ],
)
def test_value_errors(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as e:
        call()
    assert message in str(e.value)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("90s", 90), ("30m", 1800), ("12h", 43200), ("7d", 604800), ("1d12h", 129600),
     ("2-00:00:00", 172800), ("01:30:00", 5400), ("UNLIMITED", None), (None, None), ("0s", 0)],
)
def test_yaml_durations(value: object, seconds: int | None) -> None:
    assert parse_duration(value) == seconds
    if seconds is not None:
        assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize("bad", [60, "60", 1.5, "soon", True])
def test_yaml_duration_needs_unit(bad: object) -> None:
    with pytest.raises(ValueError, match="write"):
        parse_duration(bad)
