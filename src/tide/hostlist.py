"""Slurm hostlists: `gpu[001-004,010],cpu[1-3]` <-> a list of names.

Expansion keeps order and duplicates like `scontrol show hostnames`;
compression groups names that share a prefix and suffix and have numeric
parts of equal width, like `scontrol show hostlist` (sorted, deduplicated).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache


class HostlistError(ValueError):
    pass


def _split_top(expr: str) -> list[str]:
    """Split on commas that are outside brackets."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in hostlist {expr!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise HostlistError(f"unbalanced '[' in hostlist {expr!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _expand_ranges(body: str, expr: str) -> list[str]:
    out: list[str] = []
    for piece in body.split(","):
        piece = piece.strip()
        if not piece:
            raise HostlistError(f"empty range in hostlist {expr!r}")
        if "-" in piece:
            lo, _, hi = piece.partition("-")
            if not (lo.isdigit() and hi.isdigit()):
                raise HostlistError(f"bad range {piece!r} in hostlist {expr!r}")
            if int(hi) < int(lo):
                raise HostlistError(f"descending range {piece!r} in hostlist {expr!r}")
            width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
            out.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
        else:
            if not piece.isdigit():
                raise HostlistError(f"bad number {piece!r} in hostlist {expr!r}")
            out.append(piece)
    return out


def _expand_one(word: str, expr: str) -> list[str]:
    m = re.search(r"\[([^\[\]]*)\]", word)
    if not m:
        if "[" in word or "]" in word:
            raise HostlistError(f"unbalanced brackets in hostlist {expr!r}")
        return [word]
    head, tail = word[: m.start()], word[m.end() :]
    out: list[str] = []
    for num in _expand_ranges(m.group(1), expr):
        out.extend(_expand_one(head + num + tail, expr))
    return out


def expand(expr: str) -> list[str]:
    """`gpu[01-03],cpu1` -> ['gpu01', 'gpu02', 'gpu03', 'cpu1']."""
    names: list[str] = []
    for word in _split_top(expr):
        names.extend(_expand_one(word, expr))
    return names


_NUM_RE = re.compile(r"^(.*?)(\d+)(\D*)$")


def compress(names: Iterable[str]) -> str:
    """['gpu01', 'gpu02', 'gpu04'] -> 'gpu[01-02,04]'."""
    by_affix: dict[tuple[str, str], list[str]] = {}
    plain: list[str] = []
    for name in set(names):
        parts = _split(name)
        if parts is None:
            plain.append(name)
            continue
        prefix, digits, suffix = parts
        by_affix.setdefault((prefix, suffix), []).append(digits)
    groups: dict[tuple[str, str, int], list[int]] = {}
    for (prefix, suffix), all_digits in by_affix.items():
        padded = {len(d) for d in all_digits if d.startswith("0") and len(d) > 1}
        for d in all_digits:
            width = len(d) if len(d) in padded else 0
            groups.setdefault((prefix, suffix, width), []).append(int(d))
    words = list(plain)
    for (prefix, suffix, width), nums in groups.items():
        words.append(_format_group(prefix, suffix, width, nums))
    return ",".join(sorted(words, key=_sort_key))


def _format_group(prefix: str, suffix: str, width: int, nums: list[int]) -> str:
    nums = sorted(set(nums))
    if len(nums) == 1:
        return f"{prefix}{str(nums[0]).zfill(width)}{suffix}"
    ranges: list[str] = []
    start = prev = nums[0]
    for n in [*nums[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        a, b = str(start).zfill(width), str(prev).zfill(width)
        ranges.append(a if start == prev else f"{a}-{b}")
        if n is not None:
            start = prev = n
    return f"{prefix}[{','.join(ranges)}]{suffix}"


@lru_cache(maxsize=65536)
def _split(name: str) -> tuple[str, str, str] | None:
    """(prefix, digits, suffix) of a name (cached: clusters reuse names)."""
    m = _NUM_RE.match(name)
    return None if m is None else (m.group(1), m.group(2), m.group(3))


@lru_cache(maxsize=65536)
def _sort_key(name: str) -> tuple[str, int, str]:
    m = _NUM_RE.match(name)
    if not m:
        return (name, -1, "")
    return (m.group(1), int(m.group(2)), m.group(3))


def index_ranges(indices: Iterable[int]) -> str:
    """[0, 1, 2, 3, 6] -> '0-3,6' (Slurm's IDX notation)."""
    nums = sorted(set(indices))
    if not nums:
        return ""
    out: list[str] = []
    start = prev = nums[0]
    for n in [*nums[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ",".join(out)


def parse_index_ranges(text: str) -> list[int]:
    """'0-3,6' -> [0, 1, 2, 3, 6]."""
    return [int(x) for x in _expand_ranges(text, text)] if text.strip() else []
