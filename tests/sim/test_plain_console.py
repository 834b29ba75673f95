"""tide.cli.plain_console writes what Rich writes, byte for byte, where it
writes without Rich; everything else goes to Rich."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console
from rich.markup import escape as rich_escape

from tide.cli.plain_console import LazyConsole, SimpleTable, _plain_table, print_table
from tide.cli.sim_steps import escape

LABELS = ["jobs completed", "mean bounded slowdown", "fairness (Jain)", "a", "p95 wait (s)"]
VALUES = ["-", "0", "53,999", "82.5%", "63,025,323", "0.086", "x:y", "1" * 40, "(a+b)/c"]
POLICIES = ["slurm", "tide", "k8s-default", "volcano", "kueue", "x"]


def _rich(table: SimpleTable, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width).print(table.rich())
    return out.getvalue()


def test_tables_drawn_as_rich_draws_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    drawn = 0
    for _ in range(1500):
        ncol = rng.randint(1, 6)
        headers = ["metric"] + [rng.choice(POLICIES) for _ in range(ncol - 1)]
        rows = [
            [rng.choice(LABELS)] + [rng.choice(VALUES) for _ in range(ncol - 1)]
            for _ in range(rng.randint(0, 13))
        ]
        title = rng.choice(["tide sim: side by side", "t", "ab", "a very long title of many words"])
        table = SimpleTable(title, headers, rows)
        width = rng.randint(20, 140)
        monkeypatch.setenv("COLUMNS", str(width))
        mine = _plain_table(table)
        if mine is None:  # Rich draws it (too wide, a title that wraps)
            continue
        drawn += 1
        assert "".join(line + "\n" for line in mine) == _rich(table, width)
    assert drawn > 300


def test_cells_rich_would_change_go_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    for odd in ("[bold]x[/bold]", ":smile: :x:", "a\tb", "é", "x "):
        assert _plain_table(SimpleTable("t", ["metric", odd], [["a", "1"]])) is None
    assert _plain_table(SimpleTable("t", ["metric", "slurm"], [["a", "1"]])) is not None


def test_print_table_to_a_pipe_equals_rich(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    table = SimpleTable("tide sim: side by side", ["metric", "slurm"], [["utilization", "82.5%"]])
    print_table(table)
    assert capsys.readouterr().out == _rich(table, 100)
    monkeypatch.setenv("COLUMNS", "20")  # narrower than the table: Rich wraps it
    print_table(table)
    assert capsys.readouterr().out == _rich(table, 20)


TEXTS = [
    "wrote out/sim/jobs.csv, metrics.json, report.html",
    "  dropped 35: requested time <= 0",
    "a:b:c",
    ":smile:",
    "path\\",
    "C:\\dir\\",
    "[red]error:[/red] x",
    "[not markup",
    "tab\there",
    "é ü 中文",
    "",
    "x" * 300,
]


@pytest.mark.parametrize("text", TEXTS)
def test_lazy_console_prints_what_rich_prints(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options = {"emoji": False, "highlight": False, "soft_wrap": True}
    lazy = LazyConsole(stderr=True, **options)
    lazy.print(text)
    got = capsys.readouterr().err
    want = io.StringIO()
    Console(file=want, **options).print(text)  # type: ignore[arg-type]
    assert got == want.getvalue()
    assert not lazy.is_terminal


def test_escape_is_rich_escape() -> None:
    for text in [*TEXTS, "a [b] c", "\\[x]", "end\\\\", "[/]"]:
        assert escape(text) == rich_escape(text)


def test_lazy_console_loads_rich_for_markup(capsys: pytest.CaptureFixture[str]) -> None:
    lazy = LazyConsole(stderr=True, highlight=False, soft_wrap=True)
    lazy.print(":smile: plain")  # emoji codes on: Rich replaces them
    assert lazy._rich is not None
    assert "\U0001f604" in capsys.readouterr().err
