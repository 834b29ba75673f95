"""A controller's history as a twin workload (issue 13 item 6), without a server:
the conversion of stored jobs, the JSONL fields it uses (request, array ids, end
state) and the engine's replay at the controller's pass times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tide.model import ArraySpec, Dependency, DependencyItem, DependencyType, JobRequest
from tide.sim.runner import WorkloadOptions, configure, load_inputs, run_policy
from tide.sim.workload.history import to_workload
from tide.sim.workload.jsonl import read_jsonl, write_jsonl
from tide.store.history import Attempt, HistoryJob

T0 = 1_800_000_000.0
CLUSTER = """\
name: two
nodes:
- names: n[1-2]
  cpus: 8
  real_memory: 64000
  gpus: {count: 8, type: a100}
partitions:
- {name: gpu, nodes: 'n[1-2]', default: true, max_time: 1h, default_time: 5m}
scheduler:
  bf_interval: 1s
  bf_resolution: 1s
"""


def _h(jid: int, submit: float, start: float | None, end: float | None, state: str = "COMPLETED",
       **kw: object) -> HistoryJob:  # fmt: skip
    req = kw.pop("request", JobRequest(gpus=8, time_limit=60))
    attempts = [Attempt(start, end, state, "n1")] if start is not None else []
    return HistoryJob(id=jid, name=f"j{jid}", user="alice", account="physics", qos="normal",
                      state=state, request=req, submit=T0 + submit,  # type: ignore[arg-type]
                      eligible=None if start is None else T0 + submit, start=None if start is None
                      else T0 + start, end=None if end is None else T0 + end, nodelist="n1",
                      exit_code=0, array=kw.pop("array", None),  # type: ignore[arg-type]
                      attempts=[Attempt(T0 + a.start, None if a.end is None else T0 + a.end,
                                        a.state, a.nodelist) for a in attempts])  # fmt: skip


def test_history_becomes_offsets_runs_and_end_states() -> None:
    dep = Dependency((DependencyItem(DependencyType.AFTEROK, ("1",)),))
    hist = [
        _h(1, 0.0, 0.5, 3.0, "FAILED"),
        _h(
            2,
            1.0,
            3.2,
            5.2,
            request=JobRequest(gpus=4, time_limit=60, dependency=dep, begin=T0 + 2.0),
        ),
        _h(3, 1.5, None, None, "CANCELLED"),
        _h(4, 2.0, 4.0, None, "RUNNING"),
        _h(5, 2.0, 2.5, 4.0, request=JobRequest(gpus=1, array=ArraySpec((0, 1), 1)), array=(5, 0)),
    ]
    out = to_workload(hist)
    assert out.origin == T0
    by = {j.id: j for j in out.jobs}
    assert sorted(by) == [1, 2, 5] and out.skipped == {"never started": 1, "still running": 1}
    assert (by[1].submit, by[1].duration, by[1].end_state) == (0.0, 2.5, "FAILED")
    assert (by[2].duration, by[2].end_state) == (2.0, "COMPLETED")
    assert by[2].request.begin == 2.0  # Unix time -> seconds from the first submission
    assert by[2].request.dependency == dep and by[2].account == "physics"
    assert by[5].array == (5, 0) and by[5].request.array == ArraySpec((0, 1), 1)
    # the passes: every start and first sight of a pending job, backfill unknown
    assert (0.5, None) in out.passes and (3.2, None) in out.passes
    logged = to_workload(hist, {T0 + 0.5: True, T0 + 3.2: False, T0 - 5: True}, {1: [T0 + 3.1]})
    assert logged.passes == [(0.5, True), (3.2, False)]
    # the controller took job 1's end in at 3.1: its GPUs were busy for the scheduler till then
    assert {j.id: j.duration for j in logged.jobs}[1] == pytest.approx(2.6)


def test_jsonl_round_trip_keeps_request_array_and_state(tmp_path: Path) -> None:
    dep = Dependency((DependencyItem(DependencyType.AFTERANY, ("7",)),))
    hist = [_h(7, 0.0, 0.0, 2.0, "FAILED"),
            _h(8, 0.0, 2.0, 3.0, request=JobRequest(gpus=2, time_limit=90, dependency=dep,
                                                    array=ArraySpec((0, 1, 2), 2)),
               array=(8, 1))]  # fmt: skip
    path = tmp_path / "h.jsonl"
    write_jsonl(to_workload(hist).jobs, path, {"epoch": str(T0)})
    lines = [json.loads(x) for x in path.read_text().splitlines() if not x.startswith("#")]
    assert lines[0]["state"] == "FAILED" and "request" in lines[0]
    assert (lines[1]["array_job_id"], lines[1]["array_task_id"]) == (8, 1)
    back = {j.id: j for j in read_jsonl(path)}
    assert back[7].end_state == "FAILED" and back[8].array == (8, 1)
    assert back[8].request.dependency == dep and back[8].request.time_limit == 90
    assert back[8].request.array == ArraySpec((0, 1, 2), 2)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"submit": 0, "duration": 1, "request": "gpus=1"}, "request"),
        ({"submit": 0, "duration": 1, "request": {"gpus": 1, "bogus": 2}}, "request"),
        ({"submit": 0, "duration": 1, "request": {"gpus": 1}, "gpus": 1}, "gpus"),
        ({"submit": 0, "duration": 1, "gpus": 1, "array_job_id": 3}, "array_task_id"),
        ({"submit": 0, "duration": 1, "gpus": 1, "state": "LOST"}, "state"),
    ],
)
def test_bad_lines_name_their_field(tmp_path: Path, line: dict[str, object], field: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(ValueError, match=f"field '{field}'"):
        list(read_jsonl(path))


def _replay(tmp_path: Path, header: str, lines: list[dict[str, object]]) -> dict[int, float]:
    (tmp_path / "c.yaml").write_text(CLUSTER)
    path = tmp_path / "w.jsonl"
    path.write_text(header + "".join(json.dumps(x) + "\n" for x in lines))
    inputs = load_inputs(str(path), None, str(tmp_path / "c.yaml"), WorkloadOptions())
    run = run_policy(inputs, "slurm", configure(inputs.config, None, None, None), [])
    return {r.job_id: r.start for r in run.results}


def test_replay_schedules_at_the_controllers_passes(tmp_path: Path) -> None:
    jobs = [{"id": 1, "submit": 0, "duration": 2.3, "gpus": 16, "time_limit": 60},
            {"id": 2, "submit": 0.1, "duration": 1, "gpus": 8, "time_limit": 60},
            {"id": 3, "submit": 0.2, "duration": 1, "gpus": 8, "time_limit": 60,
             "state": "FAILED"}]  # fmt: skip
    free = _replay(tmp_path, "", jobs)
    assert free == {1: 0.0, 2: 2.3, 3: 2.3}  # the twin on its own: at every event
    live = _replay(tmp_path, "# passes: 0.05:1,2.9:0,3.4:1\n", jobs)
    # job 1 waits for the first pass; 2 and 3 for the first pass after job 1's end
    assert live == {1: 0.05, 2: 2.9, 3: 2.9}
