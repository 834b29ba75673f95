"""Helpers shared by the service tests (here and in tests/exec_ray)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

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
