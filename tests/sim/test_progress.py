"""Progress of a twin run: the engine's reports, the meter's rate and ETA, and
what `tide sim run` prints while it runs (docs/twin.md, "Progress")."""

from __future__ import annotations

import json
import time
from io import StringIO
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from tide.cli.main import app
from tide.cli.sim_progress import watch
from tide.model import JobRequest
from tide.model.sched_config import SchedulerConfig
from tide.sim.engine import Engine
from tide.sim.progress import ProgressMeter, clock_text, sim_time
from tide.sim.workload.base import SimJob
from tide.testing.builders import flat_cluster


def _jobs(n: int) -> list[SimJob]:
    req = JobRequest(name="j", nodes_min=1, nodes_max=1, gpus_per_node=1, time_limit=100)
    return [
        SimJob(id=k, submit=30.0 * k, duration=50.0, request=req, user="u") for k in range(1, n + 1)
    ]


def test_engine_reports_virtual_time_and_jobs_as_it_goes() -> None:
    reports: list[tuple[float, int, int]] = []
    cfg = SchedulerConfig(bf_interval=0)
    engine = Engine(flat_cluster(2, gpus=1), cfg, progress=lambda *r: reports.append(r))
    engine.run(_jobs(1200))
    assert len(reports) >= 3  # not only at the end
    times = [r[0] for r in reports]
    assert times == sorted(times) and times[0] < times[-1]
    assert [r[1] for r in reports] == sorted(r[1] for r in reports)
    assert reports[-1] == (max(times), 1200, 1200)
    assert any(0 < done < 1200 for _, done, _ in reports)


def test_meter_rate_and_eta() -> None:
    m = ProgressMeter(total=1000, started=100.0)
    m.update(102.0, 3600.0, 200, 300)
    assert m.rate() == 100.0  # 200 jobs in 2 s
    assert m.eta() == 8.0  # 800 left at 100 jobs/s
    m.update(104.0, 7200.0, 600, 700)
    assert m.rate() == 200.0  # (600 - 200) / (104 - 102): the recent rate
    line = m.line("slurm")
    assert "simulated 02:00:00" in line and "jobs done 600/1,000 (60%)" in line
    assert "200 jobs/s" in line and "ETA 2s" in line
    unknown = ProgressMeter(total=None, started=0.0)
    unknown.update(5.0, 10.0, 5, 5)
    assert unknown.eta() is None and "jobs done 5/?" in unknown.line("tide")


def test_time_formats() -> None:
    assert sim_time(90061) == "1-01:01:01"
    assert sim_time(59) == "00:00:59"
    assert (clock_text(7.4), clock_text(185), clock_text(3720)) == ("7s", "3m05s", "1h02m")


def test_log_lines_when_not_a_terminal(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TIDE_PROGRESS_EVERY", "0")
    out = StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    with watch(console, "slurm", 4) as report:
        report(60.0, 1, 2)
        report(120.0, 4, 4)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("slurm: simulated 00:01:00, jobs done 1/4 (25%)")
    assert lines[-1].startswith("slurm: simulated 00:02:00, jobs done 4/4 (100%)")


def test_cli_prints_progress_lines(tmp_path: Path) -> None:
    wl = tmp_path / "w.jsonl"
    wl.write_text("".join(
        json.dumps({"id": k, "submit": k, "duration": 30, "nodes": 1, "gpus_per_node": 8,
                    "time_limit": 60}) + "\n" for k in range(1, 41)))  # fmt: skip
    result = CliRunner().invoke(
        app, ["sim", "run", "--workload", str(wl), "--cluster", "demo", "--out", str(tmp_path)],
        env={"TIDE_PROGRESS_EVERY": "0", "COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "jobs done 40/40 (100%)" in result.output


def test_last_log_line_says_where_the_run_ended(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Reports between two due lines are not printed, but the closing line is
    the run's last report (it used to repeat the last printed one: 90%)."""
    monkeypatch.setenv("TIDE_PROGRESS_EVERY", "0.05")
    out = StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    with watch(console, "slurm", 4) as report:
        time.sleep(0.06)
        report(60.0, 1, 2)  # due: printed
        report(120.0, 4, 4)  # the end, right after: not due
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("slurm: simulated 00:01:00, jobs done 1/4 (25%)")
    assert lines[-1].startswith("slurm: simulated 00:02:00, jobs done 4/4 (100%)")
