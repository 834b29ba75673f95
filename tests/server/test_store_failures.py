"""A full disk and an unavailable database, provoked for real against a real
server (issue 11 item 3): a submission gets a JSON 507 / 503 that says nothing
was stored, no half-written job appears, and the server serves again once
the disk has room or the database lets it back in."""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serverproc import DATA, ServerProc, submit

from conftest import _PG

pytestmark = pytest.mark.slow
TINY = ["--cluster", str(DATA / "tiny.yaml"), "--kill-wait", "2", "--bf-interval", "1"]
HELD = ["--hold"]
BIG = "#!/bin/sh\n" + ("# " + "x" * 1000 + "\n") * 2048 + "true\n"  # 2 MB: new pages for sure


def _ids(c: httpx.Client) -> set[int]:
    r = c.get("/v1/jobs", params={"all": "true"})
    r.raise_for_status()
    return {j["id"] for j in r.json()["jobs"]}


def _batch(c: httpx.Client, script: str, cwd: Path) -> httpx.Response:
    item = {"script": script, "argv": HELD, "cwd": str(cwd), "env": {"PATH": "/usr/bin:/bin"}}
    return c.post("/v1/jobs/batch", json={"jobs": [item, item]})


def _is_json_error(r: httpx.Response, status: int, words: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert words in body["error"] and "nothing was stored" in body["error"] and body["fix"], body
    return body


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 32 MB tmpfs of our own (root only): its space can run out for real."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill (needs root): {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(disk: Path) -> Path:
    """Take every free byte of `disk`; returns the file holding them."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_is_a_json_507_and_stores_nothing(small_disk: Path, tmp_path: Path) -> None:
    srv = ServerProc(small_disk / "data", TINY)
    srv.log = tmp_path / "server.log"  # the log must not need the full disk
    srv.start()
    work = tmp_path / "work"
    work.mkdir()
    try:
        with srv.client() as c:
            first = submit(c, "#!/bin/sh\ntrue\n", work, HELD)
            assert first.status_code == 201, first.text
            before = _ids(c)
            filler = _fill(small_disk)
            _is_json_error(submit(c, BIG, work, HELD), 507, "disk is full")
            _is_json_error(_batch(c, BIG, work), 507, "disk is full")
            assert _ids(c) == before  # no half-written job
            filler.unlink()
            again = submit(c, BIG, work, HELD)
            assert again.status_code == 201, again.text
            assert _ids(c) == before | {again.json()["job_id"]}
    finally:
        srv.stop()


@pytest.mark.postgres
def test_an_unavailable_database_is_a_json_503_and_stores_nothing(tmp_path: Path) -> None:
    """The server's database role may no longer log in and its open sessions are
    cut (pg_terminate_backend), the controller's lock session aside: requests
    get a JSON 503; once it may log in again, the server serves."""
    if _PG is None:
        pytest.skip("PostgreSQL not reachable at 127.0.0.1:5432 (database 'test')")
    import psycopg

    role, schema = "tide_r_" + uuid.uuid4().hex[:8], "t503_" + uuid.uuid4().hex[:8]
    admin = psycopg.connect(_PG, autocommit=True)
    admin.execute(f'CREATE ROLE "{role}" LOGIN')
    admin.execute(f'CREATE SCHEMA "{schema}" AUTHORIZATION "{role}"')
    host = _PG.split("@", 1)[1]
    url = f"postgresql://{role}@{host}?options=-csearch_path%3D{schema}"
    srv = ServerProc(tmp_path / "data", [*TINY, "--db", url])
    work = tmp_path / "work"
    work.mkdir()
    try:
        srv.start()
        with srv.client() as c:
            assert submit(c, "#!/bin/sh\ntrue\n", work, HELD).status_code == 201
            before = _ids(c)
            admin.execute(f'ALTER ROLE "{role}" NOLOGIN')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE usename = %s AND application_name NOT LIKE 'tide-server%%'",
                (role,),
            )
            _is_json_error(submit(c, "#!/bin/sh\ntrue\n", work, HELD), 503, "unavailable")
            _is_json_error(_batch(c, "#!/bin/sh\ntrue\n", work), 503, "unavailable")
            admin.execute(f'ALTER ROLE "{role}" LOGIN')
            assert _ids(c) == before  # no half-written job
            again = submit(c, "#!/bin/sh\ntrue\n", work, HELD)
            assert again.status_code == 201, again.text
    finally:
        srv.stop()
        admin.execute(f'ALTER ROLE "{role}" LOGIN')
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
        )
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        admin.execute(f'DROP ROLE "{role}"')
        admin.close()
