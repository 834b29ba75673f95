"""Fixtures for the service tests: a real server on the tiny cluster."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from svc_support import delete_all, kill_routers


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
