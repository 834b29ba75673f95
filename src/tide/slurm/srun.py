"""srun: inside a job, a step on the job's nodes (tide's in-job srun); outside,
an allocation made for the step, the step, then the allocation released, as
Slurm's srun does.

    srun -N2 -n4 -l hostname               # outside a job: allocate, run, release
    srun --ntasks-per-node=8 python train.py   # inside a batch job: a step
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tide.slurm.alloc import allocation
from tide.slurm.common import connect_api
from tide.slurm.opts import UsageError

# srun options that take a value (the next word when not written --opt=value)
VALUED = frozenset("""
-n --ntasks -N --nodes -c --cpus-per-task -p --partition -t --time -J --job-name
-A --account -q --qos -w --nodelist -x --exclude -o --output -e --error -D --chdir
-G --gpus --gres --gpus-per-node --gpus-per-task --ntasks-per-node --mem --mem-per-cpu
--mem-per-gpu --cpu-bind --cpu_bind --export --open-mode -C --constraint
--reservation --dependency -d --signal --switches --cpus-per-gpu
""".split())  # noqa: SIM905
# what the allocation needs (the rest, -l or -o say, only concerns the step)
ALLOC = frozenset("""
-N --nodes -n --ntasks -c --cpus-per-task -p --partition -t --time -J --job-name -A
--account -q --qos -w --nodelist -x --exclude -G --gpus --gres --gpus-per-node
--gpus-per-task --ntasks-per-node --mem --mem-per-cpu --mem-per-gpu -C --constraint
--reservation --exclusive --switches --cpus-per-gpu
""".split())  # noqa: SIM905


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """(options, command): the command starts at the first word not an option's."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv[:i], argv[i + 1 :]
        if not word.startswith("-"):
            return argv[:i], argv[i:]
        name = word.split("=", 1)[0]
        short_glued = len(word) > 2 and not word.startswith("--")
        i += 2 if (name in VALUED and "=" not in word and not short_glued) else 1
    return argv, []


def allocation_options(options: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(options):
        word = options[i]
        name = word.split("=", 1)[0]
        short = name[:2] if not name.startswith("--") else name
        takes = name in VALUED and "=" not in word and len(word) == len(name) and (
            name.startswith("--") or len(word) == 2)  # fmt: skip
        if name in ALLOC or short in ALLOC:
            out += options[i : i + (2 if takes else 1)]
        i += 2 if takes else 1
    return out


def run(argv: list[str]) -> int:
    if argv[:1] in (["--help"], ["-h"], ["--usage"]):
        sys.stdout.write(__doc__ or "")
        return 0
    job_dir = os.environ.get("TIDE_JOB_DIR")
    if job_dir and os.environ.get("SLURM_JOB_ID"):
        return _in_job(Path(job_dir), argv, dict(os.environ))
    options, command = split_command(argv)
    if not command:
        raise UsageError("error: no command given (srun [OPTIONS] COMMAND [ARGS...])")
    with connect_api() as c, allocation(c, allocation_options(options), "srun") as env:
        return _in_job(Path(env["TIDE_JOB_DIR"]), argv, env)


def _in_job(job_dir: Path, argv: list[str], env: dict[str, str]) -> int:
    """tide's in-job srun (tide.exec.srun) with the job's environment."""
    shim = job_dir / "bin" / "srun"
    if not shim.exists():
        raise UsageError(f"error: {shim} is missing: this job has no srun")
    return subprocess.call([str(shim), *argv], env=env)
