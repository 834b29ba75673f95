"""Pure pieces of the local executor: filename patterns, env formats, signal specs."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tide.exec.base import LaunchSpec, NodeLaunch
from tide.exec.env import (
    BatchContext,
    StepInfo,
    TaskPlacement,
    batch_env,
    filter_export,
    task_env,
    tasks_per_node,
)
from tide.exec.jobdir import ExitRecord, format_exit_code, spec_from_json, spec_to_json
from tide.exec.outputs import PatternFields, batch_paths, expand, is_per_task
from tide.exec.supervisor import parse_job_signal

JOB = PatternFields(job_id=128, name="train", user="alice", node="gpu01")
ARRAY = PatternFields(job_id=131, name="sweep", user="bob", array_job_id=128, array_task_id=3)
STEP = PatternFields(job_id=128, name="t", node="gpu02", node_id=1, task_id=5, step=0)


@pytest.mark.parametrize(
    ("pattern", "fields", "expected"),
    [
        ("slurm-%j.out", JOB, "slurm-128.out"),
        ("%x-%j-%u.log", JOB, "train-128-alice.log"),
        ("%N.out", JOB, "gpu01.out"),
        ("100%%-%j", JOB, "100%-128"),
        ("job%4j.out", JOB, "job0128.out"),  # sbatch(1) example
        ("job%J.out", STEP, "job128.0.out"),  # sbatch(1) example
        ("job%2j-%2t.out", STEP, "job128-05.out"),  # sbatch(1) example
        ("%J-%s", JOB, "128-batch"),
        ("%12j", JOB, "0000000128"),  # width capped at 10
        ("%5N", JOB, "gpu01"),  # no padding for non-numeric values
        ("slurm-%A_%a.out", ARRAY, "slurm-128_3.out"),
        ("%b", ARRAY, "3"),
        ("slurm-%A_%a.out", JOB, "slurm-128_4294967294.out"),  # not an array task
        ("%n-%t-%N", STEP, "1-5-gpu02"),
        ("keep-%q-%", JOB, "keep-%q-%"),  # unknown symbols stay
        ("no\\%j\\expansion", JOB, "no%jexpansion"),  # a backslash turns expansion off
    ],
)
def test_expand(pattern: str, fields: PatternFields, expected: str) -> None:
    assert expand(pattern, fields) == expected


def test_is_per_task() -> None:
    assert is_per_task("out-%t.txt") and is_per_task("out-%3t.txt")
    assert not is_per_task("out-%j.txt") and not is_per_task("out\\-%t")


def test_batch_paths_defaults_and_merge() -> None:
    out, err = batch_paths("", "", JOB, "/w", array=False)
    assert out == err == Path("/w/slurm-128.out")
    out, err = batch_paths("", "", ARRAY, "/w", array=True)
    assert out == Path("/w/slurm-128_3.out")
    out, err = batch_paths("/abs/%x.out", "e-%j.err", JOB, "/w", array=False)
    assert (out, err) == (Path("/abs/train.out"), Path("/w/e-128.err"))


@pytest.mark.parametrize(
    ("counts", "expected"),
    [([2, 2, 2, 1], "2(x3),1"), ([4], "4"), ([1, 2, 1], "1,2,1"), ([8, 8], "8(x2)"), ([], "")],
)
def test_tasks_per_node(counts: list[int], expected: str) -> None:
    assert tasks_per_node(counts) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("USR1", (signal.SIGUSR1, "steps")),
        ("B:USR1", (signal.SIGUSR1, "batch")),
        ("R:SIGUSR2", (signal.SIGUSR2, "steps")),
        ("RB:10", (10, "batch")),
        ("term", (signal.SIGTERM, "steps")),
    ],
)
def test_parse_job_signal(text: str, expected: tuple[int, str]) -> None:
    assert parse_job_signal(text) == expected


def test_parse_job_signal_names_the_bad_value() -> None:
    with pytest.raises(ValueError, match="'NOPE'"):
        parse_job_signal("B:NOPE")


@pytest.mark.parametrize(
    ("export", "expected"),
    [
        ("ALL", {"A": "1", "B": "2", "SLURM_X": "s", "PATH": "/p"}),
        ("NONE", {"SLURM_X": "s", "PATH": "/usr/local/bin:/usr/bin:/bin"}),
        ("A", {"A": "1", "SLURM_X": "s", "PATH": "/usr/local/bin:/usr/bin:/bin"}),
        ("A,PATH,C=3", {"A": "1", "C": "3", "SLURM_X": "s", "PATH": "/p"}),
        ("ALL,B=9", {"A": "1", "B": "9", "SLURM_X": "s", "PATH": "/p"}),
    ],
)
def test_filter_export(export: str, expected: dict[str, str]) -> None:
    env = {"A": "1", "B": "2", "SLURM_X": "s", "PATH": "/p"}
    assert filter_export(env, export) == expected


NODES = [
    NodeLaunch("gpu01", "10.0.0.1", (0, 1), (0, 1, 2, 3), 4000, 2),
    NodeLaunch("gpu02", "10.0.0.2", (2, 3), (4, 5, 6, 7), 4000, 2),
]


def _spec(**kw: object) -> LaunchSpec:
    base: dict[str, object] = dict(
        job_id=42,
        name="n",
        user="alice",
        account="acct",
        partition="gpu",
        script="#!/bin/sh\n",
        workdir="/w",
        submit_dir="/s",
        nodes=NODES,
        ntasks=4,
        cpus_per_task=2,
    )
    base.update(kw)
    return LaunchSpec(**base)  # type: ignore[arg-type]


CTX = BatchContext(
    job_dir="/state/jobs/42",
    bin_dir="/state/jobs/42/bin",
    python="/py",
    pythonpath="/src",
    cluster="c1",
    submit_host="login1",
    uid=1000,
    started=1000.0,
    master_port=20042,
    checkpoint_dir="/ck/42",
)


def test_batch_env_values() -> None:
    spec = _spec(env={"FOO": "bar", "SLURM_PROCID": "7", "PATH": "/usr/bin"}, time_limit=60,
                 ntasks_per_node=2)  # fmt: skip
    env = batch_env(spec, CTX)
    expected = {
        "SLURM_JOB_ID": "42",
        "SLURM_JOBID": "42",
        "SLURM_JOB_NODELIST": "gpu[01-02]",
        "SLURM_NODELIST": "gpu[01-02]",
        "SLURM_NNODES": "2",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_NTASKS": "4",
        "SLURM_NPROCS": "4",
        "SLURM_NTASKS_PER_NODE": "2",
        "SLURM_TASKS_PER_NODE": "2(x2)",
        "SLURM_JOB_CPUS_PER_NODE": "4(x2)",
        "SLURM_CPUS_PER_TASK": "2",
        "SLURM_CPUS_ON_NODE": "4",
        "SLURM_GPUS_ON_NODE": "2",
        "SLURM_JOB_GPUS": "0,1",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "SLURMD_NODENAME": "gpu01",
        "SLURM_PROCID": "0",  # the stale "7" from the submit environment is gone
        "SLURM_JOB_END_TIME": "1060",
        "SLURM_CLUSTER_NAME": "c1",
        "SLURM_SUBMIT_HOST": "login1",
        "SLURM_SUBMIT_DIR": "/s",
        "SLURM_JOB_UID": "1000",
        "TIDE_CHECKPOINT_DIR": "/ck/42",
        "FOO": "bar",
        "PATH": "/state/jobs/42/bin:/usr/bin",
    }
    assert {k: env.get(k) for k in expected} == expected
    assert "SLURM_ARRAY_TASK_ID" not in env


def test_batch_env_array_and_no_gpus() -> None:
    nodes = [NodeLaunch("cpu1", "", (), (0,), 100, 1)]
    env = batch_env(_spec(nodes=nodes, ntasks=1, array_job_id=40, array_task_id=2), CTX)
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["SLURM_GPUS_ON_NODE"] == "0"
    assert (env["SLURM_ARRAY_JOB_ID"], env["SLURM_ARRAY_TASK_ID"]) == ("40", "2")


def test_task_env_torch_variables() -> None:
    step = StepInfo(1, tuple(NODES), (2, 2), tuple(NODES), 20042)
    env = task_env({"PATH": "/p"}, step, TaskPlacement(3, 1, 1, (3,), (6, 7)))
    expected = {
        "SLURM_PROCID": "3",
        "SLURM_LOCALID": "1",
        "SLURM_NODEID": "1",
        "SLURM_STEP_ID": "1",
        "SLURM_STEP_NUM_TASKS": "4",
        "SLURM_STEP_NODELIST": "gpu[01-02]",
        "SLURM_GTIDS": "2,3",
        "SLURMD_NODENAME": "gpu02",
        "CUDA_VISIBLE_DEVICES": "3",
        "MASTER_ADDR": "10.0.0.1",
        "MASTER_PORT": "20042",
        "WORLD_SIZE": "4",
        "RANK": "3",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": "1",
        "NODE_RANK": "1",
    }
    assert {k: env.get(k) for k in expected} == expected


@pytest.mark.parametrize(
    ("user_env", "addr", "port"),
    [
        ({"MASTER_ADDR": "gpu02"}, "10.0.0.2", "20042"),  # a node name maps to its address
        ({"MASTER_ADDR": "head", "MASTER_PORT": "29500"}, "head", "29500"),  # kept as given
    ],
)
def test_task_env_respects_user_master(user_env: dict[str, str], addr: str, port: str) -> None:
    step = StepInfo(0, tuple(NODES), (1, 1), tuple(NODES), 20042)
    env = task_env(user_env, step, TaskPlacement(0, 0, 0, (0,), (0,)))
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == (addr, port)


def test_spec_json_round_trip() -> None:
    spec = _spec(env={"A": "1"}, time_limit=5, signal="B:USR1", script_args=("a", "b c"))
    assert spec_from_json(json.loads(json.dumps(spec_to_json(spec)))) == spec


@pytest.mark.parametrize(("code", "sig", "text"), [(0, 0, "0:0"), (1, 0, "1:0"), (0, 9, "0:9")])
def test_exit_code_format(code: int, sig: int, text: str) -> None:
    assert format_exit_code(code, sig) == text
    assert ExitRecord(1, code, sig).exit_code_str == text


@pytest.mark.parametrize(
    ("tasks", "count", "lo", "hi", "step"),
    [
        ((0, 4, 8, 12), "4", "0", "12", "4"),
        ((2, 3, 4), "3", "2", "4", "1"),
        ((1, 7, 9), "3", "1", "9", "1"),
    ],
)
def test_array_task_count_min_max_step(
    tasks: tuple[int, ...], count: str, lo: str, hi: str, step: str
) -> None:
    """sbatch(1)'s SLURM_ARRAY_TASK_COUNT/MIN/MAX/STEP (--array=0-12:4 has step 4)."""
    nodes = [NodeLaunch("cpu1", "", (), (0,), 100, 1)]
    spec = _spec(nodes=nodes, ntasks=1, array_job_id=40, array_task_id=tasks[1], array_tasks=tasks)
    env = batch_env(spec, CTX)
    got = [env[f"SLURM_ARRAY_TASK_{k}"] for k in ("COUNT", "MIN", "MAX", "STEP")]
    assert got == [count, lo, hi, step]


