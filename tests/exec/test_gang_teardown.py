"""Gang teardown in the local executor (docs/recovery.md): a failed task, a
killed batch shell or a lost node ends the whole job quickly even when the
other tasks ignore SIGTERM; `srun -K0` opts out."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from exec_support import Runner, make_executor, node, wait_for_files

from tide.exec import jobdir, procs

pytestmark = pytest.mark.slow

# Each task records its pid, then waits deaf to SIGTERM (stuck in a collective).
DEAF = """#!/bin/bash
srun {opts} bash -c 'trap "" TERM; echo $$ > {out}/pid.$SLURM_PROCID; sleep 300'
echo "srun=$?"
{after}
"""


def _deaf(runner: Runner, job_id: int, opts: str = "", after: str = "") -> dict[int, int]:
    out = runner.workdir / str(job_id)
    out.mkdir()
    script = DEAF.format(opts=opts, out=out, after=after)
    runner.launch(job_id, script, nodes=[node("n1"), node("n2")])
    files = [out / "pid.0", out / "pid.1"]
    wait_for_files(files)
    return {r: int(f.read_text()) for r, f in enumerate(files)}


def _slow_runner(tmp_path: Path) -> Runner:
    """KillWait 30 s, as in production: teardown must not wait for it."""
    work = tmp_path / "w"
    work.mkdir()
    return Runner(make_executor(tmp_path / "s", kill_wait=30.0, step_grace=2.0), work)


def test_a_killed_task_ends_the_job_with_its_cause(tmp_path: Path) -> None:
    runner = _slow_runner(tmp_path)
    pids = _deaf(runner, 901, after="sleep 300")  # the script would go on for 5 minutes
    os.kill(pids[1], signal.SIGKILL)
    t0 = time.monotonic()
    report = runner.wait(901, timeout=10)
    assert time.monotonic() - t0 <= 10 and not procs.is_alive(pids[0])
    assert (report.exit_code, report.signal, report.reason) == (0, 9, "")
    rec = runner.ex.exit_record(901)
    assert rec is not None and rec.message == "task 1 on n2 killed by SIGKILL"
    assert report.node == "n2"


def test_a_killed_batch_shell_ends_its_tasks_within_the_step_grace(tmp_path: Path) -> None:
    runner = _slow_runner(tmp_path)
    pids = _deaf(runner, 902)
    runtime = jobdir.read_json(runner.ex.job_dir(902) / jobdir.RUNTIME) or {}
    batch = int(runtime["batch_pid"])
    os.kill(batch, signal.SIGKILL)
    t0 = time.monotonic()
    report = runner.wait(902, timeout=10)
    assert time.monotonic() - t0 <= 10
    assert not any(procs.is_alive(p) for p in pids.values())
    assert report.signal == 9


def test_node_failed_kills_that_node_at_once_and_the_rest_after_the_grace(tmp_path: Path) -> None:
    runner = _slow_runner(tmp_path)
    pids = _deaf(runner, 903)
    runner.ex.node_failed(903, "n2", "node n2 failed: test")
    t0 = time.monotonic()
    report = runner.wait(903, timeout=10)
    assert time.monotonic() - t0 <= 10
    assert not any(procs.is_alive(p) for p in pids.values())
    assert report.reason == "node_fail"
    rec = runner.ex.exit_record(903)
    assert rec is not None and rec.message == "node n2 failed: test"


def test_kill_on_bad_exit_0_lets_the_job_go_on(tmp_path: Path) -> None:
    runner = _slow_runner(tmp_path)
    pids = _deaf(runner, 904, opts="-K0")
    os.kill(pids[1], signal.SIGKILL)
    time.sleep(2.5)  # longer than the step grace: nothing ends the job
    assert procs.is_alive(pids[0])
    runner.ex.cancel(904, grace=0)
    assert runner.wait(904).reason == "cancelled"
