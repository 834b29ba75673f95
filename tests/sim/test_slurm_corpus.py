"""The `slurm` policy against real Slurm 22.05 runs of the scenario corpus (issue 13 item 7).

tests/data/slurm_corpus/NAME/ holds each scenario of tools/slurm_peer/scenarios.py as the
real peer ran it (twice, to bound Slurm's own jitter): its configuration (conf/) and per run
what was submitted, sacct's records and slurmctld's log. The twin replays each run (submit
times and run times as recorded) and must start at least 95 % of the jobs within 2 s of
Slurm's start, on the same nodes. Slurm is not needed here: the runs are data.
docs/slurm-peer.md lists the figures; `tools/slurm_peer/corpus.py compare -v` prints the
job-by-job tables.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from slurm_peer import corpus  # noqa: E402
from slurm_peer.scenarios import SCENARIOS  # noqa: E402

GOAL = 0.95
# runs the twin does not yet reproduce, and why (docs/slurm-peer.md, "What still differs")
NOT_YET: dict[tuple[str, str], str] = {}

RUNS = [(name, run.name) for name in SCENARIOS for run in corpus.runs_of(name)]


def test_every_scenario_was_run_twice() -> None:
    assert len(SCENARIOS) >= 8
    for name in SCENARIOS:
        assert len(corpus.runs_of(name)) >= 2, name


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list]]:
    tmp = tmp_path_factory.mktemp("corpus")
    return {name: corpus.compare_scenario(name, tmp / name) for name in SCENARIOS}


@pytest.mark.parametrize(("name", "run"), RUNS)
def test_twin_starts_jobs_as_slurm_did(name: str, run: str, compared: dict) -> None:
    """At least 95 % of the jobs start within 2 s of a real run's start, on its nodes."""
    rows = compared[name][run]
    assert len(rows) == len(corpus.final_runs(corpus.load_run(corpus.CORPUS / name / run).incs))
    f = corpus.figures(rows)
    ok = f["within_2s"] >= GOAL and f["any_run"] >= GOAL
    if (name, run) in NOT_YET:
        if not ok:
            pytest.xfail(f"{NOT_YET[name, run]}: {f}")
        pytest.fail(f"{name} {run} now reaches the goal ({f}): take it out of NOT_YET")
    assert ok, f"{f}\n{corpus._table(rows)}"


def test_a_job_preemption_killed_is_replayed_with_its_scripts_run_time(tmp_path: Path) -> None:
    """Jobs 1 and 2 of preempt (sleep 40, --no-requeue) were killed after 4 and 7 s; the
    twin must see them run 40 s (plus the launch overhead) so that its own preemptor
    meets them, not a job that ends by itself before it arrives. Job 4 (sleep 20)
    completed: its recorded length stays."""
    import json

    run = corpus.load_run(corpus.CORPUS / "preempt" / "run1")
    corpus.write_jsonl(run, tmp_path / "w.jsonl")
    lines = (tmp_path / "w.jsonl").read_text().splitlines()
    dur = {o["id"]: o["duration"] for o in (json.loads(x) for x in lines if x.startswith("{"))}
    killed = [i for i in corpus.final_runs(run.incs).values() if i.state == "PREEMPTED"]
    assert sorted(i.raw_id for i in killed) == [1, 2]
    assert all(40.0 < dur[k] < 41.5 for k in (1, 2)), dur
    assert 20.0 < dur[4] < 21.5, dur
