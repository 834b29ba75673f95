"""Real OS users for the tests of jobs that run as their users (docs/security.md).

`useradd` needs root (CI runs as root); elsewhere the tests that need users
skip with a message saying so. Every user gets a unique name and a home in a
fresh directory, and is removed (with its group, home and any process left)
when the test ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tide.exec import identity, procs


def need_root() -> None:
    """Skip unless users can be made here: root and useradd on Linux."""
    if not sys.platform.startswith("linux"):
        pytest.skip("jobs run as their users on Linux only")
    if os.geteuid() != 0:
        pytest.skip("creating OS users (useradd) and running jobs as them needs root (CI is root)")
    missing = [t for t in ("useradd", "userdel", "groupadd", "groupdel") if not shutil.which(t)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not found: install the passwd package")


def shared_dir(prefix: str) -> Path:
    """A fresh directory every user can pass through (pytest's tmp_path is root's 0700)."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    d.chmod(0o711)
    return d


def _admin(cmd: list[str], check: bool = True, uid: int = -1) -> None:
    """useradd & co. refuse while another one holds /etc/passwd's lock (tests run
    in parallel), and userdel while the user still runs a process (a SIGKILL
    takes a moment): try again for a while, killing `uid`'s processes first."""
    for _ in range(100):
        _kill_processes_of(uid)
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        text = (done.stderr + done.stdout).lower()
        if done.returncode == 0 or ("lock" not in text and "currently used" not in text):
            break
        time.sleep(0.2)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")


@contextlib.contextmanager
def os_group() -> Iterator[str]:
    name = f"tg{uuid.uuid4().hex[:10]}"
    _admin(["groupadd", name])
    try:
        yield name
    finally:
        _admin(["groupdel", name], check=False)


@contextlib.contextmanager
def os_user(groups: tuple[str, ...] = ()) -> Iterator[identity.Identity]:
    """A new OS user (own group, home under /tmp, /bin/sh), removed afterwards."""
    need_root()
    name = f"tu{uuid.uuid4().hex[:10]}"
    home = shared_dir("tide-home-") / name
    cmd = ["useradd", "-m", "-d", str(home), "-s", "/bin/sh", "-U", name]
    if groups:
        cmd += ["-G", ",".join(groups)]
    _admin(cmd)
    try:
        ident = identity.lookup(name)
        _check_interpreter(ident)
        yield ident
    finally:
        uid = identity.lookup(name).uid if _exists(name) else -1
        _admin(["userdel", name], check=False, uid=uid)
        shutil.rmtree(home.parent, ignore_errors=True)


def _exists(name: str) -> bool:
    try:
        identity.lookup(name)
    except identity.IdentityError:
        return False
    return True


def _kill_processes_of(uid: int) -> None:
    """Whatever a test user left running (one by one, by pid)."""
    if uid <= 0:
        return
    for pid in procs.process_table():
        if procs.owner(pid) == uid:
            procs.kill_quietly(pid, signal.SIGKILL)


def _check_interpreter(ident: identity.Identity) -> None:
    """The user must be able to run this Python and import tide (the supervisor
    runs as them); an installation under a private directory cannot be."""
    try:
        python = identity.python_for_users(sys.executable, str(Path(identity.__file__).parents[2]))
    except identity.IdentityError as e:
        pytest.skip(f"jobs cannot run as OS users here: {e}")
    done = subprocess.run(
        [python, "-c", "import tide.exec.supervisor"],
        cwd="/",
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(identity.__file__).parents[2])},
        capture_output=True,
        check=False,
        **identity.popen_args(ident, 0o022),
    )
    if done.returncode != 0:
        pytest.skip(
            f"OS user {ident.name} cannot run {python} with tide "
            f"({done.stderr.decode(errors='replace').strip()[-200:]}); install tide where "
            "every user can read it"
        )


def run_as(ident: identity.Identity, argv: list[str], **kw: object) -> subprocess.CompletedProcess:
    """A command as `ident` (what a job's process could do)."""
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        argv, capture_output=True, text=True, check=False, cwd="/",
        **identity.popen_args(ident, 0o022), **kw,
    )  # fmt: skip
