"""`tide queue`'s table: its columns, order, alignment and cells, in one place.

squeue's default columns plus GPUS (`start`: squeue --start's). The server
renders it from its in-memory queue (tide.server.queue_text) and the CLI
prints the text; this module owns the layout and is below both, so neither
imports the other. Cells are plain values, so any source of jobs can fill
them; the layout is one str.format per line, fast on 100,000 jobs.
"""

from __future__ import annotations

from collections.abc import Sequence

from tide.display import STATE_CODE, duration, timestamp

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
RIGHT = frozenset({0, 5, 6, 7})  # JOBID, TIME, NODES, GPUS
RIGHT_START = frozenset({0, 6})  # JOBID, NODES


def order(pending: bool, priority: float, job_id: int) -> tuple[bool, float, int]:
    """squeue's default order: live jobs first, then priority (high first), then id."""
    return (pending, -priority, job_id)


def job_id_text(job_id: int, array_job_id: int | None, array_task_id: int | None) -> str:
    """A job's id as squeue prints it: "12", or "12_3" for task 3 of array 12."""
    if array_job_id is not None and array_task_id is not None:
        return f"{array_job_id}_{array_task_id}"
    return str(job_id)


def row(
    jid: str, partition: str, name: str, user: str, state: str, elapsed: float,
    nodes: int, gpus: int, where: str,
) -> tuple[str, ...]:  # fmt: skip
    """One line of the default view; `where` is the nodelist, or "(Reason)"."""
    return (
        jid,
        partition,
        name[:8],
        user[:8],
        STATE_CODE.get(state, state),
        duration(elapsed),
        str(nodes),
        str(gpus),
        where,
    )


def start_row(
    jid: str, partition: str, name: str, user: str, planned_start: float | None,
    nodes: int, planned_nodes: str, reason: str,
) -> tuple[str, ...]:  # fmt: skip
    """One line of the --start view (pending jobs only)."""
    return (
        jid,
        partition,
        name[:8],
        user[:8],
        "PD",
        timestamp(planned_start) if planned_start else "N/A",
        str(nodes),
        planned_nodes or "(null)",
        f"({reason})",
    )


def lay_out(cells: Sequence[Sequence[str]], start: bool = False) -> str:
    """The table as text: every column as wide as its widest cell, the last one
    unpadded, trailing blanks cut, one line per row under the header."""
    head = HEAD_START if start else HEAD
    right = RIGHT_START if start else RIGHT
    cols = list(zip(*cells, strict=True)) if cells else [()] * len(head)
    widths = [max(len(h), max(map(len, c), default=0)) for h, c in zip(head, cols, strict=True)]
    fmt = (
        " ".join(("{:>%d}" if i in right else "{:<%d}") % w for i, w in enumerate(widths[:-1]))
        + " {}"
    )
    lines = [fmt.format(*head)]
    lines.extend(fmt.format(*r) for r in cells)
    return "\n".join(x.rstrip() for x in lines) + "\n"
