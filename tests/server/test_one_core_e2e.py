"""One core, both worlds, on a real server (issue 13): `tide server --policy`
runs the twin's policy object, and time wakes the scheduler: a job's begin
time takes effect at once, not at the next periodic pass (here 10 minutes
apart, so only the core's own wake can start it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serverproc import DATA, ServerProc, job, submit, wait_state

pytestmark = pytest.mark.slow
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    d = tmp_path_factory.mktemp("onecore")
    args = ["--cluster", str(DATA / "tiny.yaml"), "--bf-interval", "600", "--policy", "tide"]
    s = ServerProc(d / "data", args).start()
    s.work = d / "work"  # type: ignore[attr-defined]
    s.work.mkdir()  # type: ignore[attr-defined]
    try:
        yield s
    finally:
        s.stop()


def test_the_server_runs_the_policy_named_on_its_command_line(srv: Any) -> None:
    with srv.client() as c:
        sched = c.get("/v1/cluster").json()["scheduler"]
        assert sched["policy"] == "tide"
        assert sched["victim_order"] == "policy default"
        d: Path = srv.work
        jid = submit(c, "#!/bin/bash\n#SBATCH --gpus=1 -t 5\necho ok\n", d).json()["job_id"]
        assert wait_state(c, jid, DONE, timeout=120)["state"] == "COMPLETED"


def test_a_begin_time_wakes_the_scheduler(srv: Any) -> None:
    script = "#!/bin/bash\n#SBATCH --gpus=1 -t 5 --begin=now+4\necho ok\n"
    with srv.client() as c:
        jid = submit(c, script, srv.work).json()["job_id"]
        j = job(c, jid)
        assert j["state"] == "PENDING"
        begin = j["request"]["begin"]
        assert begin is not None, j["request"]
        j = wait_state(c, jid, {"RUNNING", *DONE}, timeout=120)
    # the periodic pass is 600 s away: a start this soon came from the core's wake
    assert begin <= j["start_time"] < begin + 60, (begin, j["start_time"])
    assert j["phases"]["times"]["eligible"] == pytest.approx(begin)  # eligible since its begin time
