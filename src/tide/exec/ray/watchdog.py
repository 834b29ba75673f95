"""`python -m tide.exec.ray.watchdog STATE_DIR`: ends a dead agent's jobs.

A node agent starts this with a pipe on stdin and never writes to it. When
the agent's process ends for any reason (its Ray node died, the actor was
killed), the pipe closes and this process kills everything the agent started
on this machine: the supervisors and processes of its jobs (found by their
TIDE_JOB_DIR) and the srun tasks it ran for other nodes (found by the
TIDE_RAY_AGENT marker). tide has declared that node's jobs failed by then, and
a requeued job must not run twice.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from tide.exec import jobdir, procs
from tide.exec.ray.agent import MARKER


def sweep(state_dir: Path) -> int:
    """SIGKILL every process of the agent at `state_dir`; returns how many."""
    pids = set(procs.pids_with_env(MARKER, str(state_dir)))
    jobs = state_dir / "jobs"
    for d in jobs.iterdir() if jobs.is_dir() else ():
        pids.update(procs.pids_with_env(jobdir.ENV_JOB_DIR, str(d)))
    pids.discard(os.getpid())
    procs.kill_all(pids, signal.SIGKILL)
    return len(pids)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tide.exec.ray.watchdog STATE_DIR", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only the pipe ends us
    while sys.stdin.buffer.read(4096):
        pass
    sweep(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
