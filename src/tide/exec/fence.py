"""Fencing: a node declared failed is powered off before its jobs are requeued.

A slow heartbeat is not a dead node: a node the controller gave up on may still
run its jobs' processes, and requeueing those jobs elsewhere would run them
twice at once. So the local executor fences a failed virtual node (STONITH,
"shoot the other node in the head"): its agent and every job process placed on
it get SIGKILL, and a job supervisor stopped along with the node too, before
the controller fails the node's jobs. A node that comes back (`tide node
resume`, a new agent) first loses every job process still placed on it that no
running job owns, so it takes work clean.

A process is placed on node N when its environment says SLURMD_NODENAME=N (the
batch shell on a job's first node, each srun task on its own node) and it
belongs to a job of this executor (TIDE_JOB_DIR is one of its job folders).
A job's own program can change its children's environment; what escapes that
way is still found by its supervisor (a subreaper that ends every descendant
before the job ends), and a job is only requeued after its end was recorded.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tide.exec import procs

NODE_VAR = "SLURMD_NODENAME"
JOB_DIR_VAR = "TIDE_JOB_DIR"
RESTART_VAR = "SLURM_RESTART_COUNT"


@dataclass(slots=True, frozen=True)
class Placed:
    """A job process and the node its environment places it on."""

    pid: int
    job_id: int
    restart: int | None  # the attempt it belongs to (SLURM_RESTART_COUNT)


def placed_on(node: str, jobs_dir: Path) -> list[Placed]:
    """Every live job process of `jobs_dir` placed on `node`."""
    prefix = str(jobs_dir) + "/"
    found = []
    for pid, info in procs.process_table().items():
        if info.zombie:
            continue
        env = procs.environ(pid, (NODE_VAR, JOB_DIR_VAR, RESTART_VAR))
        where, job_dir = env.get(NODE_VAR), env.get(JOB_DIR_VAR, "")
        name = job_dir[len(prefix) :]
        if where != node or not job_dir.startswith(prefix) or not name.isdigit():
            continue
        restart = env.get(RESTART_VAR, "")
        found.append(Placed(pid, int(name), int(restart) if restart.isdigit() else None))
    return found


def power_off(node: str, jobs_dir: Path, agent: int | None) -> list[int]:
    """Fence `node`: SIGKILL its agent and every job process placed on it.
    Returns the job processes killed."""
    if agent is not None:
        procs.kill_quietly(agent, signal.SIGKILL)
    pids = [p.pid for p in placed_on(node, jobs_dir)]
    procs.kill_all(pids, signal.SIGKILL)
    return pids


def strays(
    node: str, jobs_dir: Path, attempt_on: Callable[[int, str], int | None]
) -> list[Placed]:
    """Job processes placed on `node` that no running job owns there:
    `attempt_on(job_id, node)` is the attempt (restart count) of that job
    running on that node now, or None."""
    out = []
    for p in placed_on(node, jobs_dir):
        now = attempt_on(p.job_id, node)
        if now is None or (p.restart is not None and p.restart != now):
            out.append(p)
    return out


def clean(node: str, jobs_dir: Path, attempt_on: Callable[[int, str], int | None]) -> list[int]:
    """Kill the strays of `node` (SIGKILL); returns their pids."""
    pids = [p.pid for p in strays(node, jobs_dir, attempt_on)]
    procs.kill_all(pids, signal.SIGKILL)
    return pids
