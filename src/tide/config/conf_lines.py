"""Slurm's shared config-file syntax (slurm.conf, gres.conf, topology.conf).

Logical lines of `Key=Value` words: `#` starts a comment (`\\#` is a literal
#), a trailing backslash joins the next line, values may be double-quoted,
keys are case-insensitive, and `Include FILE` reads another file in place
(a relative FILE is relative to the including file's folder; glob patterns
are expanded in sorted order). See slurm.conf(5), "Include".
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path

from tide.config.values import Loc

MAX_INCLUDE_DEPTH = 8


@dataclass(frozen=True, slots=True)
class ConfLine:
    """One logical line: its location and its (Key, Value) words in order."""

    loc: Loc
    pairs: tuple[tuple[str, str], ...]

    @property
    def head(self) -> str:
        """The first key, lower-cased: 'nodename', 'partitionname', ..."""
        return self.pairs[0][0].lower()

    @property
    def head_value(self) -> str:
        return self.pairs[0][1]


def read_conf(path: Path) -> list[ConfLine]:
    """All logical lines of `path` and the files it includes."""
    return list(_read(path, 0))


def parse_conf_text(text: str, file: str, base: Path | None = None) -> list[ConfLine]:
    """Same as read_conf, for text already in memory (tests, stdin)."""
    return list(_parse(text, file, base or Path.cwd(), 0))


def _read(path: Path, depth: int) -> list[ConfLine]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise Loc(path.name).error(
            f"cannot read {path}: {e.strerror or e}", "check the path and its permissions"
        ) from None
    return list(_parse(text, path.name, path.parent, depth))


def _parse(text: str, file: str, base: Path, depth: int) -> list[ConfLine]:
    out: list[ConfLine] = []
    for lineno, logical in _logical_lines(text):
        loc = Loc(file, lineno)
        first = logical.split(None, 1)
        if first and first[0].lower() == "include":
            out.extend(_include(first[1] if len(first) > 1 else "", loc, base, depth))
            continue
        out.append(ConfLine(loc, tuple(_words(logical, loc))))
    return out


def _include(arg: str, loc: Loc, base: Path, depth: int) -> list[ConfLine]:
    target = arg.strip().strip('"')
    if not target:
        raise loc.error("Include without a file name",
                        "write Include FILE, e.g. Include nodes.conf")
    if depth >= MAX_INCLUDE_DEPTH:
        raise loc.error(f"Include nested deeper than {MAX_INCLUDE_DEPTH} files",
                        "check for a file that includes itself")
    pattern = target if os.path.isabs(target) else str(base / target)
    paths = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    if not paths or not all(Path(p).is_file() for p in paths):
        raise loc.error(f"Include {target}: no such file",
                        f"create it or give a path relative to {base}")
    out: list[ConfLine] = []
    for p in paths:
        out.extend(_read(Path(p), depth + 1))
    return out


def _strip_comment(line: str) -> str:
    out, i, quoted = [], 0, False
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line) and line[i + 1] == "#":
            out.append("#")
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == "#" and not quoted:
            break
        out.append(ch)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, joined text) for each non-empty logical line."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for n, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).rstrip()
        if not buf:
            start = n
        if line.endswith("\\"):  # joined with nothing in between, as Slurm does
            buf.append(line[:-1])
            continue
        buf.append(line)
        joined = "".join(buf).strip()
        buf = []
        if joined:
            out.append((start, joined))
    if buf and "".join(buf).strip():
        out.append((start, "".join(buf).strip()))
    return out


def _split_words(text: str) -> list[str]:
    """Split on whitespace outside double quotes; quotes are removed."""
    words: list[str] = []
    cur: list[str] = []
    quoted = any_char = False
    for ch in text:
        if ch == '"':
            quoted = not quoted
            any_char = True
        elif ch.isspace() and not quoted:
            if cur or any_char:
                words.append("".join(cur))
            cur, any_char = [], False
        else:
            cur.append(ch)
            any_char = True
    if cur or any_char:
        words.append("".join(cur))
    return words


def _words(text: str, loc: Loc) -> list[tuple[str, str]]:
    if text.count('"') % 2:
        raise loc.error("unbalanced double quote", 'close the quoted value, e.g. Reason="disk"')
    pairs = []
    words = _split_words(_glue_equals(text))
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise loc.error(
                f"{word!r} is not Key=Value",
                "write every setting as Key=Value with no spaces around '='",
            )
        pairs.append((key, value))
    return pairs


def _glue_equals(text: str) -> str:
    """'Key = Value' -> 'Key=Value' outside quotes (only with spaces on both sides,
    so 'Feature= Weight=2' keeps its empty Feature)."""
    parts = re.split(r'("[^"]*")', text)
    return "".join(p if p.startswith('"') else re.sub(r"(\S) +=  *(\S)", r"\1=\2", p)
                   for p in parts)
