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

When jobs run as their users (docs/security.md) the directory belongs to the
job's OS user, and the controller, as root, still reads and writes some of
it. So nothing here trusts what it finds: documents are read only from
regular files, never through a symbolic link, never without bound, and never
by opening a FIFO that could block the reader; files are written through an
exclusive new temp file (a planted link cannot redirect the write) and a
rename in a directory opened without following links.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import stat
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


MAX_DOCUMENT = 1 << 20  # bytes: larger "documents" are refused, not read
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _write_in(dir_fd: int | None, folder: Path, name: str, data: bytes) -> None:
    """Write `name` atomically: a fresh temp file (O_EXCL: never an existing file
    or link), fsync, rename over the name."""
    tmp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    where = tmp if dir_fd is not None else str(folder / tmp)
    fd = os.open(where, _NEW, 0o644, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if dir_fd is not None:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            os.replace(folder / tmp, folder / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(where, dir_fd=dir_fd)
        raise


def _encode(data: Any) -> bytes:
    return json.dumps(data, indent=1, sort_keys=True).encode("utf-8")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON so readers never see a half-written file."""
    _write_in(None, path.parent, path.name, _encode(data))


def read_bytes(path: Path | str, limit: int = MAX_DOCUMENT, dir_fd: int | None = None) -> bytes:
    """A regular file's bytes (at most `limit`): OSError for a link, a FIFO, a
    device, a directory or a bigger file."""
    fd = os.open(path, _READ, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{path}: larger than {limit} bytes")
    return data


def read_json(path: Path, dir_fd: int | None = None) -> dict[str, Any] | None:
    """The document at `path`, or None when it is missing, unreadable or not one."""
    try:
        data = json.loads(read_bytes(path, dir_fd=dir_fd))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextlib.contextmanager
def open_folder(path: Path) -> Any:
    """A directory's fd, opened without following a link (None if it is not one)."""
    try:
        fd = os.open(path, _DIR)
    except OSError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def write_pid(path: Path, pid: int) -> None:
    _write_in(None, path.parent, path.name, f"{pid}\n".encode("ascii"))


def read_pid(path: Path) -> int | None:
    try:
        text = read_bytes(path, 64).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
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
        """Typed fields only: the file may have been written by the job's own user,
        so a wrong type becomes the default, never an error in the controller."""
        known = {k: v for k, v in data.items() if k in _EXIT_TYPES}
        out: dict[str, Any] = {}
        for k, v in known.items():
            kind = _EXIT_TYPES[k]
            if kind is float:
                ok = isinstance(v, int | float) and not isinstance(v, bool) and v == v
                out[k] = float(v) if ok and abs(v) < 1e12 else None
            elif kind is int:
                ok = isinstance(v, int) and not isinstance(v, bool)
                out[k] = v if ok and -(2**31) < v < 2**31 else 0
            else:
                out[k] = v[:1000] if isinstance(v, str) else ""
        out.setdefault("job_id", 0)
        out.setdefault("exit_code", 0)
        return cls(**out)


_EXIT_TYPES: dict[str, type] = {
    "job_id": int,
    "exit_code": int,
    "signal": int,
    "reason": str,
    "node": str,
    "started": float,
    "tasks_running": float,
    "ended": float,
    "message": str,
}


def read_exit(job_dir: Path) -> ExitRecord | None:
    """The exit record; its job is the directory's (the file may be the job user's)."""
    data = read_json(job_dir / EXIT)
    if data is None:
        return None
    rec = ExitRecord.from_json(data)
    if job_dir.name.isdigit():
        rec.job_id = int(job_dir.name)
    return rec


def post_request(job_dir: Path, request: dict[str, Any]) -> None:
    """Queue a control request for the supervisor (it reads them in order).

    The controller writes here as root into a directory the job's user owns:
    `requests` is opened without following a link, and the file is new."""
    folder = job_dir / REQUESTS
    made = False
    with contextlib.suppress(FileExistsError):
        folder.mkdir()
        made = True
    with open_folder(folder) as fd:
        if fd is None:
            raise OSError(f"{folder} is not a directory")
        if made:  # the supervisor must be able to take (unlink) requests: its user's
            owner = os.lstat(job_dir)
            if owner.st_uid != os.geteuid():
                os.fchown(fd, owner.st_uid, owner.st_gid)
        name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(2)}.json"
        _write_in(fd, folder, name, _encode(request))


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
        with contextlib.suppress(OSError):
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
    with open_folder(job_dir / STEPS) as fd:
        if fd is None:
            return []
        names = sorted(
            n for n in os.listdir(fd) if n.endswith(".json") and n[0] != "." and n not in skip
        )
        return [d for n in names if (d := read_json(Path(n), dir_fd=fd)) is not None]
