"""Rich's output without importing Rich, where the text is certain.

Importing Rich's console and table costs about 50 ms of CPU, a tenth of a whole
`tide sim run` on SDSC-SP2. When the output goes to a file or a pipe (not a
terminal, nothing forcing one), Rich writes plain text: a string without markup
as it is, a simple table as box-drawing lines. `LazyConsole` and `print_table`
write that text themselves in those cases, and hand everything else (a
terminal, markup, tabs or control characters, a table wider than the console)
to Rich, loaded on first use. tests/sim/test_plain_console.py compares the two
byte for byte.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console

# Rich's markup needs "[", its emoji codes two ":"; a cell of these characters
# with at most one ":", no space at either end (wrapping trims it), renders as
# itself (cells are numbers, labels, policy names).
_PLAIN_CELL = re.compile(r"[A-Za-z0-9 ,.%()+\-_/:]*")


def _plain_cell(text: str) -> bool:
    plain = _PLAIN_CELL.fullmatch(text) is not None and text == text.strip()
    return plain and text.count(":") < 2


class ConsoleLike(Protocol):
    """What the twin's commands use of a Rich console."""

    @property
    def is_terminal(self) -> bool: ...

    def print(self, *objects: Any, **kwargs: Any) -> None: ...


def _stream(stderr: bool) -> IO[str]:
    return sys.stderr if stderr else sys.stdout  # looked up at each print, as Rich does


def plain_stream(stream: IO[str]) -> bool:
    """True where Rich would write plain text to `stream`: not a terminal and no
    variable forcing one (FORCE_COLOR, TTY_COMPATIBLE), UTF-8 (else Rich draws
    boxes in ASCII), not Windows (legacy console)."""
    if os.name == "nt" or "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return False
    if not (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf"):
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return False  # Rich decides


class LazyConsole:
    """A Rich Console(**options) made on first need; plain strings printed
    directly where Rich would print them unchanged."""

    def __init__(self, stderr: bool = False, **options: Any) -> None:
        self._stderr = stderr
        self._options = options
        self._rich: Console | None = None

    @property
    def rich(self) -> Console:
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(stderr=self._stderr, **self._options)
        return self._rich

    @property
    def is_terminal(self) -> bool:
        if self._rich is None and plain_stream(_stream(self._stderr)):
            return False
        return self.rich.is_terminal

    def print(self, *objects: Any, **kwargs: Any) -> None:
        stream = _stream(self._stderr)
        if len(objects) == 1 and self._plain(objects[0], kwargs) and plain_stream(stream):
            stream.write(objects[0] + "\n")
            stream.flush()
            return
        self.rich.print(*objects, **kwargs)

    def _plain(self, text: Any, kwargs: dict[str, Any]) -> bool:
        """A string Rich prints as it is: no markup, emoji code or highlighting,
        no character it would expand or strip, and no wrapping."""
        if type(text) is not str or not text.isprintable() or "[" in text:
            return False
        opts = self._options | kwargs
        if set(kwargs) - {"highlight", "soft_wrap"}:
            return False
        emoji = ":" not in text or opts.get("emoji", True) is False
        return emoji and opts.get("highlight", True) is False and opts.get("soft_wrap") is True


def as_rich(console: ConsoleLike) -> Console:
    """The Rich console behind `console` (for Rich's own widgets: progress bars)."""
    return console.rich if isinstance(console, LazyConsole) else console  # type: ignore[return-value]


@dataclass
class SimpleTable:
    """A Rich Table(title=...) of single-line string cells: the first column
    left-justified, the others right-justified."""

    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def rich(self) -> Any:
        from rich.table import Table

        table = Table(title=self.title)
        for i, header in enumerate(self.headers):
            table.add_column(header, justify="left" if i == 0 else "right")
        for row in self.rows:
            table.add_row(*row)
        return table


def print_table(table: SimpleTable) -> None:
    """Console().print(table.rich()) on stdout, without Rich where the text is certain."""
    lines = _plain_table(table) if plain_stream(sys.stdout) else None
    if lines is None:
        from rich.console import Console

        Console().print(table.rich())
        return
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()


def console_width() -> int:
    """Rich's console width where stdout is not a terminal: COLUMNS, else the
    first of stdin, stdout, stderr that is a terminal, else 80."""
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        return width or 80
    return 80


def _plain_table(table: SimpleTable) -> list[str] | None:
    """The lines Rich draws (box HEAVY_HEAD, padding 1, title centred above), or
    None where Rich would do more (odd characters, wrapping)."""
    cells = [table.headers, *table.rows]
    ncol = len(table.headers)
    if ncol == 0 or any(len(r) != ncol for r in cells):
        return None
    if not (_plain_cell(table.title) and all(_plain_cell(c) for r in cells for c in r)):
        return None
    widths = [max(len(r[i]) for r in cells) for i in range(ncol)]
    total = sum(widths) + 3 * ncol + 1
    if total > console_width() or len(table.title) > total or min(widths) == 0:
        return None

    def row(r: list[str], edge: str, sep: str) -> str:
        rest = zip(r[1:], widths[1:], strict=True)
        parts = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in rest]
        return edge + sep.join(f" {p} " for p in parts) + edge

    def rule(left: str, fill: str, cross: str, right: str) -> str:
        return left + cross.join(fill * (w + 2) for w in widths) + right

    excess = total - len(table.title)
    title = " " * (excess // 2) + table.title + " " * (excess - excess // 2)
    return [
        title,
        rule("┏", "━", "┳", "┓"),
        row(table.headers, "┃", "┃"),
        rule("┡", "━", "╇", "┩"),
        *(row(r, "│", "│") for r in table.rows),
        rule("└", "─", "┴", "┘"),
    ]
