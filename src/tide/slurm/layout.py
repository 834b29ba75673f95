"""Slurm's output layouts: squeue/sinfo `-o "%.18i %9P"` formats, `-O Name:width`
field lists, and sacct's `--format Name%width` columns.

A layout is a list of pieces: literal text, or a column (a key into the row,
a width, right or left justified). squeue and sinfo pad and cut a value to its
width; sacct cuts with a trailing '+', as Slurm does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from tide.slurm.opts import UsageError


class Col(NamedTuple):  # not a dataclass: dataclasses imports inspect (startup time)
    key: str
    width: int | None = None  # None: the value as it is
    right: bool = False
    fit: bool = False  # `%#P`: as wide as the widest value (sinfo)
    cut: bool = True  # values wider than the column are cut (Slurm never cuts times)


Piece = Col | str


def percent(
    fmt: str, letters: Mapping[str, str], uncut: frozenset[str] = frozenset()
) -> list[Piece]:
    """A `%[.][width]letter` format; `letters` maps a letter to its key; values of
    the keys in `uncut` overflow their column instead of being cut (headers are cut)."""
    out: list[Piece] = []
    i, literal = 0, ""
    while i < len(fmt):
        ch = fmt[i]
        if ch != "%":
            literal += ch
            i += 1
            continue
        j = i + 1
        if j < len(fmt) and fmt[j] == "%":
            literal += "%"
            i = j + 1
            continue
        right = fit = False
        while j < len(fmt) and fmt[j] in ".#-":  # '-': left, the default (printf's habit)
            right |= fmt[j] == "."
            fit |= fmt[j] == "#"
            j += 1
        k = j
        while k < len(fmt) and fmt[k].isdigit():
            k += 1
        if k >= len(fmt):
            raise UsageError(f"invalid format {fmt!r}: '%' at the end")
        letter = fmt[k]
        if letter not in letters:
            raise UsageError(f"invalid format specification: %{letter}")
        if literal:
            out.append(literal)
            literal = ""
        width = int(fmt[j:k]) if k > j else None
        key = letters[letter]
        out.append(Col(key, width, right, fit, key not in uncut))
        i = k + 1
    if literal:
        out.append(literal)
    return out


def fields(spec: str, names: Mapping[str, str], default_width: int = 20) -> list[Piece]:
    """A `-O Name[:[.]width],...` list (case-insensitive names); each field is padded
    to its width (20 unless given), values left-justified unless '.'."""
    by_lower = {n.lower(): key for n, key in names.items()}
    out: list[Piece] = []
    for item in (x for x in spec.split(",") if x):
        name, _, size = item.partition(":")
        key = by_lower.get(name.strip().lower())
        if key is None:
            raise UsageError(f"Invalid job format specification: {name}")
        right = size.startswith(".")
        digits = size.lstrip(".")
        width = int(digits) if digits.isdigit() else default_width
        out.append(Col(key, width, right))
    return out


def render(
    pieces: list[Piece],
    rows: Sequence[Mapping[str, str]],
    headers: Mapping[str, str] | None,
) -> list[str]:
    """Lines of the layout (the header first when `headers` is given)."""
    widths = _fit_widths(pieces, rows, headers)
    lines = [] if headers is None else [_line(pieces, widths, headers.get, True)]
    lines += [_line(pieces, widths, r.get, False) for r in rows]
    return lines


def _fit_widths(
    pieces: list[Piece], rows: Sequence[Mapping[str, str]], headers: Mapping[str, str] | None
) -> dict[int, int]:
    out: dict[int, int] = {}
    for i, p in enumerate(pieces):
        if isinstance(p, Col) and p.fit:
            texts = [r.get(p.key, "") for r in rows]
            if headers is not None:
                texts.append(headers.get(p.key, ""))
            out[i] = max([p.width or 0, *map(len, texts)])
    return out


def _line(
    pieces: list[Piece], widths: dict[int, int], get: Callable[[str], str | None], head: bool
) -> str:
    parts = []
    for i, p in enumerate(pieces):
        if isinstance(p, str):
            parts.append(p)
            continue
        text = get(p.key) or ""
        width = widths.get(i, p.width)
        if width is not None:
            if head or p.cut:
                text = text[:width]
            text = text.rjust(width) if p.right else text.ljust(width)
        parts.append(text)
    return "".join(parts)


def sacct_columns(spec: str, widths: Mapping[str, int]) -> list[tuple[str, int]]:
    """`JobID,JobName%20,...` -> (canonical name, width); names are case-insensitive."""
    by_lower = {n.lower(): n for n in widths}
    out = []
    for item in (x for x in spec.split(",") if x):
        name, _, size = item.partition("%")
        canon = by_lower.get(name.strip().lower())
        if canon is None:
            raise UsageError(f"Invalid field requested: \"{name.strip()}\"")
        width = int(size) if size.lstrip("-").isdigit() else widths[canon]
        out.append((canon, abs(width)))
    return out


def sacct_lines(
    columns: list[tuple[str, int]],
    rows: Sequence[Mapping[str, str]],
    header: bool,
    sep: str | None,
    trailing: bool = False,
    left: tuple[str, ...] = ("JobID", "JobIDRaw"),
) -> list[str]:
    """sacct's table: the `left` fields left-justified, the others right; a value
    wider than its column is cut to width-1 and '+'. `sep` ('|'): parsable output."""
    if sep is not None:
        end = sep if trailing else ""
        lines = [sep.join(n for n, _ in columns) + end] if header else []
        lines += [sep.join(r.get(n, "") for n, _ in columns) + end for r in rows]
        return lines
    lines = []
    if header:
        lines.append(" ".join(_cell(n[:w], w, n in left) for n, w in columns) + " ")
        lines.append(" ".join("-" * w for _, w in columns) + " ")
    for r in rows:
        lines.append(" ".join(_cell(r.get(n, ""), w, n in left) for n, w in columns) + " ")
    return lines


def _cell(text: str, width: int, left: bool) -> str:
    if len(text) > width:
        text = text[: width - 1] + "+"
    return text.ljust(width) if left else text.rjust(width)
