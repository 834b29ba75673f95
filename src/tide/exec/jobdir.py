"""A job's state directory: the files the executor, supervisor and srun share.

Everything that crosses a process boundary goes through files here, written
atomically (temp file + rename), so any reader sees a whole document or none,
and a controller that restarts can pick up where the old one left off.

    <state_dir>/jobs/<job_id>/
      spec.json       the LaunchSpec (executor) - also srun's view of the allocation
      config.json     executor settings the supervisor needs (kill_wait, cluster, ...)
      supervisor.pid  the supervisor's pid (written before launch() returns)
      runtime.json    facts the supervisor decides at start (master port, start time)
      requests/       control requests from the executor: signal, cancel
      steps/          one JSON per srun step (srun), plus the step counter
      exit.json       the end, written last; its presence means "this run ended"
      bin/srun        the srun shim, first on the job's PATH
      script          the batch script
      supervisor.log  the supervisor's own stderr
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tide.exec.base import ExitReport, LaunchSpec, NodeLaunch

SPEC = "spec.json"
CONFIG = "config.json"
PIDFILE = "supervisor.pid"
RUNTIME = "runtime.json"
EXIT = "exit.json"
REQUESTS = "requests"
STEPS = "steps"
LOG = "supervisor.log"
ENV_JOB_DIR = "TIDE_JOB_DIR"  # set for every process of a job; also our sweep marker


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON so readers never see a half-written file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """The document at `path`, or None when it is missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_pid(path: Path, pid: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(f"{pid}\n", encoding="ascii")
    os.replace(tmp, path)


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def spec_to_json(spec: LaunchSpec) -> dict[str, Any]:
    return asdict(spec)


def spec_from_json(data: dict[str, Any]) -> LaunchSpec:
    fields = {k: v for k, v in data.items() if k in LaunchSpec.__dataclass_fields__}
    for name in ("script_args", "array_tasks"):  # JSON lists back to the spec's tuples
        if name in fields:
            fields[name] = tuple(fields[name])
    fields["nodes"] = [
        NodeLaunch(
            node=n["node"],
            address=n["address"],
            gpus=tuple(n["gpus"]),
            cores=tuple(n["cores"]),
            mem_mb=n["mem_mb"],
            ntasks=n["ntasks"],
            threads_per_core=n.get("threads_per_core", 1),
        )
        for n in data["nodes"]
    ]
    return LaunchSpec(**fields)


def load_spec(job_dir: Path) -> LaunchSpec:
    data = read_json(job_dir / SPEC)
    if data is None:
        raise FileNotFoundError(f"no readable {SPEC} in {job_dir}")
    return spec_from_json(data)


def format_exit_code(code: int, sig: int) -> str:
    """Slurm's ExitCode column: "<exit status>:<terminating signal>"."""
    return f"{code}:{sig}"


@dataclass(slots=True)
class ExitRecord:
    """exit.json: how one run of a job ended, with its timestamps (Unix time)."""

    job_id: int
    exit_code: int
    signal: int = 0
    reason: str = ""  # "timeout", "cancelled", "node_fail", "" for a normal end
    node: str = ""  # node of the first failing step, or the batch node
    started: float | None = None  # the batch script was started
    tasks_running: float | None = None  # srun reported all tasks of a step started
    ended: float | None = None
    message: str = ""  # why, in words, when tide (not the script) ended the run

    @property
    def exit_code_str(self) -> str:
        return format_exit_code(self.exit_code, self.signal)

    def to_report(self) -> ExitReport:
        return ExitReport(self.job_id, self.exit_code, self.signal, self.reason, self.node)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "exit_code_str": self.exit_code_str}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExitRecord:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def read_exit(job_dir: Path) -> ExitRecord | None:
    data = read_json(job_dir / EXIT)
    return ExitRecord.from_json(data) if data is not None else None


def post_request(job_dir: Path, request: dict[str, Any]) -> None:
    """Queue a control request for the supervisor (it reads them in order)."""
    folder = job_dir / REQUESTS
    folder.mkdir(exist_ok=True)
    write_json_atomic(folder / f"{time.time_ns():020d}-{os.getpid()}.json", request)


def take_requests(job_dir: Path) -> list[dict[str, Any]]:
    """Pending requests, oldest first; each is removed once read."""
    folder = job_dir / REQUESTS
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and n[0] != ".")
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        data = read_json(folder / name)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(folder / name)
        if data is not None:
            out.append(data)
    return out


def cancel_pending(job_dir: Path) -> bool:
    """Is a cancel request waiting? (Read without taking it.)"""
    folder = job_dir / REQUESTS
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json") and n[0] != "."]
    except FileNotFoundError:
        return False
    return any((read_json(folder / n) or {}).get("op") == "cancel" for n in names)


def next_step_id(job_dir: Path) -> int:
    """Allocate the next step id (0, 1, ...) under a file lock: steps may start at once."""
    folder = job_dir / STEPS
    folder.mkdir(exist_ok=True)
    with open(folder / ".counter", "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read().strip()
        step = int(text) if text.isdigit() else 0
        f.seek(0)
        f.truncate()
        f.write(str(step + 1))
        f.flush()
    return step


def read_steps(job_dir: Path, skip: frozenset[str] | set[str] = frozenset()) -> list[dict]:
    """The step records, in order; `skip` names files (e.g. "0.json") not to read."""
    folder = job_dir / STEPS
    try:
        names = sorted(
            n for n in os.listdir(folder) if n.endswith(".json") and n[0] != "." and n not in skip
        )
    except FileNotFoundError:
        return []
    return [d for n in names if (d := read_json(folder / n)) is not None]
