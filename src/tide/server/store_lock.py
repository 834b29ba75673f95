"""One active controller per store (slurmctld's state-save lock, and its backup).

Two controllers on one store would hand out the same job ids and kill each
other's node agents. The controller therefore holds, for its whole life:

* an exclusive `flock` on DATA_DIR/controller.lock (the data dir holds the
  SQLite store, the tokens and the executor's agents and supervisors), with
  the holder written in it: pid, host, port, start time;
* on PostgreSQL, also a session advisory lock keyed on the store (database
  and schema), on a connection whose application_name names the holder.

Both go away with the process, even on kill -9 (the kernel drops the flock,
PostgreSQL ends the session), so a standby (`tide server --standby`) that
waits for them takes over as soon as the active controller dies.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import time
from pathlib import Path
from typing import Any

POLL = 0.5  # seconds between a standby's tries


class StoreBusy(RuntimeError):
    """Another controller holds the store; the message names it."""


class StoreLock:
    def __init__(self, data_dir: Path, db_url: str, host: str, port: int) -> None:
        self.path = data_dir / "controller.lock"
        self.db_url = db_url
        self.me = f"pid {os.getpid()} on {socket.gethostname()}, port {port} ({host})"
        self._fd: int | None = None
        self._pg: Any = None

    def acquire(self, standby: bool = False, log: Any = None) -> None:
        """Take both locks; StoreBusy (naming the holder) if another controller
        has one, or with standby=True wait until it is gone."""
        said = ""
        while True:
            try:
                self._try()
                return
            except StoreBusy as e:
                if not standby:
                    raise
                if log is not None and str(e) != said:
                    log(f"standby: waiting to take over the store ({e})")
                    said = str(e)
                time.sleep(POLL)

    def release(self) -> None:
        if self._pg is not None:
            self._pg.close()
            self._pg = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _try(self) -> None:
        if self._fd is None:
            self._fd = self._flock()
        if _is_postgres(self.db_url) and self._pg is None:
            self._pg = self._advisory()

    def _flock(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreBusy(
                f"another tide server holds {self.path.parent}: {holder}; stop it first "
                "(tide server --standby waits for it instead, on PostgreSQL)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{self.me}, since {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
        return fd

    def _advisory(self) -> Any:
        import psycopg

        a, b = _keys(self.db_url)
        conn = psycopg.connect(
            _plain(self.db_url), autocommit=True, application_name=f"tide-server {self.me}"[:63]
        )
        got = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (a, b)).fetchone()
        if got and got[0]:
            return conn
        row = conn.execute(
            "SELECT a.application_name, a.client_addr, a.pid FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
            "AND l.classid = %s::oid AND l.objid = %s::oid AND l.granted",
            (a & 0xFFFFFFFF, b & 0xFFFFFFFF),
        ).fetchone()
        conn.close()
        holder = f"{row[0]} (backend {row[2]}, from {row[1] or 'local'})" if row else "unknown"
        raise StoreBusy(f"another tide server holds the PostgreSQL store: {holder}")


def _is_postgres(url: str) -> bool:
    return url.startswith(("postgresql", "postgres:"))


def _plain(url: str) -> str:
    """psycopg takes postgresql:// (not SQLAlchemy's +psycopg)."""
    return "postgresql://" + url.split("://", 1)[1]


def _keys(url: str) -> tuple[int, int]:
    """Two signed 32-bit keys from the store's identity (URL less the password)."""
    rest = url.split("://", 1)[1]
    if "@" in rest:
        cred, _, rest = rest.rpartition("@")
        rest = cred.split(":", 1)[0] + "@" + rest
    digest = hashlib.sha256(("tide-store:" + rest).encode()).digest()
    a, b = int.from_bytes(digest[:4], "big"), int.from_bytes(digest[4:8], "big")
    return a - (1 << 31), b - (1 << 31)
