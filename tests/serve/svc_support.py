"""Helpers shared by the service tests (here and in tests/exec_ray)."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


def delete_all(srv: object, timeout: float = 60.0) -> None:
    """Delete every service and wait until its replicas are gone (they are jobs
    under supervisors that would outlive the server)."""
    with srv.client() as c:  # type: ignore[attr-defined]
        for s in c.get("/v1/services").json()["services"]:
            c.delete(f"/v1/services/{s['name']}")
        deadline = time.time() + timeout
        while time.time() < deadline and c.get("/v1/services").json()["services"]:
            time.sleep(0.2)
        for j in c.get("/v1/jobs", params={"state": "PENDING,RUNNING"}).json()["jobs"]:
            c.post(f"/v1/jobs/{j['job_id']}/cancel")


@contextmanager
def pooled_server(d: Path, cluster_yaml: str) -> Iterator[Any]:
    """A server on tests/serve/data/`cluster_yaml` with a work dir (srv.work); its
    services and their routers are gone afterwards."""
    from serverproc import ServerProc

    cluster = str(HERE / "data" / cluster_yaml)
    srv = ServerProc(d / "data", ["--cluster", cluster, "--kill-wait", "2"]).start()
    srv.work = d / "work"  # type: ignore[attr-defined]
    srv.work.mkdir()  # type: ignore[attr-defined]
    try:
        yield srv
    finally:
        try:
            delete_all(srv)
        finally:
            srv.stop()
            kill_routers(d / "data")
