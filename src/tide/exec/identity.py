"""Who a job runs as: an OS identity, and how a process becomes it.

As slurmd starts every job as its submitter, an executor running as root
starts each job's supervisor (and so the batch script, srun and every task)
under the job's OS user: its uid, primary gid, supplementary groups (as
initgroups(3) gives them), HOME, USER/LOGNAME and the umask the user had at
submit (SLURM_UMASK, as sbatch sends it). An executor that is not root runs
every job as itself (single-user mode, docs/security.md), and refuses a job
for another OS user instead of running it under the wrong identity.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_UMASK = 0o022
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class IdentityError(Exception):
    """A job cannot run as the OS user it names; the message says why and the fix."""


@dataclass(slots=True, frozen=True)
class Identity:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]  # supplementary groups, the primary one included
    home: str
    shell: str


def lookup(name: str) -> Identity:
    """The OS user `name` with its groups; IdentityError when there is none."""
    try:
        pw = pwd.getpwnam(name)
    except (KeyError, ValueError):
        raise IdentityError(
            f"there is no OS user {name!r} on this host; create it (useradd {name}) "
            "or map the tide user to an existing one (user_map in the cluster file)"
        ) from None
    try:
        groups = tuple(os.getgrouplist(pw.pw_name, pw.pw_gid))
    except OSError:
        groups = (pw.pw_gid,)
    return Identity(pw.pw_name, pw.pw_uid, pw.pw_gid, groups, pw.pw_dir, pw.pw_shell or "/bin/sh")


def exists(name: str) -> bool:
    """Is there an OS user `name`? (No group lookup: cheap enough for every submit.)"""
    try:
        pwd.getpwnam(name)
    except (KeyError, ValueError):
        return False
    return True


def current() -> Identity:
    """The identity this process runs as (effective uid)."""
    uid = os.geteuid()
    try:
        pw = pwd.getpwuid(uid)
    except KeyError:  # a container's uid with no passwd entry
        return Identity(str(uid), uid, os.getegid(), tuple(os.getgroups()), "/", "/bin/sh")
    return Identity(pw.pw_name, uid, pw.pw_gid, tuple(os.getgroups()), pw.pw_dir, pw.pw_shell)


def is_root() -> bool:
    return os.geteuid() == 0


def for_job(os_user: str) -> Identity | None:
    """The identity a job naming `os_user` runs as; None: as this process is.

    "" means "as the executor's own user" (single-user mode). Another user needs
    root; without it the job is refused, never run as the wrong user."""
    if not os_user:
        return None
    me = current()
    if os_user == me.name:
        return None
    if not is_root():
        raise IdentityError(
            f"cannot run a job as OS user {os_user!r}: this executor runs as {me.name!r}, "
            "not as root; run the tide server (or node agent) as root to run jobs as their "
            "users, or in single-user mode"
        )
    return lookup(os_user)


def umask_of(env: Mapping[str, str]) -> int:
    """SLURM_UMASK (octal, as sbatch records it at submit), else 022."""
    text = env.get("SLURM_UMASK", "").strip()
    try:
        value = int(text, 8) if text else DEFAULT_UMASK
    except ValueError:
        return DEFAULT_UMASK
    return value if 0 <= value <= 0o777 else DEFAULT_UMASK


def popen_args(ident: Identity, umask: int) -> dict[str, Any]:
    """subprocess.Popen arguments that start the child as `ident`: groups first,
    then gid, then uid (the order setgroups/setgid/setuid need), and its umask."""
    return {
        "user": ident.uid,
        "group": ident.gid,
        "extra_groups": list(ident.groups),
        "umask": umask,
    }


def own(path: os.PathLike[str] | str, ident: Identity) -> None:
    """Give `path` (not a link it might be) to `ident`."""
    os.chown(path, ident.uid, ident.gid, follow_symlinks=False)


def current_umask() -> int:
    """This process's umask (reading it means setting it: set back at once)."""
    mask = os.umask(DEFAULT_UMASK)
    os.umask(mask)
    return mask


def open_to_all(path: str) -> bool:
    """Can any user reach `path`: every directory on its real path searchable by
    others, and the file itself executable (a program) or readable (a directory
    of modules) by them? A conservative test: group rights are not counted."""
    try:
        real = os.path.realpath(path)
        mode = os.stat(real).st_mode
        if not mode & (stat.S_IXOTH if stat.S_ISREG(mode) else stat.S_IROTH | stat.S_IXOTH):
            return False
        parent = os.path.dirname(real)
        while True:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
            if parent == os.path.dirname(parent):
                return True
            parent = os.path.dirname(parent)
    except OSError:
        return False


def python_for_users(preferred: str, tide_dir: str) -> str:
    """The interpreter jobs of other users run tide's supervisor and srun with:
    `preferred` when every user can run it, else the system's python3 (3.11 or
    newer, like tide). IdentityError says what to install when neither works."""
    if not open_to_all(tide_dir):
        raise IdentityError(
            f"tide is installed in {tide_dir}, which other users cannot read, so jobs "
            "cannot run as their users; install tide where every user can read it "
            "(e.g. pip install into /opt/tide)"
        )
    if open_to_all(preferred):
        return preferred
    system = shutil.which("python3", path=_SYSTEM_PATH)
    if system and open_to_all(system) and _version_ok(system):
        return system
    raise IdentityError(
        f"other users cannot run {preferred} (a private directory on its path) and "
        "there is no system python3 3.11 or newer; install tide with a Python every "
        "user can run"
    )


def _version_ok(python: str) -> bool:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; sys.exit(sys.version_info < (3, 11))"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
