"""Start a real tide server (a subprocess running uvicorn) for tests, on SQLite
or on PostgreSQL (`store_args`: each server its own schema)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest

DATA = Path(__file__).with_name("data")

# --- the store a server runs on ----------------------------------------------------

PG_URL = os.environ.get("TIDE_TEST_PG", "postgresql://{user}@127.0.0.1:5432/test")
PG_MISSING = (
    f"PostgreSQL not reachable at {PG_URL.format(user='{postgres,root}')} (trust auth);"
    " set TIDE_TEST_PG=postgresql://USER@HOST:PORT/DB to point elsewhere"
)
# Parametrize a test (or, indirectly, a server fixture) over both stores; the
# PostgreSQL case is marked `postgres` and skipped, saying why, where PG is absent.
STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@cache
def pg_url() -> str | None:
    """The URL of the first user that can log in to PG_URL's database, or None."""
    try:
        import psycopg
    except ImportError:
        return None
    for user in ("postgres", "root"):
        url = PG_URL.format(user=user)
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return url
        except Exception:
            continue
    return None


@contextmanager
def pg_schema(prefix: str = "t") -> Iterator[tuple[str, str]]:
    """(url, schema): a fresh PostgreSQL schema, dropped afterwards, so tests that
    run at the same time (pytest -n) never share tables. Skips where PG is absent."""
    url = pg_url()
    if url is None:
        pytest.skip(PG_MISSING)
    import psycopg

    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield url, schema
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@contextmanager
def store_args(store: str) -> Iterator[list[str]]:
    """`tide server` arguments for `store` ("sqlite": none, the data dir's file;
    "postgresql": --db on a schema of its own, dropped when the block ends)."""
    if store == "sqlite":
        yield []
        return
    if store != "postgresql":
        raise ValueError(f"store {store!r}: use 'sqlite' or 'postgresql'")
    with pg_schema("srv") as (url, schema):
        yield ["--db", f"{url}?options=-csearch_path%3D{schema}"]


class PortTaken(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The suite's servers run every tide user's jobs as the test's own OS user (one
# trust domain): tests submit as alice and bob, who have no OS accounts. The tests
# of jobs run as their users (tests/server/test_security_users.py) pass
# per_user=True and make real users.
SINGLE_USER = ["--single-user", "--any-user"]


class ServerProc:
    def __init__(
        self,
        data_dir: Path,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
        per_user: bool = False,
    ) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [*(args or []), *([] if per_user else SINGLE_USER)]
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir / "server.log"

    def start(self, timeout: float = 120.0) -> ServerProc:
        """Start and wait for /v1/ping; a port taken meanwhile means another try."""
        for _ in range(3):
            try:
                return self._start(timeout)
            except PortTaken:
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}"
        return self._start(timeout)

    def _start(self, timeout: float) -> ServerProc:
        self.spawn()
        return self.wait_up(timeout)

    def spawn(self) -> ServerProc:
        """Start the process without waiting for it (a standby waits for its store)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "tide.server",
            "--data-dir",
            str(self.data_dir),
            "--port",
            str(self.port),
            "--log-level",
            "warning",
            *self.args,
        ]
        env = {**os.environ, **self.env}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env)
        return self

    def wait_up(self, timeout: float = 120.0) -> ServerProc:
        """Wait for /v1/ping; the process ending first is an error (PortTaken for a port)."""
        assert self.proc is not None
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                text = self.log.read_text()[-3000:]
                if "address already in use" in text:
                    self.log.unlink()
                    raise PortTaken(text)
                raise RuntimeError(f"server exited: {text}")
            try:
                if httpx.get(self.url + "/v1/ping", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not start: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    @property
    def admin_token(self) -> str:
        return (self.data_dir / "admin.token").read_text().strip()

    def client(self, token: str | None = None) -> httpx.Client:
        tok = self.admin_token if token is None else token
        headers = {"Authorization": f"Bearer {tok}"} if tok else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def submit(
    c: httpx.Client, script: str, cwd: Path, argv: list[str] | None = None, **extra: Any
) -> httpx.Response:
    body = {
        "script": script,
        "argv": argv or [],
        "cwd": str(cwd),
        "env": {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
        },
    }
    body.update(extra)
    return c.post("/v1/jobs", json=body)


def job(c: httpx.Client, job_id: str | int) -> dict[str, Any]:
    r = c.get(f"/v1/jobs/{job_id}")
    r.raise_for_status()
    return r.json()["jobs"][0]


def wait_for(what: str, cond: Any, timeout: float = 30.0) -> Any:
    """cond()'s first truthy value, polled every 0.1 s; fails naming `what`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def wait_state(
    c: httpx.Client, job_id: str | int, states: set[str], timeout: float = 60.0
) -> dict[str, Any]:
    deadline = time.time() + timeout
    j: dict[str, Any] = {}
    while time.time() < deadline:
        j = job(c, job_id)
        if j["state"] in states:
            return j
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} is {j.get('state')} ({j.get('reason')}), not {states}")
