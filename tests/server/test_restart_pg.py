"""State survives a controller restart (jobs keep running under their
supervisors), on SQLite and on PostgreSQL; the server runs on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from serverproc import DATA, STORES, ServerProc, job, store_args, submit, wait_state

pytestmark = pytest.mark.slow
TINY = ["--cluster", str(DATA / "tiny.yaml"), "--kill-wait", "2", "--bf-interval", "1"]


@pytest.mark.parametrize("store", STORES)
def test_restart_keeps_queue_tokens_and_running_jobs(tmp_path: Path, store: str) -> None:
    with store_args(store) as db:
        _restart_keeps_queue_tokens_and_running_jobs(tmp_path, [*TINY, *db])


def _restart_keeps_queue_tokens_and_running_jobs(tmp_path: Path, args: list[str]) -> None:
    srv = ServerProc(tmp_path / "data", args).start()
    work = tmp_path / "work"
    work.mkdir()
    try:
        with srv.client() as c:
            running = submit(c, "#!/bin/bash\nsleep 4\necho done\n", work).json()["job_id"]
            held = submit(c, "#!/bin/bash\ntrue\n", work, ["--hold"]).json()["job_id"]
            wait_state(c, running, {"RUNNING"})
        token = srv.admin_token
    finally:
        srv.stop()
    srv2 = ServerProc(tmp_path / "data", args).start()
    try:
        assert srv2.admin_token == token  # the same token still works
        with srv2.client() as c:
            assert job(c, held)["state"] == "PENDING" and job(c, held)["held"] == "user"
            j = wait_state(c, running, {"COMPLETED", "FAILED", "NODE_FAIL"}, timeout=30)
            assert j["state"] == "COMPLETED", j
            # ids continue after the highest one stored
            nxt = submit(c, "#!/bin/bash\ntrue\n", work, ["--hold"]).json()["job_id"]
            assert nxt > held
    finally:
        srv2.stop()
    assert (work / f"slurm-{running}.out").read_text().strip() == "done"


@pytest.mark.postgres
def test_server_on_postgresql(tmp_path: Path) -> None:
    with store_args("postgresql") as db:
        _server_on_postgresql(tmp_path, db)


def _server_on_postgresql(tmp_path: Path, db: list[str]) -> None:
    srv = ServerProc(tmp_path / "data", [*TINY, *db]).start()
    try:
        with srv.client() as c:
            info = c.get("/v1/cluster").json()
            assert info["store"].startswith("postgresql+psycopg://")
            jid = submit(c, "#!/bin/bash\necho pg\n", tmp_path, ["--gpus-per-node=1"]).json()
            j = wait_state(c, jid["job_id"], {"COMPLETED", "FAILED"})
            assert j["state"] == "COMPLETED" and j["gpus_alloc"] == 1
            bad = submit(c, "#!/bin/bash\n", tmp_path, ["--gpus-per-node=9"])
            assert bad.status_code == 400
            assert len(c.get("/v1/jobs", params={"all": "true"}).json()["jobs"]) == 1
    finally:
        srv.stop()