def test_qos_and_gpus_per_node_are_set_when_known() -> None:
    env = batch_env(_spec(qos="high", gpus_per_node=4), CTX)
    assert (env["SLURM_JOB_QOS"], env["SLURM_GPUS_PER_NODE"]) == ("high", "4")
    assert "SLURM_GPUS_PER_NODE" not in batch_env(_spec(), CTX)


def test_cpu_counts_are_cpus_not_cores_as_in_accounting() -> None:
    """-N2 --ntasks-per-node=2 -c4 on nodes of 2 threads per core holds 4 cores = 8 CPUs
    a node: Slurm's SLURM_JOB_CPUS_PER_NODE is 8(x2), as sacct's AllocCPUS is 16."""
    nodes = [NodeLaunch(f"n{i}", "", (), (0, 1, 2, 3), 100, 2, threads_per_core=2) for i in (1, 2)]
    env = batch_env(_spec(nodes=nodes, ntasks=4, cpus_per_task=4), CTX)
    assert (env["SLURM_JOB_CPUS_PER_NODE"], env["SLURM_CPUS_ON_NODE"]) == ("8(x2)", "8")
    step = StepInfo(1, tuple(nodes), (2, 2), tuple(nodes), 20042)
    task = task_env({"PATH": "/p"}, step, TaskPlacement(0, 0, 0, (), (0, 1)))
    assert task["SLURM_CPUS_ON_NODE"] == "8"


