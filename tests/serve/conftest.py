"""Fixtures for the service tests: a real server on the tiny cluster."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

HERE = Path(__file__).resolve().parent
REPLICA = HERE / "replica_app.py"


def kill_routers(data_dir: Path) -> None:
    """Routers outlive the server on purpose; tests must not leave them behind."""
    for state in (data_dir / "services").glob("*/router.json"):
        try:
            pid = int(json.loads(state.read_text())["pid"])
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError, KeyError):
            pass


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A server on tests/server/data/tiny.yaml with tokens for alice, bob and oscar
    (operator); `work` is a scratch directory for replicas."""
    from serverproc import DATA, ServerProc

    d = tmp_path_factory.mktemp("svc")
    srv = ServerProc(
        d / "data", ["--cluster", str(DATA / "tiny.yaml"), "--kill-wait", "2", "--bf-interval", "1"]
    ).start()
    try:
        with srv.client() as admin:
            admin.post(
                "/v1/users",
                json={"name": "oscar", "admin_level": "Operator", "accounts": ["physics"]},
            ).raise_for_status()
            srv.tokens = {}  # type: ignore[attr-defined]
            for user in ("alice", "bob", "oscar"):
                r = admin.post("/v1/tokens", json={"user": user, "name": "test"})
                r.raise_for_status()
                srv.tokens[user] = r.json()["token"]  # type: ignore[attr-defined]
        srv.work = d / "work"  # type: ignore[attr-defined]
        srv.work.mkdir()  # type: ignore[attr-defined]
        yield srv
    finally:
        try:
            delete_all(srv)
        finally:
            srv.stop()
            kill_routers(d / "data")


def delete_all(srv: object, timeout: float = 60.0) -> None:
    """Delete every service and wait until its replicas are gone (they are jobs
    under supervisors that would outlive the server)."""
    import time

    with srv.client() as c:  # type: ignore[attr-defined]
        for s in c.get("/v1/services").json()["services"]:
            c.delete(f"/v1/services/{s['name']}")
        deadline = time.time() + timeout
        while time.time() < deadline and c.get("/v1/services").json()["services"]:
            time.sleep(0.2)
        for j in c.get("/v1/jobs", params={"state": "PENDING,RUNNING"}).json()["jobs"]:
            c.post(f"/v1/jobs/{j['job_id']}/cancel")
