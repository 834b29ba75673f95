"""Slurm's shared line syntax: comments, continuation, quotes, Include."""

from __future__ import annotations

from pathlib import Path

import pytest

from tide.config.conf_lines import parse_conf_text, read_conf
from tide.config.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A=1 B=2", [(1, [("A", "1"), ("B", "2")])]),
        ("# only a comment\n\nA=1  # trailing\n", [(3, [("A", "1")])]),
        ("NodeName=n1 \\\n  CPUs=4\nB=2", [(1, [("NodeName", "n1"), ("CPUs", "4")]),
                                          (3, [("B", "2")])]),
        ("P=bf_window=1,\\\nbf_continue", [(1, [("P", "bf_window=1,bf_continue")])]),
        ('Reason="disk # full" X=1', [(1, [("Reason", "disk # full"), ("X", "1")])]),
        ("Feature= Weight=2", [(1, [("Feature", ""), ("Weight", "2")])]),
        ("Key = Value", [(1, [("Key", "Value")])]),
        ("A=x\\#y", [(1, [("A", "x#y")])]),
    ],
)
def test_logical_lines(text: str, expected: list[tuple[int, list[tuple[str, str]]]]) -> None:
    lines = parse_conf_text(text, "t.conf")
    assert [(ln.loc.line, list(ln.pairs)) for ln in lines] == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A=1\nNodeName=n1 CPUs", "t.conf:2: 'CPUs' is not Key=Value"),
        ('A="open', "t.conf:1: unbalanced double quote"),
        ("Include", "t.conf:1: Include without a file name"),
        ("Include nope.conf", "t.conf:1: Include nope.conf: no such file"),
    ],
)
def test_syntax_errors(text: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        parse_conf_text(text, "t.conf", tmp_path)
    assert message in str(e.value)


def test_include_relative_and_glob(tmp_path: Path) -> None:
    (tmp_path / "nodes.d").mkdir()
    (tmp_path / "nodes.d" / "a.conf").write_text("NodeName=a1\n")
    (tmp_path / "nodes.d" / "b.conf").write_text("NodeName=b1\nBroken\n")
    (tmp_path / "parts.conf").write_text("PartitionName=p Nodes=ALL\n")
    main = tmp_path / "slurm.conf"
    main.write_text("ClusterName=c\ninclude nodes.d/a.conf\nInclude parts.conf\n")
    lines = read_conf(main)
    assert [(ln.loc.file, ln.loc.line, ln.head) for ln in lines] == [
        ("slurm.conf", 1, "clustername"), ("a.conf", 1, "nodename"),
        ("parts.conf", 1, "partitionname")]
    main.write_text("Include nodes.d/*.conf\n")
    with pytest.raises(ConfigError) as e:
        read_conf(main)
    assert str(e.value).startswith("b.conf:2: 'Broken' is not Key=Value")


def test_include_loop(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text("Include slurm.conf\n")
    with pytest.raises(ConfigError, match="nested deeper"):
        read_conf(tmp_path / "slurm.conf")