def test_memory_variables_are_the_option_given_as_sbatch_sets_them() -> None:
    """Slurm 22.05: --mem=64G sets SLURM_MEM_PER_NODE=65536 (an --exclusive job too, though
    it holds the whole node); --mem-per-cpu sets SLURM_MEM_PER_CPU alone; no memory option
    sets none (the job may use all of the node's memory)."""
    nodes = [NodeLaunch("n1", "", (), tuple(range(32)), 512_000, 1)]
    asked = batch_env(_spec(nodes=nodes, ntasks=1, mem_per_node=65_536), CTX)
    per_cpu = batch_env(_spec(nodes=nodes, ntasks=1, mem_per_cpu=1_024), CTX)
    per_gpu = batch_env(_spec(nodes=nodes, ntasks=1, mem_per_gpu=2_048), CTX)
    none = batch_env(_spec(nodes=nodes, ntasks=1), CTX)
    mem = ("SLURM_MEM_PER_NODE", "SLURM_MEM_PER_CPU", "SLURM_MEM_PER_GPU")
    assert [asked.get(k) for k in mem] == ["65536", None, None]
    assert [per_cpu.get(k) for k in mem] == [None, "1024", None]
    assert [per_gpu.get(k) for k in mem] == [None, None, "2048"]
    assert [none.get(k) for k in mem] == [None, None, None]


def test_task_counts_are_set_only_when_asked_for_as_sbatch_does() -> None:
    """Slurm 22.05: `sbatch -N2` sets neither SLURM_NTASKS nor SLURM_NTASKS_PER_NODE (only
    SLURM_TASKS_PER_NODE=1(x2)); -n4 sets SLURM_NTASKS/NPROCS; --ntasks-per-node=2 both."""
    keys = ("SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
    nodes = [NodeLaunch(f"n{i}", "", (), (0,), 100, 1) for i in (1, 2)]
    plain = batch_env(_spec(nodes=nodes, ntasks=2, tasks_asked=False), CTX)
    assert [plain.get(k) for k in keys] == [None, None, None, "1(x2)"]
    asked = batch_env(_spec(nodes=nodes, ntasks=2), CTX)
    assert [asked.get(k) for k in keys] == ["2", "2", None, "1(x2)"]
    per_node = batch_env(_spec(nodes=nodes, ntasks=2, ntasks_per_node=1), CTX)
    assert [per_node.get(k) for k in keys] == ["2", "2", "1", "1(x2)"]
