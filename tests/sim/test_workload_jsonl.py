"""tide JSONL: structured fields, sbatch strings, errors with line and field,
and write/read round trips."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from tide.model import Dependency, JobRequest
from tide.sim.workload import SimJob, WorkloadError, generate, read_jsonl, write_jsonl
from tide.sim.workload.fields import memory_mb, slurm_time


def _write(tmp_path: Path, *lines: object) -> Path:
    p = tmp_path / "w.jsonl"
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return p


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (90, 90), (90.2, 91), ("30", 1800), ("30:15", 1815), ("1:00:00", 3600),
        ("2-0", 172800), ("1-02:03", 93780), ("1-02:03:04", 93784), ("UNLIMITED", None),
    ],
)  # fmt: skip
def test_slurm_time(value: object, seconds: int | None) -> None:
    assert slurm_time(value) == seconds


@pytest.mark.parametrize("value", ["1:2:3:4", "abc", -5, True, "1-", None])
def test_slurm_time_rejects(value: object) -> None:
    with pytest.raises(ValueError, match="Slurm time"):
        slurm_time(value)


def test_memory() -> None:
    assert [memory_mb(x) for x in (512, "16G", "2048M", "1T", "1024K")] == [512, 16384, 2048,
                                                                        1048576, 1]  # fmt: skip


def test_structured_fields(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "# a comment, then a blank line",
        "",
        {"submit": 0, "duration": 3600, "nodes": "2-4", "gpus_per_node": 8, "time_limit": "2:00:00",
         "partition": "gpu,debug", "account": "research", "qos": "high", "switches": "1@10:00",
         "constraint": "a100&ib", "mem": "64G", "user": "ana", "name": "llm",
         "checkpoint_interval": 1800, "checkpoint_cost": 30, "exclusive": True},
        {"id": 42, "submit": 5.5, "duration": 10, "gpus": 3, "time_limit": 60},
    )  # fmt: skip
    w = read_jsonl(p)
    a, b = w.jobs()
    assert (a.id, a.submit, a.duration, a.user, a.name, a.account) == (
        1, 0.0, 3600.0, "ana", "llm", "research")  # fmt: skip
    r = a.request
    assert (r.nodes_min, r.nodes_max, r.gpus_per_node, r.time_limit) == (2, 4, 8, 7200)
    assert r.partitions == ("gpu", "debug") and r.qos == "high"
    assert (r.switches, r.switches_wait) == (1, 600)
    assert r.mem_per_node == 65536 and r.exclusive and r.constraint == "a100&ib"
    assert (a.checkpoint_interval, a.checkpoint_cost) == (1800.0, 30.0)
    assert (b.id, b.request.gpus, b.request.time_limit, b.name) == (42, 3, 60, "job42")
    assert w.info.read == 2 and w.info.kept == 2


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ({"duration": 1}, r"w.jsonl:2: field 'submit': missing"),
        ({"submit": 0, "duration": 1, "gpu": 1}, r":2: field 'gpu': unknown field"),
        ({"submit": 0, "duration": 1, "time_limit": "1:2:3:4"}, r":2: field 'time_limit'"),
        ({"submit": 0, "duration": -1}, r":2: field 'duration'"),
        ({"submit": 0, "duration": 1, "nodes": "4-2"}, r":2: field 'nodes'"),
        ({"submit": 0, "duration": 1, "gpus_per_node": "8"}, r":2: field 'gpus_per_node'"),
        ({"submit": 0, "duration": 1, "sbatch": "-N 2", "nodes": 2}, r":2: field 'nodes'"),
        ('{"submit": 0, "duration": ', r"w.jsonl:2: not valid JSON"),
        ("[1, 2]", r"w.jsonl:2: a line must be a JSON object"),
        ({"submit": 0, "duration": 1}, None),
    ],
)
def test_errors_name_line_and_field(tmp_path: Path, line: object, match: str | None) -> None:
    p = _write(tmp_path, {"submit": 0, "duration": 1}, line)
    if match is None:
        assert len(read_jsonl(p).jobs()) == 2
        return
    with pytest.raises(WorkloadError, match=match):
        read_jsonl(p).jobs()


def test_ids_must_be_unique(tmp_path: Path) -> None:
    p = _write(tmp_path, {"id": 5, "submit": 0, "duration": 1}, {"submit": 1, "duration": 1},
               {"id": 2, "submit": 2, "duration": 1})  # fmt: skip
    with pytest.raises(WorkloadError, match=r":3: field 'id': 2 is already used on line 2"):
        read_jsonl(p).jobs()


def test_submit_must_not_decrease(tmp_path: Path) -> None:
    p = _write(tmp_path, {"submit": 10, "duration": 1}, {"submit": 5, "duration": 1})
    with pytest.raises(WorkloadError, match=r":2: field 'submit': 5 is earlier.*sort the file"):
        read_jsonl(p).jobs()


def test_sbatch_kept_raw_without_parser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tide.jobspec.sbatch", None)  # import fails
    p = _write(tmp_path, {"submit": 0, "duration": 5, "sbatch": "-N 2 --gpus-per-node=8"})
    (job,) = read_jsonl(p).jobs()
    assert job.original["sbatch"] == "-N 2 --gpus-per-node=8"
    assert job.request == JobRequest(name="job1")


def test_sbatch_parsed_when_parser_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def parse_args(argv: list[str], now: float = 0.0) -> JobRequest:
        seen.append(argv)
        assert now == 3.5  # relative options (--begin=now+...) count from the submit
        if "--bad" in argv:
            raise ValueError("--bad: unknown option")
        return JobRequest(nodes_min=2, nodes_max=2, gpus_per_node=8, account="prod")

    mod = types.ModuleType("tide.jobspec.sbatch")
    mod.parse_args = parse_args  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tide.jobspec.sbatch", mod)
    p = _write(tmp_path, {"submit": 3.5, "duration": 5, "name": "x",
                          "sbatch": "-N 2 --gpus-per-node=8 -J 'a b'"})  # fmt: skip
    (job,) = read_jsonl(p).jobs()
    assert seen == [["-N", "2", "--gpus-per-node=8", "-J", "a b"]]
    assert job.request.nodes_min == 2 and job.account == "prod" and job.request.name == "x"
    bad = _write(tmp_path, {"submit": 3.5, "duration": 5, "sbatch": "--bad"})
    with pytest.raises(WorkloadError, match=r":1: field 'sbatch': --bad: unknown option"):
        read_jsonl(bad).jobs()


def test_round_trip_generated(tmp_path: Path) -> None:
    _, jobs = generate("demo", 3)
    p = tmp_path / "demo.jsonl"
    assert write_jsonl(jobs, p) == len(jobs)
    back = read_jsonl(p).jobs()
    assert back == jobs
    first = p.read_bytes()
    write_jsonl(back, p)
    assert p.read_bytes() == first


def test_round_trip_sbatch_and_meta(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tide.jobspec.sbatch", None)
    src = _write(tmp_path, {"id": 7, "submit": 1.25, "duration": 2, "name": "n",
                            "sbatch": "-N 1", "meta": {"k": [1]}})  # fmt: skip
    jobs = read_jsonl(src).jobs()
    out = tmp_path / "out.jsonl"
    write_jsonl(jobs, out)
    assert json.loads(out.read_text()) == {"id": 7, "submit": 1.25, "duration": 2, "name": "n",
                                           "sbatch": "-N 1", "meta": {"k": [1]}}  # fmt: skip


def test_write_refuses_what_it_cannot_say(tmp_path: Path) -> None:
    job = SimJob(1, 0.0, 1.0, JobRequest(dependency=Dependency()))
    with pytest.raises(WorkloadError, match="cannot express dependency"):
        write_jsonl([job], tmp_path / "x.jsonl")


def test_sbatch_with_the_real_parser(tmp_path: Path) -> None:
    pytest.importorskip("tide.jobspec.sbatch", reason="tide.jobspec.sbatch not written yet")
    opts = "-N 2 --gpus-per-node=8 -t 1:00:00 -A prod -J train"
    p = _write(tmp_path, {"submit": 0, "duration": 5, "sbatch": opts})
    (job,) = read_jsonl(p).jobs()
    r = job.request
    assert (r.nodes_min, r.gpus_per_node, r.time_limit, r.account) == (2, 8, 3600, "prod")
    assert job.name == "train" and job.account == "prod"
    bad = _write(tmp_path, {"submit": 0, "duration": 5, "sbatch": "--time=abc"})
    with pytest.raises(WorkloadError, match=r":1: field 'sbatch': --time=abc"):
        read_jsonl(bad).jobs()


def test_sbatch_begin_counts_from_submit(tmp_path: Path) -> None:
    pytest.importorskip("tide.jobspec.sbatch", reason="tide.jobspec.sbatch not written yet")
    p = _write(tmp_path, {"submit": 100, "duration": 5, "sbatch": "--begin=now+60"})
    (job,) = read_jsonl(p).jobs()
    assert job.request.begin == 160
