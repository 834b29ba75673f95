"""`tide sim compare --patterns` end to end on the Azure trace (a short run),
and its option errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sim_traces import needs_traces, traces_dir


def tide(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "TIDE_TRACES": str(traces_dir("azure-llm-2023") or "")}
    return subprocess.run([sys.executable, "-m", "tide.cli.main", *args], capture_output=True,
                          text=True, timeout=900, cwd=cwd, env=env)  # fmt: skip


@pytest.mark.slow
@needs_traces
def test_patterns_compare_writes_the_report(tmp_path: Path):
    r = tide("sim", "compare", "--patterns", "split,tidal", "--scenario", "azure-day",
             "--days", "0.05", "--price", "15", "--investment", "tidal=180000",
             "--opex", "tidal=12000", "--out", str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "service objective met" in r.stdout and "Cost (seed 000" in r.stdout
    doc = json.loads((tmp_path / "out" / "patterns.json").read_text())
    assert set(doc["patterns"]) == {"split", "tidal"}
    tidal = doc["patterns"]["tidal"]
    assert tidal["service"]["requests"] > 100
    assert 0 <= tidal["service"]["slo_attainment"] <= 1
    assert tidal["cost"]["investment"] == 180000
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Who wins what, and why" in report and "| figure | split | tidal |" in report
    assert (tmp_path / "out" / "tidal" / "training.csv").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--patterns", "split,hybrid"], "unknown hybrid"),
        (["--patterns", "split", "--scenario", "demo"], "not a patterns scenario"),
        (["--patterns", "split,tidal", "--investment", "tidal"], "PATTERN=AMOUNT"),
        (["--patterns", "split", "--days", "90"], "days"),
        (["--patterns", "tidal", "--baseline", "split"], "--baseline"),
    ],
)
def test_pattern_options_fail_with_one_clear_line(tmp_path: Path, args, words):
    r = tide("sim", "compare", *args, "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert r.returncode == 1 and words in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
