"""`tide queue` rendered by the server from its in-memory queue.

A 100,000-job queue as JSON costs more to encode, send and decode than the
table it becomes; squeue-shaped text is built here in one pass over the
active-job mirror (tide.server.snapshot) and the CLI just prints it. The
layout (squeue's columns plus GPUS; `start` gives squeue --start) is
tide.queue_table's; this module picks the jobs and fills the cells.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tide import queue_table as table
from tide.server.snapshot import Entry


@dataclass(slots=True, frozen=True)
class QueueFilter:
    ids: frozenset[int] = frozenset()
    states: frozenset[str] = frozenset()
    users: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()
    partitions: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()

    def keep(self, e: Entry) -> bool:
        j = e.job
        if self.ids and j.id not in self.ids and j.array_job_id not in self.ids:
            return False
        if self.states and e.meta.state not in self.states:
            return False
        if self.users and j.user not in self.users:
            return False
        if self.accounts and j.account not in self.accounts:
            return False
        if self.names and j.request.name not in self.names:
            return False
        if self.partitions:
            parts = {j.partition} if j.partition else set(j.request.partitions)
            if not parts & self.partitions:
                return False
        return True


def render(entries: Iterable[Entry], f: QueueFilter, now: float, start: bool = False) -> str:
    rows = [e for e in entries if f.keep(e)]
    if start:
        rows = [e for e in rows if e.meta.state == "PENDING"]
    rows.sort(key=lambda e: table.order(e.meta.state == "PENDING", e.meta.priority, e.job.id))
    cells = [_start_row(e) if start else _row(e, now) for e in rows]
    return table.lay_out(cells, start)


def _jid(e: Entry) -> str:
    return table.job_id_text(e.job.id, e.job.array_job_id, e.job.array_task_id)


def _row(e: Entry, now: float) -> tuple[str, ...]:
    if e.cells is not None and e.running is None:
        return e.cells  # a pending job's line changes only with its reason/priority
    j, m = e.job, e.meta
    req = j.request
    if e.running is not None:
        alloc = e.running.alloc
        cells = table.row(_jid(e), j.partition, req.name, j.user, m.state, now - e.running.start,
                          len(alloc.nodes), alloc.gpu_count, m.nodelist)  # fmt: skip
        return cells
    nodes = req.node_range()[0]
    cells = table.row(_jid(e), ",".join(req.partitions), req.name, j.user, m.state, 0.0,
                      nodes, req.total_gpus(nodes), f"({m.reason})")  # fmt: skip
    e.cells = cells
    return cells


def _start_row(e: Entry) -> tuple[str, ...]:
    j, m = e.job, e.meta
    req = j.request
    return table.start_row(_jid(e), ",".join(req.partitions), req.name, j.user, m.planned_start,
                           req.node_range()[0], m.planned_nodes, m.reason)  # fmt: skip
