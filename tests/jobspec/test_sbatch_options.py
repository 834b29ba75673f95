"""Every option tide acts on, table-driven: the argv and the fields it sets."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tide.defaults import TIME_INFINITE
from tide.jobspec.sbatch import parse_args
from tide.jobspec.values import PRIORITY_TOP
from tide.model import (
    ArraySpec,
    Dependency,
    DependencyItem,
    DependencyType,
    JobRequest,
    SignalSpec,
)

NOW = datetime(2024, 3, 10, 14, 30, 15, tzinfo=UTC).timestamp()
D = DependencyType


def fields(argv: list[str]) -> dict[str, object]:
    """The request's fields that differ from a request with no options."""
    got = parse_args(argv, now=NOW).request
    base = JobRequest()
    return {
        name: getattr(got, name)
        for name in JobRequest.__dataclass_fields__
        if name != "warnings" and getattr(got, name) != getattr(base, name)
    }


CASES: list[tuple[list[str], dict[str, object]]] = [
    ([], {}),
    # counts and shape
    (["--nodes=2"], {"nodes_min": 2, "nodes_max": 2}),
    (["-N2"], {"nodes_min": 2, "nodes_max": 2}),
    (["-N", "2-4"], {"nodes_min": 2, "nodes_max": 4}),
    (["--nodes", "3"], {"nodes_min": 3, "nodes_max": 3}),
    (["--nodes=2k"], {"nodes_min": 2048, "nodes_max": 2048}),
    (["--nodes=-4"], {"nodes_min": 1, "nodes_max": 4}),
    (["--ntasks=8"], {"ntasks": 8}),
    (["-n8"], {"ntasks": 8}),
    (["--ntasks-per-node=4"], {"ntasks_per_node": 4}),
    (["--tasks-per-node=4"], {"ntasks_per_node": 4}),
    (["--cpus-per-task=6"], {"cpus_per_task": 6}),
    (["-c", "6"], {"cpus_per_task": 6}),
    (["--cpus-per-gpu=12"], {"cpus_per_gpu": 12}),
    # GPUs
    (["--gpus=16"], {"gpus": 16}),
    (["-G", "h100:16"], {"gpus": 16, "gpu_type": "h100"}),
    (["--gpus-per-node=8"], {"gpus_per_node": 8}),
    (["--gpus-per-node=a100:8"], {"gpus_per_node": 8, "gpu_type": "a100"}),
    (["--gpus-per-task=1"], {"gpus_per_task": 1}),
    (["--gpus-per-task=l40s:2"], {"gpus_per_task": 2, "gpu_type": "l40s"}),
    (["--gres=gpu:4"], {"gpus_per_node": 4}),
    (["--gres=gpu:a100:2"], {"gpus_per_node": 2, "gpu_type": "a100"}),
    (["--gres=gpu"], {"gpus_per_node": 1}),
    (["--gres=gpu:a100"], {"gpus_per_node": 1, "gpu_type": "a100"}),
    (["--gres=gres/gpu:2"], {"gpus_per_node": 2}),
    (["--gres=gpu:1g.10gb:3"], {"gpus_per_node": 3, "gpu_type": "1g.10gb"}),
    (["--gres=gpu:a100:2,shard:1"], {"gpus_per_node": 2, "gpu_type": "a100"}),
    (["--gres=none"], {}),
    (["--gres-flags=enforce-binding"], {"enforce_binding": True}),
    (["--gres-flags=disable-binding"], {}),
    (["--gpus=a100:2", "--gres=gpu:2"], {"gpus": 2, "gpus_per_node": 2, "gpu_type": "a100"}),
    # memory (MB)
    (["--mem=64G"], {"mem_per_node": 65536}),
    (["--mem=0"], {"mem_per_node": 0}),
    (["--mem-per-gpu=80g"], {"mem_per_gpu": 81920}),
    (["--mem-per-cpu=2048"], {"mem_per_cpu": 2048}),
    # times (seconds)
    (["--time=2:00:00"], {"time_limit": 7200}),
    (["-t", "90"], {"time_limit": 5400}),
    (["-t1-12"], {"time_limit": 36 * 3600}),
    (["--time=0:30"], {"time_limit": 60}),
    (["--time=UNLIMITED"], {"time_limit": TIME_INFINITE}),  # no limit, as sbatch reads it
    (["--time=0"], {"time_limit": TIME_INFINITE}),
    (["-t", "infinite"], {"time_limit": TIME_INFINITE}),
    (["--time-min=30"], {"time_min": 1800}),
    (["--begin=now+1hour"], {"begin": NOW + 3600}),
    (["-b", "2024-06-01T08:00"], {"begin": datetime(2024, 6, 1, 8, tzinfo=UTC).timestamp()}),
    # where and who
    (["--partition=gpu"], {"partitions": ("gpu",)}),
    (["-p", "gpu,debug"], {"partitions": ("gpu", "debug")}),
    (["-p", "a", "--partition="], {}),  # empty: back to the default partition
    (["--account=proj1"], {"account": "proj1"}),
    (["-A", "proj1"], {"account": "proj1"}),
    (["--qos=high"], {"qos": "high"}),
    (["-q", "high"], {"qos": "high"}),
    (["--reservation=maint_window"], {"reservation": "maint_window"}),
    (["--constraint=a100&ib"], {"constraint": "a100&ib"}),
    (["-C", "a|b"], {"constraint": "a|b"}),
    (["--nodelist=gpu[01-03]"], {"nodelist": ("gpu01", "gpu02", "gpu03"), "nodes_min": 3}),
    (["-w", "gpu03,gpu01,gpu01"], {"nodelist": ("gpu01", "gpu03"), "nodes_min": 2}),
    (["--nodelist=n[1-4]", "-N2"], {"nodelist": ("n1", "n2", "n3", "n4"),
                                     "nodes_min": 2, "nodes_max": 2}),
    (["--exclude=gpu[07-08]"], {"exclude": ("gpu07", "gpu08")}),
    (["-x", "bad1"], {"exclude": ("bad1",)}),
    (["--exclusive"], {"exclusive": True}),
    (["--exclusive=user"], {}),
    (["--exclusive=oversubscribe"], {}),
    (["-s"], {}),
    (["--switches=1"], {"switches": 1}),
    (["--switches=2@1:00:00"], {"switches": 2, "switches_wait": 3600}),
    (["--switches=2@UNLIMITED"], {"switches": 2}),
    # scheduling
    (["--nice"], {"nice": 100}),
    (["--nice=-5"], {"nice": -5}),
    (["--nice=0"], {}),
    (["--priority=500"], {"priority": 500}),
    (["--priority=top"], {"priority": PRIORITY_TOP}),
    (["--hold"], {"hold": True}),
    (["-H"], {"hold": True}),
    (["--requeue"], {"requeue": True}),
    (["--requeue=expedite"], {"requeue": True}),
    (["--no-requeue"], {"requeue": False}),
    (["--requeue", "--no-requeue"], {"requeue": False}),
    (["--array=0-15"], {"array": ArraySpec(tuple(range(16)))}),
    (["-a", "1,3,5-7"], {"array": ArraySpec((1, 3, 5, 6, 7))}),
    (["--array=0-15:4"], {"array": ArraySpec((0, 4, 8, 12))}),
    (["--array=0-15:4%2"], {"array": ArraySpec((0, 4, 8, 12), 2)}),
    (["--array=3,1,3"], {"array": ArraySpec((1, 3))}),
    (["--signal=USR1"], {"signal": SignalSpec("USR1", 60)}),
    (["--signal=@120"], {"signal": SignalSpec("USR1", 120)}),  # tide: USR1 by default
    (["--signal=SIGUSR2@120"], {"signal": SignalSpec("USR2", 120)}),
    (["--signal=B:TERM@30"], {"signal": SignalSpec("TERM", 30, batch_only=True)}),
    (["--signal=R:10"], {"signal": SignalSpec("USR1", 60, reservation=True)}),
    (["--signal=RB:sigint@0"], {"signal": SignalSpec("INT", 0, True, True)}),
    (["--signal=7"], {"signal": SignalSpec("7", 60)}),  # a number with no name stays a number
    # files and environment
    (["--job-name=train"], {"name": "train"}),
    (["-J", "train"], {"name": "train"}),
    (["--output=out/%j.log"], {"output": "out/%j.log"}),
    (["-o", "o.txt", "-e", "e.txt"], {"output": "o.txt", "error": "e.txt"}),
    (["--chdir=/scratch/me"], {"chdir": "/scratch/me"}),
    (["-D", "work"], {"chdir": "work"}),
    (["--export=NONE"], {"export": "NONE"}),
    (["--export=nil"], {"export": "NIL"}),
    (["--export=all"], {}),
    (["--export=ALL,OMP_NUM_THREADS=8"], {"export": "ALL,OMP_NUM_THREADS=8"}),
    (["--export=EDITOR,ARG1=test"], {"export": "EDITOR,ARG1=test"}),
    (["--wrap=hostname"], {"name": "wrap"}),
    # abbreviations resolve as getopt_long does
    (["--part=gpu"], {"partitions": ("gpu",)}),
    (["--ntasks-per-no=2"], {"ntasks_per_node": 2}),
    (["--mem=1G"], {"mem_per_node": 1024}),  # exact name wins over --mem-per-*
    # grouped short flags
    (["-HN2"], {"hold": True, "nodes_min": 2, "nodes_max": 2}),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_option(argv: list[str], expected: dict[str, object]) -> None:
    assert fields(argv) == expected


DEP_CASES: list[tuple[str, Dependency | None]] = [
    ("afterok:123", Dependency((DependencyItem(D.AFTEROK, ("123",)),))),
    ("afterok:123:124", Dependency((DependencyItem(D.AFTEROK, ("123", "124")),))),
    ("after:5+10", Dependency((DependencyItem(D.AFTER, ("5",), 600),))),
    ("after:1+5:2+5:3", Dependency((
        DependencyItem(D.AFTER, ("1", "2"), 300), DependencyItem(D.AFTER, ("3",), 0),
    ))),
    ("afterany:7,afternotok:8", Dependency((
        DependencyItem(D.AFTERANY, ("7",)), DependencyItem(D.AFTERNOTOK, ("8",)),
    ))),
    ("afterok:20:21?afterany:23", Dependency((
        DependencyItem(D.AFTEROK, ("20", "21")), DependencyItem(D.AFTERANY, ("23",)),
    ), any_of=True)),
    ("aftercorr:123_4", Dependency((DependencyItem(D.AFTERCORR, ("123_4",)),))),
    ("afterok:123_*", Dependency((DependencyItem(D.AFTEROK, ("123_*",)),))),
    ("afterok:123_[1-2,5]", Dependency((DependencyItem(D.AFTEROK, ("123_1", "123_2", "123_5")),))),
    ("singleton", Dependency((DependencyItem(D.SINGLETON),))),
    ("AfterOK:9,singleton", Dependency((
        DependencyItem(D.AFTEROK, ("9",)), DependencyItem(D.SINGLETON),
    ))),
    ("123,456", Dependency((  # the old form: bare ids mean afterany
        DependencyItem(D.AFTERANY, ("123",)), DependencyItem(D.AFTERANY, ("456",)),
    ))),
    ("afterburstbuffer:5", Dependency((DependencyItem(D.AFTERANY, ("5",)),))),
    ("singleton?afterok:1", Dependency((
        DependencyItem(D.SINGLETON), DependencyItem(D.AFTEROK, ("1",)),
    ), any_of=True)),
    ("", None),
    ("0", None),
]


@pytest.mark.parametrize(("text", "dep"), DEP_CASES, ids=[c[0] or "empty" for c in DEP_CASES])
def test_dependency(text: str, dep: Dependency | None) -> None:
    assert parse_args([f"--dependency={text}"]).request.dependency == dep
    assert parse_args(["-d", text]).request.dependency == dep


def test_remainder_is_script_and_its_arguments() -> None:
    parsed = parse_args(["-N1", "train.sh", "--lr", "3e-4", "-N", "9"])
    assert parsed.remainder == ("train.sh", "--lr", "3e-4", "-N", "9")
    assert parsed.request.nodes_min == 1  # options after the script belong to it
    assert parsed.request.name == "train.sh"


def test_double_dash_ends_options() -> None:
    parsed = parse_args(["-N1", "--", "-weird-name.sh", "x"])
    assert parsed.remainder == ("-weird-name.sh", "x")
    assert parsed.request.name == "-weird-name.sh"


def test_optional_values_need_equals() -> None:
    """As with getopt, --nice 5 is --nice (100) and a script named 5."""
    parsed = parse_args(["--nice", "5"])
    assert parsed.request.nice == 100
    assert parsed.remainder == ("5",)


def test_job_name_defaults() -> None:
    assert parse_args([]).request.name == "sbatch"  # script on stdin
    assert parse_args(["dir/run.sh"]).request.name == "run.sh"
    assert parse_args(["--wrap=hostname"]).request.name == "wrap"
    assert parse_args(["-J", "x", "--wrap=hostname"]).request.name == "x"


def test_wrap_builds_a_script() -> None:
    parsed = parse_args(["--wrap", "srun hostname"])
    assert parsed.script is not None
    assert parsed.script.startswith("#!/bin/sh\n")
    assert parsed.script.endswith("\nsrun hostname\n")
    assert parsed.remainder == ()
    assert parse_args(["x.sh"]).script is None


def test_later_option_wins() -> None:
    assert parse_args(["-t", "10", "--time=20"]).request.time_limit == 1200
    assert parse_args(["-p", "a", "-p", "b"]).request.partitions == ("b",)
    assert parse_args(["--gres=gpu:a100:2", "--gres=gpu:4"]).request.gpu_type == ""


def test_every_field_is_filled() -> None:
    """A request using every option tide acts on sets every JobRequest field."""
    argv = [
        "-J", "all", "-N", "2-3", "-n", "6", "--ntasks-per-node=3", "-G", "a100:12",
        "--gres=gpu:a100:4", "--gpus-per-task=a100:2", "-c", "4", "--mem=100G",
        "--time=2:00:00", "--time-min=1:00:00", "-p", "gpu", "-A", "acct", "-q", "hi",
        "--nice=10", "--exclusive", "-C", "ib", "-w", "g[1-2]", "-x", "g9",
        "--switches=1@10", "--gres-flags=enforce-binding", "--begin=now+1hour",
        "-d", "afterok:1", "-a", "0-3%1", "--requeue", "--signal=B:USR1@90", "-H",
        "-o", "o", "-e", "e", "-D", "/w", "--export=NONE", "--reservation=r",
        "--priority=5", "--comment=params=7B",
    ]
    got = fields(argv)
    missing = set(JobRequest.__dataclass_fields__) - set(got) - {"warnings"}
    # the three memory fields exclude each other, as do --cpus-per-task/--cpus-per-gpu
    assert missing == {"mem_per_gpu", "mem_per_cpu", "cpus_per_gpu"}
    assert fields(["--mem-per-gpu=1G"]) == {"mem_per_gpu": 1024}
    assert fields(["--mem-per-cpu=1G"]) == {"mem_per_cpu": 1024}
