"""Output file names from Slurm's filename patterns (sbatch/srun -o, -e).

Modelled on the FILENAME PATTERN section of sbatch(1)
(https://slurm.schedmd.com/sbatch.html): %% %A %a %b %J %j %N %n %r %s %t %u %x,
an optional zero-padding width between "%" and the letter (at most 10, ignored
for non-numeric values), and a backslash anywhere turning expansion off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# Slurm prints NO_VAL - 1 for the array index of a job that is not an array task.
NOT_AN_ARRAY_TASK = 4294967294

_TOKEN = re.compile(r"%(\d*)([%AabJjNnrsStux])")


@dataclass(slots=True, frozen=True)
class PatternFields:
    job_id: int
    name: str = ""
    user: str = ""
    array_job_id: int | None = None
    array_task_id: int | None = None
    node: str = ""  # %N: the node this file is written from
    node_id: int = 0  # %n
    task_id: int = 0  # %t
    step: int | None = None  # %s; None = the batch step
    restart_count: int = 0  # %r


def _values(f: PatternFields) -> dict[str, str | int]:
    array_task = f.array_task_id if f.array_task_id is not None else NOT_AN_ARRAY_TASK
    master = f.array_job_id if f.array_job_id is not None else f.job_id
    return {
        "A": master,
        "a": array_task,
        "b": array_task % 10,
        "J": f.job_id if f.step is None else f"{f.job_id}.{f.step}",
        "j": f.job_id,
        "N": f.node,
        "n": f.node_id,
        "r": f.restart_count,
        "s": "batch" if f.step is None else f.step,
        "S": f.job_id,  # Slurm's SLUID; tide job ids are already cluster-unique
        "t": f.task_id,
        "u": f.user,
        "x": f.name,
    }


def expand(pattern: str, fields: PatternFields) -> str:
    """Replace %-symbols in `pattern`; unknown symbols are kept as written."""
    if "\\" in pattern:
        return pattern.replace("\\", "")
    values = _values(fields)

    def one(m: re.Match[str]) -> str:
        width, letter = m.group(1), m.group(2)
        if letter == "%":
            return "%" if not width else m.group(0)
        value = values[letter]
        if width and isinstance(value, int):
            return str(value).zfill(min(int(width), 10))
        return str(value)

    return _TOKEN.sub(one, pattern)


def is_per_task(pattern: str) -> bool:
    """True when the pattern names one file per task (srun -o with %t)."""
    return "\\" not in pattern and re.search(r"%\d*t", pattern) is not None


def default_output(array: bool) -> str:
    return "slurm-%A_%a.out" if array else "slurm-%j.out"


def resolve(pattern: str, fields: PatternFields, workdir: str) -> Path:
    """The file a pattern names; relative names are relative to the working directory."""
    path = Path(expand(pattern, fields))
    return path if path.is_absolute() else Path(workdir) / path


def batch_paths(
    output: str, error: str, fields: PatternFields, workdir: str, array: bool
) -> tuple[Path, Path]:
    """(stdout, stderr) of the batch script: stderr joins stdout unless --error is given."""
    out = resolve(output or default_output(array), fields, workdir)
    err = resolve(error, fields, workdir) if error else out
    return out, err
