"""No single job stops scheduling for the others (issue 11, item 4).

Against a real server: a job the core cannot evaluate (a row stored by an
older version, a damaged row) is held with a reason that names the error,
after a restart too, and the other jobs run; random job field values sent
next to good jobs never keep the good jobs from starting.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serverproc import DATA, ServerProc, job, submit, wait_for, wait_state

pytestmark = pytest.mark.slow

TRUE = "#!/bin/sh\ntrue\n"
ARGS = ["--cluster", str(DATA / "tiny.yaml"), "--kill-wait", "2", "--bf-interval", "1"]


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    d = tmp_path_factory.mktemp("iso")
    s = ServerProc(d / "data", ARGS).start()
    s.work = d  # type: ignore[attr-defined]
    try:
        yield s
    finally:
        s.stop()


def _damage(db: Path, job_id: int, request: str) -> None:
    """What an older version (or a damaged disk) left in the store."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE jobs SET request = ?, held = '', reason = 'None' WHERE id = ?",
            (request, job_id),
        )


@pytest.mark.parametrize(
    ("request_json", "words"),
    [
        ('{"name":"x","gpus_per_node":-1,"time_limit":60}', "r must be non-negative"),
        ('{"name":"x","begin":[],"time_limit":60}', "TypeError"),
        ("{not json", "unreadable request"),
    ],
)
def test_a_job_the_core_cannot_evaluate_is_held_at_restart_and_the_others_run(
    tmp_path: Path, request_json: str, words: str
) -> None:
    srv = ServerProc(tmp_path / "data", ARGS).start()
    try:
        with srv.client() as c:
            r = submit(c, TRUE, tmp_path, ["--hold"])
            bad = r.json()["job_id"]
        srv.stop()
        _damage(srv.data_dir / "tide.db", bad, request_json)
        srv.start()
        with srv.client() as c:
            good = submit(c, TRUE, tmp_path).json()["job_id"]
            wait_state(c, good, {"COMPLETED"})
            j = wait_for("the bad job held", lambda: _held(c, bad))
            assert j["state"] == "PENDING" and j["held"] == "admin", j
            assert j["reason"].startswith("SchedulingError: ") and words in j["reason"], j
            assert any(words in e["reason"] and e["actor"] == "scheduler" for e in j["history"])
            loop = c.get("/v1/cluster").json()["loop"]
            assert loop["held_faulty_jobs"] == 1 and loop["errors"] == 0, loop
            # a released job that still cannot be evaluated is held again, once
            assert c.post(f"/v1/jobs/{bad}/release").status_code == 200
            good2 = submit(c, TRUE, tmp_path).json()["job_id"]
            wait_state(c, good2, {"COMPLETED"})
            wait_for("held again", lambda: _held(c, bad))
        assert f"job {bad} held" in srv.log.read_text()
    finally:
        srv.stop()


def _held(c: Any, job_id: int) -> dict[str, Any] | None:
    j = job(c, job_id)
    return j if j["held"] == "admin" else None


JOB_FIELDS = [
    "nodes_min", "nodes_max", "ntasks", "ntasks_per_node", "gpus", "gpus_per_node",
    "gpus_per_task", "gpu_type", "cpus_per_task", "cpus_per_gpu", "mem_per_node", "mem_per_gpu",
    "time_limit", "time_min", "nice", "exclusive", "constraint", "nodelist", "exclude",
    "switches", "switches_wait", "begin", "dependency", "array", "requeue", "signal", "hold",
    "priority", "qos", "account", "name", "reservation",
]  # fmt: skip
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=3)), max_size=3),
    st.dictionaries(st.sampled_from(["type", "task_ids", "items", "x"]), st.integers(), max_size=2),
)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(bad=st.lists(st.dictionaries(st.sampled_from(JOB_FIELDS), VALUES, min_size=1, max_size=3),
                    min_size=1, max_size=3))  # fmt: skip
def test_random_job_fields_never_keep_good_jobs_from_starting(
    srv: ServerProc, bad: list[dict[str, Any]]
) -> None:
    with srv.client() as c:
        for fields in bad:
            fields.setdefault("time_limit", 60)
            fields["partitions"] = ["cpu"]  # the good jobs run on the GPU nodes
            c.post("/v1/jobs", json={"wrap": "sleep 1", "job": fields})
        r = submit(c, TRUE, srv.work, ["-p", "gpu", "--gpus-per-node=1"])  # type: ignore[attr-defined]
        assert r.status_code == 201, r.text
        wait_state(c, r.json()["job_id"], {"COMPLETED"}, timeout=90)
        assert c.get("/v1/cluster").json()["loop"]["errors"] == 0
