"""`tide sim run` without Typer (tide.cli.sim_fast): the same options as Typer
reads them, Typer's own errors for anything else, the same outputs, and
neither Typer nor Rich loaded on the way."""

from __future__ import annotations

import dataclasses
import gzip
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tide
from tide.cli.replay import REPLAY_OPTIONS, RUN_POLICY
from tide.cli.sim_fast import parse

GOOD = [
    [], ["--workload", "a.swf"], ["-w", "a.swf", "-o", "o"], ["--gzip"], ["--policy", ""],
    ["--workload=a", "--seed", "3", "--seed", "-4"], ["--workload", ""], ["--workload="],
    ["--max-procs", "1"], ["--mfu", "0.5"], ["--mfu", "1"], ["--price=0"], ["--mttr", "2.5"],
    ["--out", "-"], ["--workload", "--seed"], ["--bf-interval", "007"], ["--faults", "f.csv"],
    ["--from-server", "/tmp"], ["--mtbf", "-0"], ["--policy", "slurm", "--backfill", "easy",
    "--order", "fcfs", "--swf-filter", "none", "--estimates", "exact", "--gpus-per-node", "8",
    "--scenario", "demo", "--cluster", "demo", "--slurm-conf", "x.conf", "--mttr", "60"],
]  # fmt: skip
BAD = [
    ["--seed", "x"], ["--seed"], ["--max-procs", "0"], ["--mfu", "2"], ["--price", "-1"],
    ["--gzip=1"], ["--bogus"], ["extra"], ["--mttr", "abc"], ["--seed", "1.5"],
    ["--help"], ["-h"], ["--", "x"],
]  # fmt: skip
# Typer takes these; the fast path leaves them to Typer (its result is not certain)
TYPER_ONLY = [
    ["-wfoo"], ["-w=a"], ["--out", ""], ["--seed", "+5"], ["--seed", "1_000"], ["--mttr", "1e3"]
]  # fmt: skip


def _typer(argv: list[str]) -> dict[str, Any] | str:
    """What Typer hands `tide sim run` for argv, or its error."""
    from typer.main import get_command

    from tide.cli.sim import sim_app

    command = get_command(sim_app).commands["run"]  # type: ignore[attr-defined]
    try:
        return dict(command.make_context("run", list(argv)).params)
    except BaseException as e:  # Click's usage errors, --help's exit
        return f"{type(e).__name__}: {e}"


def test_options_read_as_typer_reads_them() -> None:
    for argv in GOOD + BAD + TYPER_ONLY:
        mine, typer = parse(argv), _typer(argv)
        if mine is None:
            assert argv not in GOOD, argv
            continue
        assert isinstance(typer, dict), (argv, typer)
        policy, replay = mine
        assert {"policy": policy, **dataclasses.asdict(replay)} == typer, argv
    for argv in BAD:
        assert parse(argv) is None and isinstance(_typer(argv), str), argv


def test_random_option_lists_as_typer() -> None:
    rng = random.Random(5)
    values = {str: ["a", "", "x.swf", "--seed"], int: ["0", "-2", "12", "x", "3.5"],
              float: ["0", "0.25", "1", "-1", "7", "1e3", "y"]}  # fmt: skip
    specs = [RUN_POLICY, *REPLAY_OPTIONS]
    for _ in range(400):
        argv: list[str] = []
        for spec in rng.sample(specs, rng.randint(0, 5)):
            flag = rng.choice(spec.flags)
            if spec.kind is bool:
                argv.append(flag)
                continue
            value = rng.choice(values.get(spec.kind, ["p", "/tmp"]))
            joined = flag.startswith("--") and rng.random() < 0.3
            argv += [f"{flag}={value}"] if joined else [flag, value]
        mine, typer = parse(argv), _typer(argv)
        if mine is not None:
            assert {"policy": mine[0], **dataclasses.asdict(mine[1])} == typer, argv


@dataclasses.dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str  # without the import lines
    loaded: set[str]  # which of Typer, Click, Rich, pydantic it imported
    imported: set[str]  # every module it imported


def _tide(entry: str, args: list[str], cwd: Path) -> Ran:
    """`tide ARGS` through `entry` (the command's entry point, or Typer's app
    directly); -X importtime says what it imported (the fast path ends with
    os._exit: nothing can run after it)."""
    src = str(Path(tide.__file__).resolve().parents[1])  # this tree's, from any cwd
    path = os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "COLUMNS": "100", "TIDE_PROGRESS_EVERY": "60", "PYTHONPATH": path}
    code = f"from {entry}\nmain()"
    cmd = [sys.executable, "-X", "importtime", "-c", code, *args]
    got = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
    lines = got.stderr.splitlines(keepends=True)
    imports = [ln.rsplit("|", 1)[-1].strip() for ln in lines if ln.startswith("import time:")]
    loaded = {m.split(".")[0] for m in imports} & {"typer", "click", "rich", "pydantic"}
    err = "".join(ln for ln in lines if not ln.startswith("import time:"))
    return Ran(got.returncode, got.stdout, err, loaded, set(imports))


