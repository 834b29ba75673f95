"""jobs.csv and metrics.json: exact columns, formatting, byte stability."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tide.model import Cluster, Gpu, Node
from tide.sched.types import Allocation, NodeAlloc
from tide.sim.metrics import JobResult, compute_metrics
from tide.sim.outputs import (
    JOB_COLUMNS,
    alloc_strings,
    fmt,
    node_indices,
    read_jobs_csv,
    write_jobs_csv,
    write_metrics_json,
)

AGREED = (
    "job_id,name,user,account,partition,qos,gpus,nodes,submit,eligible,start,end,wait,"
    "run,state,restarts,lost_gpu_seconds,leaf_switches,nodelist,gpu_index,cpu_ids"
)


def _results() -> list[JobResult]:
    return [
        JobResult(1, "train", "ana", "research", "batch", "normal", 16, 2, 0.0, None, 12.5,
                  3612.5, "COMPLETED", 0, 0.0, 1, 1, "gpu[001-002]",
                  "gpu001:0-7;gpu002:0-7", "gpu001:0-31;gpu002:0-31"),
        JobResult(2, "dev", "bo", "students", "batch", "normal", 1, 1, 0.1 + 0.2, 5.0,
                  state="PENDING"),
    ]  # fmt: skip


def test_columns_in_order(tmp_path: Path) -> None:
    p = tmp_path / "jobs.csv"
    assert write_jobs_csv(p, _results()) == 2
    lines = p.read_text().split("\n")
    assert lines[0].startswith(AGREED + ",")
    assert lines[0].split(",")[:21] == list(JOB_COLUMNS[:21])
    assert lines[1] == ("1,train,ana,research,batch,normal,16,2,0,0,12.5,3612.5,12.5,3600,"
                        "COMPLETED,0,0,1,gpu[001-002],gpu001:0-7;gpu002:0-7,"
                        "gpu001:0-31;gpu002:0-31,1,0,0")  # fmt: skip
    # never started: start, end, wait, run empty; eligible kept
    assert lines[2] == "2,dev,bo,students,batch,normal,1,1,0.3,5,,,,,PENDING,0,0,0,,,,0,0,0"
    assert lines[3] == ""


def test_byte_stable(tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write_jobs_csv(a, _results())
    write_jobs_csv(b, list(_results()))
    assert a.read_bytes() == b.read_bytes()
    m = compute_metrics(_results(), 16)
    write_metrics_json(tmp_path / "a.json", m)
    write_metrics_json(tmp_path / "b.json", compute_metrics(_results(), 16))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "jobs.csv"
    write_jobs_csv(p, _results())
    back = read_jobs_csv(p)
    assert back[0] == replace(_results()[0], eligible=0.0)  # written as the submit time
    assert back[1].start is None and back[1].eligible == 5.0 and back[1].submit == 0.3


@pytest.mark.parametrize(
    ("x", "s"),
    [(None, ""), (3, "3"), (3.0, "3"), (0.1 + 0.2, "0.3"), (-0.0001, "0"), (1e-7, "0"),
     (123456789.5, "123456789.5"), (2.0005, "2.001"), (True, "1"), (float("nan"), "")],
)  # fmt: skip
def test_fmt(x: float | None, s: str) -> None:
    assert fmt(x) == s


def test_metrics_json_sorted_and_rounded(tmp_path: Path) -> None:
    p = tmp_path / "m.json"
    write_metrics_json(p, {"b": 1 / 3, "a": {"z": float("inf"), "y": -0.0}, "c": None})
    text = p.read_text()
    assert text.index('"a"') < text.index('"b"') < text.index('"c"')
    assert json.loads(text) == {"a": {"y": 0.0, "z": None}, "b": 0.333333, "c": None}
    assert text.endswith("}\n")


def test_index_strings() -> None:
    assert node_indices([("gpu001", [0, 1, 2, 3]), ("gpu002", [4, 5, 7])]) == (
        "gpu001:0-3;gpu002:4-5,7")  # fmt: skip
    nodes = [Node(f"gpu00{i}", gpus=[Gpu(k) for k in range(8)]) for i in (1, 2, 3)]
    alloc = Allocation(7, (NodeAlloc(0, (0, 1, 2, 3), (0, 1)), NodeAlloc(1, (4, 5, 6, 7), (8,))))
    assert alloc_strings(Cluster(nodes=nodes), alloc) == (
        "gpu[001-002]", "gpu001:0-3;gpu002:4-7", "gpu001:0-1;gpu002:8")  # fmt: skip


def test_node_indices_group_consecutive_nodes_with_the_same_indices() -> None:
    """GPU and CPU index lists stay short on big jobs (issue 12 item 3): one
    hostlist per run of nodes holding the same indices."""
    from tide.sim.outputs import node_indices
    from tide.sim.report import _node_gpus

    whole = [(f"gpu{i:04d}", range(8)) for i in range(1, 4097)]
    assert node_indices(whole) == "gpu[0001-4096]:0-7"
    mixed = [("gpu001", [0, 1]), ("gpu002", [0, 1]), ("gpu003", [4]), ("gpu005", [4]),
             ("gpu006", []), ("gpu007", [0, 1])]  # fmt: skip
    text = node_indices(mixed)
    assert text == "gpu[001-002]:0-1;gpu[003,005]:4;gpu007:0-1"
    assert _node_gpus(text, "", 0) == [("gpu001", 2), ("gpu002", 2), ("gpu003", 1),
                                       ("gpu005", 1), ("gpu007", 2)]  # fmt: skip
