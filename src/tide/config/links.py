"""NVLink matrices and the named patterns tide's YAML accepts for them.

A pattern names which GPU pairs are linked: `pairs` (0-1, 2-3, ...),
`quads` (0-3, 4-7, ...), `socket` (GPUs on the same CPU socket) and `all`.
`nvlink: pairs` gives those pairs one link; `nvlink: {pairs: 2, quads: 1}`
gives each pair the largest count of any pattern that contains it; `none`
means PCIe only (all zeros); a list of rows is the matrix itself (Slurm's
Links= rows; -1 or 0 on the diagonal). tide stores 0 on the diagonal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations

PATTERNS: dict[str, Callable[[int, int, Sequence[int | None]], bool]] = {
    "pairs": lambda i, j, s: i // 2 == j // 2,
    "quads": lambda i, j, s: i // 4 == j // 4,
    "socket": lambda i, j, s: s[i] is not None and s[i] == s[j],
    "all": lambda i, j, s: True,
}

LinkSpec = str | dict[str, int] | list[list[int]]


def build_links(spec: LinkSpec, n: int, sockets: Sequence[int | None]) -> list[list[int]]:
    """Raises ValueError naming the problem and the fix."""
    if isinstance(spec, str):
        if spec == "none":
            return [[0] * n for _ in range(n)]
        return build_links({spec: 1}, n, sockets)
    if isinstance(spec, dict):
        for name, count in spec.items():
            if name not in PATTERNS:
                raise ValueError(f"unknown NVLink pattern {name!r}; use one of "
                                 f"{', '.join(PATTERNS)}, none, or a matrix")
            if not isinstance(count, int) or count < 0:
                raise ValueError(f"NVLink count for {name} must be a whole number >= 0")
        return [[0 if i == j else max((c for p, c in spec.items()
                                       if PATTERNS[p](i, j, sockets)), default=0)
                 for j in range(n)] for i in range(n)]
    return _matrix(spec, n)


def _matrix(rows: list[list[int]], n: int) -> list[list[int]]:
    if len(rows) != n or any(len(r) != n for r in rows):
        raise ValueError(f"the NVLink matrix must be {n}x{n} (one row and column per GPU)")
    out = []
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            if i != j and v < 0:
                raise ValueError(f"NVLink count [{i}][{j}] is {v}; counts are >= 0 off the "
                                 "diagonal")
        out.append([0 if i == j else int(v) for j, v in enumerate(row)])
    return out


def describe_links(matrix: list[list[int]], sockets: Sequence[int | None]) -> LinkSpec | None:
    """The shortest spec that builds `matrix` back (None for no matrix)."""
    if not matrix:
        return None
    n = len(matrix)
    if all(v == 0 for row in matrix for v in row):
        return "none"
    values = sorted({v for i, row in enumerate(matrix) for j, v in enumerate(row)
                     if i != j and v > 0}, reverse=True)
    for spec in _candidates(values):
        if build_links(spec, n, sockets) == matrix:
            (name, count), *rest = spec.items()
            return name if not rest and count == 1 else spec
    return [list(row) for row in matrix]


def _candidates(values: list[int]) -> list[dict[str, int]]:
    names = list(PATTERNS)
    out: list[dict[str, int]] = [{p: v} for p in names for v in values]
    for a, b in combinations(names, 2):  # narrower pattern first, with more links
        out.extend({a: hi, b: lo} for hi in values for lo in values if hi > lo)
    return out
