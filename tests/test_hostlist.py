"""Hostlists behave like Slurm's: expand, compress, round-trip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tide.hostlist import (
    HostlistError,
    compress,
    expand,
    index_ranges,
    parse_index_ranges,
)


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("gpu[001-004,010],cpu[1-3]",
         ["gpu001", "gpu002", "gpu003", "gpu004", "gpu010", "cpu1", "cpu2", "cpu3"]),
        ("node1", ["node1"]),
        ("n[8-11]", ["n8", "n9", "n10", "n11"]),
        ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
        ("a,b", ["a", "b"]),
    ],
)
def test_expand(expr: str, names: list[str]) -> None:
    assert expand(expr) == names


@pytest.mark.parametrize(
    ("names", "expr"),
    [
        (["gpu001", "gpu002", "gpu003", "gpu004", "gpu010"], "gpu[001-004,010]"),
        (["gpu098", "gpu099", "gpu100", "gpu101"], "gpu[098-101]"),
        (["n1", "n2", "n10"], "n[1-2,10]"),
        (["x"], "x"),
    ],
)
def test_compress(names: list[str], expr: str) -> None:
    assert compress(names) == expr


@pytest.mark.parametrize("bad", ["gpu[1-", "gpu1]", "gpu[3-1]", "gpu[a-b]", "gpu[]"])
def test_malformed_hostlists_raise(bad: str) -> None:
    with pytest.raises(HostlistError):
        expand(bad)


names_st = st.lists(
    st.builds(
        lambda p, n, w: f"{p}{str(n).zfill(w)}",
        st.sampled_from(["gpu", "cpu", "node-", "r1n"]),
        st.integers(0, 300),
        st.sampled_from([0, 3]),
    ),
    min_size=1,
    max_size=40,
)


@given(names_st)
def test_compress_expand_round_trip(names: list[str]) -> None:
    assert sorted(expand(compress(names))) == sorted(set(names))


@given(st.lists(st.integers(0, 64), max_size=30))
def test_index_ranges_round_trip(idx: list[int]) -> None:
    assert parse_index_ranges(index_ranges(idx)) == sorted(set(idx))
