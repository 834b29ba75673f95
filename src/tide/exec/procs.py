"""The process table, read from Linux /proc: who belongs to a job, who is alive.

A job's processes are found three ways, so nothing is orphaned:
descendants of its supervisor (which is a child subreaper, so orphans are
reparented to it), members of the supervisor's session, and, as the last
resort when the supervisor itself is gone, processes whose environment holds
the job's TIDE_JOB_DIR. On systems without /proc the table is empty and
callers fall back to the process groups they know.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass

_PROC = "/proc"
HAVE_PROC = os.path.isdir(f"{_PROC}/self")


@dataclass(slots=True, frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str  # "R", "S", "Z", ...

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def _parse_stat(pid: int, text: str) -> ProcInfo | None:
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    rest = text[text.rfind(")") + 2 :].split()
    if len(rest) < 4:
        return None
    return ProcInfo(pid, int(rest[1]), int(rest[2]), int(rest[3]), rest[0])


def proc_info(pid: int) -> ProcInfo | None:
    try:
        with open(f"{_PROC}/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return _parse_stat(pid, f.read())
    except OSError:
        return None


def process_table() -> dict[int, ProcInfo]:
    """Every visible process by pid ({} where /proc is unavailable)."""
    table: dict[int, ProcInfo] = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return table
    for name in names:
        if name.isdigit() and (info := proc_info(int(name))) is not None:
            table[info.pid] = info
    return table


def job_processes(root: int, table: dict[int, ProcInfo]) -> list[ProcInfo]:
    """Live processes of the job supervised by `root`: its descendants and session."""
    children: dict[int, list[int]] = {}
    for p in table.values():
        children.setdefault(p.ppid, []).append(p.pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    root_info = table.get(root)
    if root_info is not None:
        found.update(p.pid for p in table.values() if p.sid == root_info.sid)
    found.discard(root)
    return [table[pid] for pid in sorted(found) if not table[pid].zombie]


def stopped(pid: int) -> bool:
    """True when `pid` is stopped (SIGSTOP, or traced)."""
    info = proc_info(pid)
    return info is not None and info.state in ("T", "t")


def is_alive(pid: int) -> bool:
    """True when `pid` exists and is not a zombie."""
    info = proc_info(pid)
    if info is not None:
        return not info.zombie
    if os.path.isdir(_PROC):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"{_PROC}/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def pids_with_args(*args: str, uid: int | None = None) -> list[int]:
    """Live processes (of `uid` only, when given) whose command line holds every
    one of `args`."""
    found = []
    for pid, info in process_table().items():
        if info.zombie or pid == os.getpid() or (uid is not None and owner(pid) != uid):
            continue
        argv = cmdline(pid)
        if argv and all(a in argv for a in args):
            found.append(pid)
    return found


def owner(pid: int) -> int | None:
    """The uid a process runs as (its /proc entry's owner), None if it is gone."""
    try:
        return os.stat(f"{_PROC}/{pid}").st_uid
    except OSError:
        return None


def environ(pid: int, keys: Iterable[str]) -> dict[str, str]:
    """The values of `keys` in a process's environment ({} if unreadable or gone)."""
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    wanted = {k.encode() + b"=": k for k in keys}
    out = {}
    for item in raw.split(b"\0"):
        for prefix, key in wanted.items():
            if item.startswith(prefix):
                out[key] = item[len(prefix) :].decode(errors="replace")
    return out


def pids_with_env(key: str, value: str, uid: int | None = None) -> list[int]:
    """Processes (of this user; of `uid` only, when given) whose environment has
    key=value exactly. Root sees every user's: `uid` keeps a sweep to the job's."""
    needle = f"{key}={value}".encode()
    found = []
    for pid in process_table():
        if uid is not None and owner(pid) != uid:
            continue
        try:
            with open(f"{_PROC}/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue  # another user's process, or gone
        if needle in env and pid != os.getpid():
            found.append(pid)
    return found


def kill_quietly(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def killpg_quietly(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        kill_quietly(pid, sig)


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux PR_SET_CHILD_SUBREAPER); False if unsupported."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # 36 = PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def parse_signal(text: str) -> int:
    """ "USR1", "SIGUSR1", "usr1" or "10" -> 10; ValueError names the bad value."""
    t = text.strip().upper()
    if t.isdigit():
        return int(t)
    name = t if t.startswith("SIG") else f"SIG{t}"
    try:
        return int(signal.Signals[name])
    except KeyError:
        raise ValueError(
            f"unknown signal {text!r}: use a name like USR1 or TERM, or a number like 10"
        ) from None


def reset_signals_in_child() -> None:
    """For preexec_fn: a fresh process starts with default dispositions, nothing blocked.

    Our parents may ignore or block signals (a shell's `&` ignores INT and QUIT,
    srun blocks the ones it waits for), and both survive exec.
    """
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def machine_cpus() -> list[int]:
    """The CPUs virtual nodes share: those this (unpinned) process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def cpus_for(cores: Iterable[int], cpus: list[int]) -> set[int]:
    """Map a node's core ids onto this machine's CPUs (id modulo their count)."""
    return {cpus[c % len(cpus)] for c in cores} if cpus else set()


def pin(cores: Iterable[int], cpus: list[int]) -> None:
    """Pin the calling process to a node's `cores`, best effort.

    Virtual nodes share this machine's CPUs, so pinning cannot isolate them;
    it keeps a job's processes on as many distinct CPUs as it was given.
    Where the OS has no affinity call, or refuses, nothing happens.
    """
    wanted = cpus_for(cores, cpus)
    if wanted and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, wanted)