FAST, TYPER = "tide.cli.entry import main", "tide.cli.main import app as main"


@pytest.mark.parametrize(
    ("args", "option"),
    [(["--seed", "x"], "--seed"), (["--max-procs", "0"], "--max-procs"),
     (["--mfu", "1.5"], "--mfu"), (["--bogus", "1"], "--bogus"), (["--gzip=yes"], "--gzip")],
)  # fmt: skip
def test_bad_options_get_typers_error_naming_the_option(
    args: list[str], option: str, tmp_path: Path
) -> None:
    fast = _tide(FAST, ["sim", "run", *args], tmp_path)
    typer = _tide(TYPER, ["sim", "run", *args], tmp_path)
    assert fast.returncode == typer.returncode == 2
    assert option in fast.stderr
    assert fast.stderr == typer.stderr and fast.stdout == typer.stdout


def _swf(path: Path, jobs: int = 300) -> Path:
    rng = random.Random(3)
    lines = ["; MaxProcs: 64", "; UnixStartTime: 1000"]
    t = 0
    for i in range(1, jobs + 1):
        t += rng.randint(0, 120)
        procs, run = rng.choice([1, 2, 4, 8, 32, 64]), rng.randint(1, 4000)
        req = run + rng.randint(0, 2000)
        lines.append(f"{i} {t} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 1 -1 -1 -1")
    lines.append(f"{jobs + 1} {t} -1 0 1 -1 -1 1 10 -1 1 1 1 -1 1 -1 -1 -1")  # dropped: run 0
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "extra", [[], ["--gzip"], ["--mtbf", "2000000", "--faults", "faults.csv", "--seed", "2"]]
)
def test_fast_run_writes_what_typer_writes_without_loading_typer_or_rich(
    extra: list[str], tmp_path: Path
) -> None:
    swf = _swf(tmp_path / "log.swf", 300 if not extra or extra == ["--gzip"] else 60)
    (tmp_path / "faults.csv").write_text("5000,n001,600\n9000,n007\n")
    args = ["sim", "run", "-w", str(swf), "--backfill", "easy", "--order", "fcfs", *extra]
    fast = _tide(FAST, [*args, "--out", "fast"], tmp_path)
    typer = _tide(TYPER, [*args, "--out", "typer"], tmp_path)
    assert fast.returncode == typer.returncode == 0, fast.stderr + typer.stderr
    assert fast.loaded == set() and "typer" in typer.loaded
    if not extra:  # an SWF log on its flat cluster: no engine, config reader, faults, training
        unneeded = {"tide.sim.engine", "tide.config", "tide.sim.faults", "tide.sim.training"}
        assert not unneeded & fast.imported and "tide.sim.count_fast" in fast.imported
    assert fast.stdout == typer.stdout and "tide sim: side by side" in fast.stdout
    def steady(err: str) -> list[str]:  # progress lines carry rates and clock times
        return [ln for ln in err.splitlines() if "jobs/s" not in ln]

    assert steady(fast.stderr.replace("fast/", "typer/")) == steady(typer.stderr)
    assert "dropped 1: run time <= 0" in fast.stderr
    names = sorted(p.name for p in (tmp_path / "typer").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "fast").iterdir())
    for name in names:
        mine, theirs = tmp_path / "fast" / name, tmp_path / "typer" / name
        if name.endswith(".gz"):  # the gzip header holds the time it was written
            assert gzip.decompress(mine.read_bytes()) == gzip.decompress(theirs.read_bytes())
        else:
            assert mine.read_bytes() == theirs.read_bytes(), name


def test_run_errors_and_help_through_the_entry_point(tmp_path: Path) -> None:
    missing = _tide(FAST, ["sim", "run", "-w", "nowhere.swf"], tmp_path)
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: SWF file 'nowhere.swf' does not exist")
    nothing = _tide(FAST, ["sim", "run"], tmp_path)
    assert nothing.returncode == 1 and "give --workload PATH or --scenario NAME" in nothing.stderr
    helped = _tide(FAST, ["sim", "run", "--help"], tmp_path)
    assert helped.returncode == 0
    assert "Example: tide sim run --policy slurm" in helped.stdout
    assert "--max-procs" in helped.stdout
