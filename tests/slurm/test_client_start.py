"""The everyday commands start on the standard library's cheap modules and tide's
client (issue 15 item 3): what they import is checked here, their CPU cost in
bench/bench_cli.py. sbatch's client only splits its command line (the server
reads the options with the script and the SBATCH_* variables)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tide.slurm.opts import UsageError
from tide.slurm.sbatch import split

# Each costs a command a noticeable share of its start (python -X importtime).
HEAVY = (
    "dataclasses",
    "inspect",
    "difflib",
    "pathlib",
    "http.client",
    "email",
    "urllib",
    "datetime",
    "pydantic",
    "typer",
    "rich",
    "numpy",
    "tide.model",
    "tide.jobspec.sbatch",
)


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after `code` (nothing listens on port 9:
    a command runs its whole client path, then fails to connect)."""
    env = {"PATH": "/usr/bin:/bin", "TIDE_URL": "http://127.0.0.1:9", "TIDE_TOKEN": "t"}
    script = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


@pytest.mark.parametrize(
    "code",
    [
        "from tide.slurm.main import main; main('sbatch', ['-N1', '-t5', '--wrap', 'true'])",
        "from tide.slurm.main import main; main('squeue', ['--me'])",
        "from tide.cli.queue_fast import queue; queue([])",
    ],
)
def test_fast_commands_import_nothing_heavy(code: str) -> None:
    heavy = _loaded_after(code) & set(HEAVY)
    assert not heavy, sorted(heavy)


def test_split_finds_the_script_the_wrap_and_sbatchs_own_flags() -> None:
    given, rest, wrap = split(["-N2", "--pars", "-HW", "-t", "5", "job.sh", "--wait", "-x"])
    assert given == {"nodes", "parsable", "hold", "wait", "time"}
    assert rest == ["job.sh", "--wait", "-x"] and wrap is None
    given, rest, wrap = split(["--wrap", "echo a", "--test-only", "--wrap=echo b"])
    assert given == {"wrap", "test-only"} and rest == [] and wrap == "echo b"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--colour", "x.sh"], "--colour: not an sbatch option"),
        (["--tim=5", "x.sh"], "--tim: is ambiguous"),
        (["-t"], "--time: needs a value"),
    ],
)
def test_split_errors_are_sbatchs_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        split(argv)
