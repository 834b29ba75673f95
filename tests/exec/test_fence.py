"""Fencing (tide.exec.fence) with real processes: which job processes a node
holds, which of them no running job owns, and a node powered off."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tide.exec import fence

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[object]:
    started: list[subprocess.Popen[bytes]] = []

    def start(node: str, job: str, restart: str) -> subprocess.Popen[bytes]:
        env = {"PATH": os.environ["PATH"], "SLURMD_NODENAME": node, "SLURM_RESTART_COUNT": restart}
        env["TIDE_JOB_DIR"] = str(tmp_path / "jobs" / job)
        p = subprocess.Popen(["sleep", "300"], env=env)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()
        p.wait()


def _gone(p: subprocess.Popen[bytes]) -> bool:
    deadline = time.time() + 10
    while time.time() < deadline:
        if p.poll() is not None:
            return True
        time.sleep(0.05)
    return False


def test_a_node_keeps_only_the_processes_of_the_jobs_running_there(
    spawn: object, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs"
    current = spawn("n1", "7", "1")  # type: ignore[operator]
    old_run = spawn("n1", "7", "0")  # type: ignore[operator]
    ended_job = spawn("n1", "8", "0")  # type: ignore[operator]
    elsewhere = spawn("n2", "9", "0")  # type: ignore[operator]
    outsider = spawn("n1", "../x", "0")  # type: ignore[operator]  # not a job folder of ours
    placed = {p.pid: (p.job_id, p.restart) for p in fence.placed_on("n1", jobs)}
    assert placed == {current.pid: (7, 1), old_run.pid: (7, 0), ended_job.pid: (8, 0)}
    running = {7: 1}  # job 7's attempt 1 runs on n1; job 8 ended
    killed = fence.clean("n1", jobs, lambda job, node: running.get(job) if node == "n1" else None)
    assert sorted(killed) == sorted([old_run.pid, ended_job.pid])
    assert _gone(old_run) and _gone(ended_job)
    assert current.poll() is None and elsewhere.poll() is None and outsider.poll() is None


def test_power_off_kills_the_agent_and_every_job_process_on_the_node(
    spawn: object, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs"
    agent = subprocess.Popen(["sleep", "300"])
    try:
        a = spawn("n1", "7", "0")  # type: ignore[operator]
        b = spawn("n1", "8", "2")  # type: ignore[operator]
        other = spawn("n2", "9", "0")  # type: ignore[operator]
        killed = fence.power_off("n1", jobs, agent.pid)
        assert sorted(killed) == sorted([a.pid, b.pid])
        assert _gone(agent) and _gone(a) and _gone(b) and other.poll() is None
    finally:
        agent.kill()
        agent.wait()
