"""One active controller per store, and a standby (issue 11, item 5).

A second server on a store another one holds refuses to start, naming the
holder, and touches none of the first one's agents or jobs. On PostgreSQL a
`--standby` server waits, and when the active one is killed (-9) it takes
over within 15 s, re-adopts the running jobs, and nothing is lost or run
twice.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from serverproc import DATA, ServerProc, store_args, submit, wait_for, wait_state

pytestmark = pytest.mark.slow

TINY = ["--cluster", str(DATA / "tiny.yaml"), "--kill-wait", "2", "--bf-interval", "1"]


def _counting_script(out: Path, seconds: int) -> str:
    """A job that appends one line per run to runs-<id>: a second run shows."""
    return f"#!/bin/sh\necho ran >> {out}/runs-$SLURM_JOB_ID\nsleep {seconds}\n"


def test_a_second_server_on_the_same_store_is_refused_and_harms_nothing(tmp_path: Path) -> None:
    first = ServerProc(tmp_path / "data", TINY).start()
    try:
        with first.client() as c:
            jid = submit(c, _counting_script(tmp_path, 6), tmp_path).json()["job_id"]
            wait_state(c, jid, {"RUNNING"})
            second = ServerProc(tmp_path / "data", TINY).spawn()
            assert second.proc is not None and second.proc.wait(timeout=120) == 1
            text = second.log.read_text()
            assert f"pid {first.proc.pid}" in text and "another tide server holds" in text, text
            nodes = c.get("/v1/nodes").json()["nodes"]
            assert all("DOWN" not in n["state"] for n in nodes), nodes
            assert wait_state(c, jid, {"COMPLETED", "FAILED"})["state"] == "COMPLETED"
    finally:
        first.stop()
    assert (tmp_path / f"runs-{jid}").read_text() == "ran\n"


@pytest.mark.postgres
def test_standby_takes_over_after_kill9_and_nothing_runs_twice(tmp_path: Path) -> None:
    with store_args("postgresql") as db:
        _standby_takes_over(tmp_path, [*TINY, *db])


def _standby_takes_over(tmp_path: Path, args: list[str]) -> None:
    active = ServerProc(tmp_path / "data", args).start()
    standby = ServerProc(tmp_path / "data", [*args, "--standby"]).spawn()
    try:
        with active.client() as c:
            long = submit(c, _counting_script(tmp_path, 15), tmp_path).json()["job_id"]
            short = [submit(c, _counting_script(tmp_path, 1), tmp_path, ["-p", "cpu"]).json()
                     for _ in range(6)]  # fmt: skip
            wait_state(c, long, {"RUNNING"})
        wait_for("the standby waiting", lambda: "standby: waiting" in standby.log.read_text(),
                 timeout=120)  # fmt: skip
        assert standby.proc is not None and standby.proc.poll() is None
        assert active.proc is not None
        os.kill(active.proc.pid, signal.SIGKILL)
        active.proc.wait()
        t0 = time.time()
        standby.wait_up(timeout=60)
        took = time.time() - t0
        assert took < 15, f"the standby served after {took:.1f} s"
        with standby.client(active.admin_token) as c:
            ids = [long, *(s["job_id"] for s in short)]
            for jid in ids:
                assert wait_state(c, jid, {"COMPLETED"}, timeout=120)["state"] == "COMPLETED"
            assert len(c.get("/v1/jobs", params={"all": "true"}).json()["jobs"]) == len(ids)
        for jid in ids:
            assert (tmp_path / f"runs-{jid}").read_text() == "ran\n", jid
    finally:
        standby.stop()
        active.stop()
