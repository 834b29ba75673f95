"""`tide sim compare` runs policies in worker processes with the same outputs as
one after another, and never runs silent off a terminal (issue 15, item 1)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from tide.cli.sim_progress import watch_many

DEMO = Path(__file__).resolve().parents[2] / "src/tide/data/scenarios/demo.jsonl"


def _head(n: int, to: Path) -> Path:
    """The demo scenario's header and first n jobs: a replay of a few seconds."""
    lines = DEMO.read_text().splitlines()
    head = [ln for ln in lines if ln.startswith("#")]
    jobs = [ln for ln in lines if ln.startswith("{")][:n]
    to.write_text("\n".join(head + jobs) + "\n")
    return to


def _compare(workload: Path, out: Path, parallel: int) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "tide.cli.main", "sim", "compare", "--workload", str(workload)]
    cmd += ["--cluster", "demo", "--policies", "k8s-default,slurm,tide", "--out", str(out)]
    cmd += ["--parallel", str(parallel)]
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_parallel_compare_writes_what_one_after_another_writes(tmp_path: Path) -> None:
    workload = _head(60, tmp_path / "w.jsonl")
    one = _compare(workload, tmp_path / "one", 1)
    two = _compare(workload, tmp_path / "two", 2)
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    for name in ("comparison.json", "k8s-default/jobs.csv", "slurm/jobs.csv", "tide/jobs.csv"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    for run in (one, two):  # stderr is a pipe here: plain lines, one per finished policy
        done = [ln for ln in run.stderr.splitlines() if ": done in " in ln]
        if run is two:  # side by side: one line per finished policy
            assert sorted(ln.split(":")[0] for ln in done) == ["k8s-default", "slurm", "tide"]


def test_plain_progress_lines_name_each_running_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDE_PROGRESS_EVERY", "0")
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    with watch_many(console, ["a", "b"], 100) as report:
        report("a", 3600.0, 10, 20)
        report("a", 0.0, 0, -1)
        report("b", 7200.0, 30, 40)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("a: simulated 01:00:00, jobs done 10/100 (10%)")
    assert lines[1].startswith("a: done in ")
    assert lines[2].startswith("b: simulated 02:00:00, jobs done 30/100")
    assert all(not ln.startswith("a: simulated") for ln in lines[2:])
