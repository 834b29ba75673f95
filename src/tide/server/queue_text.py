"""`tide queue` rendered by the server from its in-memory queue.

A 100,000-job queue as JSON costs more to encode, send and decode than the
table it becomes; squeue-shaped text is built here in one pass over the
active-job mirror (tide.server.snapshot) and the CLI just prints it. The
columns are squeue's defaults plus GPUS; `start` gives squeue --start.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tide.display import STATE_CODE, duration, timestamp
from tide.server.snapshot import Entry

HEAD = ("JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES", "GPUS", "NODELIST(REASON)")
HEAD_START = (
    "JOBID",
    "PARTITION",
    "NAME",
    "USER",
    "ST",
    "START_TIME",
    "NODES",
    "SCHEDNODES",
    "NODELIST(REASON)",
)


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
    # squeue's default order: running first, then by priority (high first), then id
    rows.sort(key=lambda e: (e.meta.state == "PENDING", -e.meta.priority, e.job.id))
    cells = [_start_row(e) if start else _row(e, now) for e in rows]
    head = HEAD_START if start else HEAD
    cols = list(zip(*cells, strict=True)) if cells else [()] * len(head)
    widths = [max(len(h), max(map(len, c), default=0)) for h, c in zip(head, cols, strict=True)]
    right = {0, 5, 6, 7} if not start else {0, 6}
    fmt = (
        " ".join(("{:>%d}" if i in right else "{:<%d}") % w for i, w in enumerate(widths[:-1]))
        + " {}"
    )
    lines = [fmt.format(*head)]
    lines.extend(fmt.format(*r) for r in cells)
    return "\n".join(x.rstrip() for x in lines) + "\n"


def _jid(e: Entry) -> str:
    j = e.job
    if j.array_job_id is not None and j.array_task_id is not None:
        return f"{j.array_job_id}_{j.array_task_id}"
    return str(j.id)


def _row(e: Entry, now: float) -> tuple[str, ...]:
    if e.cells is not None and e.running is None:
        return e.cells  # a pending job's line changes only with its reason/priority
    j, m = e.job, e.meta
    req = j.request
    if e.running is not None:
        part = j.partition
        elapsed = duration(now - e.running.start)
        nodes = len(e.running.alloc.nodes)
        gpus = e.running.alloc.gpu_count
        where = m.nodelist
    else:
        part = ",".join(req.partitions)
        elapsed = "0:00"
        nodes = req.node_range()[0]
        gpus = req.total_gpus(nodes)
        where = f"({m.reason})"
    cells = (
        _jid(e),
        part,
        req.name[:8],
        j.user[:8],
        STATE_CODE.get(m.state, m.state),
        elapsed,
        str(nodes),
        str(gpus),
        where,
    )
    if e.running is None:
        e.cells = cells
    return cells


def _start_row(e: Entry) -> tuple[str, ...]:
    j, m = e.job, e.meta
    req = j.request
    when = timestamp(m.planned_start) if m.planned_start else "N/A"
    return (
        _jid(e),
        ",".join(req.partitions),
        req.name[:8],
        j.user[:8],
        "PD",
        when,
        str(req.node_range()[0]),
        m.planned_nodes or "(null)",
        f"({m.reason})",
    )
