"""Config and input errors from the command line are one line naming file:line and
the fix, with no traceback unless asked (--debug), and Rich leaves them as written
(no `:M:` emoji, no `[..]` eaten as markup) (issue 15, item 4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BAD_TIME = "NodeName=n[1-2] CPUs=4 Gres=gpu:2\nPartitionName=p Nodes=n[1-2] MaxTime=abc\n"


def tide(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80", "TIDE_DEBUG": ""}
    cmd = [sys.executable, "-m", "tide.cli.main", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("command", [["cluster", "show"], ["sim", "run", "--slurm-conf"]])
def test_bad_slurm_conf_is_one_line_with_its_place(tmp_path: Path, command: list[str]) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(BAD_TIME)
    (tmp_path / "gres.conf").write_text("NodeName=n[1-2] Name=gpu File=/dev/nvidia[0-1]\n")
    out = ["--scenario", "demo", "--out", str(tmp_path / "o")] if command[0] == "sim" else []
    done = tide(*command, str(conf), *out)
    line = one_line(done)
    assert done.returncode == 1
    assert "slurm.conf:2:" in line and "MaxTime" in line
    assert "H:M:S, D-H:M:S" in line  # not HⓂS


def test_server_with_a_bad_slurm_conf_or_a_missing_cluster_file(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(BAD_TIME)
    data = ["--data-dir", str(tmp_path / "data"), "--port", "1"]  # never bound: fails first
    line = one_line(done := tide("server", "--slurm-conf", str(conf), *data))
    assert done.returncode == 2 and "slurm.conf:2:" in line and "MaxTime" in line
    line = one_line(done := tide("server", "--cluster", "nope.yaml", *data))
    assert done.returncode == 2 and "nope.yaml: no such file" in line
    debug = tide("server", "--cluster", "nope.yaml", "--debug", *data)
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_swf_without_maxprocs_takes_the_machine_size_from_the_command_line(
    tmp_path: Path,
) -> None:
    swf = tmp_path / "nomax.swf"
    rows = ["1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1", "2 10 0 50 2 -1 -1 2 100 -1 1 2 1"]
    swf.write_text("; Version: 2.2\n" + "\n".join(rows) + " -1 1 -1 -1 -1\n")
    line = one_line(done := tide("sim", "run", "-w", str(swf), "--out", str(tmp_path / "a")))
    assert done.returncode == 1 and "--max-procs" in line and "read_swf" not in line
    done = tide("sim", "run", "-w", str(swf), "--max-procs", "4", "--out", str(tmp_path / "b"))
    assert done.returncode == 0, done.stderr
    jobs = (tmp_path / "b" / "jobs.csv").read_text().splitlines()
    assert len(jobs) == 3  # header + both jobs, on a flat machine of 4


def test_an_swf_whose_jobs_are_all_dropped_says_so(tmp_path: Path) -> None:
    swf = tmp_path / "big.swf"
    swf.write_text("; MaxProcs: 4\n1 0 0 100 8 -1 -1 8 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    done = tide("sim", "run", "-w", str(swf), "--out", str(tmp_path / "o"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "1 records, 0 jobs kept" in done.stderr
    assert "dropped 1: allocated procs > MaxProcs" in done.stderr
    assert "no job left to replay" in done.stderr and "--max-procs" in done.stderr
    assert not (tmp_path / "o" / "jobs.csv").exists()
