"""The running jobs' release table, kept between backfill passes. Pure.

Plan.build turns every running job into release rows (per node, the times
its jobs end, sorted, and the amounts released by then, cumulative) once a
pass; between two passes only a few jobs start or end. `Releases` keeps the
table for a driver that keeps its `Running` views (the twin: it gives a job
a new view when its end moves, Snapshot.running_delta) and rewrites only the
rows of the nodes whose views came or went, found by identity (the table
holds each view it keys on, so no id it compares is reused while kept).
`kept_plan` copies the arrays into the pass's plan (a pass's own starts
change that), with the ends clamped to now and this cycle's starts added,
as Plan.build does.

Rows of equal time may sit in another order than Plan.build's, and the
table may be wider (rows only grow); every query reads the cumulative
amount at a node's last release at or before a time, or the time of its
first row with enough, which neither changes.
"""

from __future__ import annotations

import numpy as np

from tide.sched.index import ClusterIndex
from tide.sched.plan import INF, Plan, release_table
from tide.sched.state import Usage
from tide.sched.types import Allocation, Running

Row = tuple[float, int, int, int]  # end, GPUs, cores, memory


class Releases:
    """One cluster's table (n nodes), following the running lists it is given."""

    def __init__(self, n: int) -> None:
        self._n = n
        self._clear()

    def _clear(self) -> None:
        self._seen: dict[int, Running] = {}  # id -> the view (kept alive)
        self._rows: list[list[Row]] = [[] for _ in range(self._n)]
        self._arrays = release_table([], self._n, -INF)

    @property
    def n(self) -> int:
        return self._n

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Release times (nodes x releases, +inf padded; the ends as the views
        give them) and cumulative GPUs, cores and memory: read-only, copied
        by kept_plan."""
        return self._arrays

    def update(self, running: list[Running]) -> bool:
        """Follow `running`; False when it cannot be kept (a view listed
        twice), the table then emptied."""
        now_seen = dict(zip(map(id, running), running, strict=True))
        if len(now_seen) != len(running):
            self._clear()
            return False
        old = self._seen
        if now_seen.keys() == old.keys():
            return True
        dirty: set[int] = set()
        for key in old.keys() - now_seen.keys():
            r = old[key]
            for na in r.alloc.nodes:
                self._rows[na.node].remove((r.end, len(na.gpus), len(na.cores), na.mem))
                dirty.add(na.node)
        for key in now_seen.keys() - old.keys():
            r = now_seen[key]
            for na in r.alloc.nodes:
                self._rows[na.node].append((r.end, len(na.gpus), len(na.cores), na.mem))
                dirty.add(na.node)
        self._seen = now_seen
        self._rewrite(sorted(dirty))
        return True

    def _rewrite(self, nodes: list[int]) -> None:
        """The rows of `nodes` built again from their releases."""
        self._arrays = self.patched(nodes, [])

    def patched(
        self, nodes: list[int], extra: list[tuple[int, float, int, int, int]]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The arrays with the rows of `nodes` (sorted) built again from their
        releases and the `extra` rows (node, end, GPUs, cores, memory) on
        them: one release_table over those nodes alone, widened to the
        table's width, and the table widened (a copy) when a node needs more.
        The rows of `nodes` are written in place unless `extra` is given:
        then the arrays are copies."""
        rel = self._arrays
        if not nodes:
            return rel
        if extra:
            rel = tuple(a.copy() for a in rel)  # type: ignore[assignment]
        width = rel[0].shape[1]
        local = {node: k for k, node in enumerate(nodes)}
        rows = [(k, e, g, c, m) for k, node in enumerate(nodes) for e, g, c, m in self._rows[node]]
        rows += [(local[node], e, g, c, m) for node, e, g, c, m in extra]
        part = release_table(rows, len(nodes), -INF, width)
        if part[0].shape[1] > width:  # a node with more releases than any before
            grow = part[0].shape[1] - width
            rel = (
                np.hstack([rel[0], np.full((self._n, grow), INF)]),
                *(np.hstack([cum, np.repeat(cum[:, -1:], grow, axis=1)]) for cum in rel[1:]),
            )  # type: ignore[assignment]
        index = np.array(nodes)
        for whole, some in zip(rel, part, strict=True):
            whole[index] = some
        return rel


def kept_plan(
    ix: ClusterIndex,
    usage: Usage,
    table: Releases,
    started: list[tuple[Allocation, float]],
    now: float,
) -> Plan:
    """Plan.build from the release table kept between passes (following this
    pass's running views) and the jobs started this cycle: the table's arrays
    copied (a pass's starts change its plan), the rows of the started jobs'
    nodes built again with them, ends before now moved to now (rows stay
    sorted)."""
    extra = [
        (na.node, end, len(na.gpus), len(na.cores), na.mem)
        for alloc, end in started
        for na in alloc.nodes
    ]
    if extra:
        arrays = table.patched(sorted({row[0] for row in extra}), extra)
    else:
        arrays = tuple(a.copy() for a in table.arrays())  # type: ignore[assignment]
    rel_t, rel_g, rel_c, rel_m = arrays
    if rel_t.size and rel_t[:, 0].min() < now:  # a row's first release is its earliest
        np.maximum(rel_t, now, out=rel_t)
    times = np.unique(rel_t[np.isfinite(rel_t)])
    free = usage.free_gpus.copy(), usage.free_cores.copy(), usage.free_mem.copy()
    return Plan(ix, now, *free, rel_t, rel_g, rel_c, rel_m, times)
