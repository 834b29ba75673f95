"""Batched submission (tide.server.intake, tide.server.writer): many single-job
submissions are checked in one thread and committed together, yet each one is
answered alone: a bad one fails with its own error and stores nothing, the
good ones next to it are stored, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from serverproc import DATA, submit

from tide.server.controller import Controller
from tide.server.errors import ApiError
from tide.server.schemas import SubmitBody
from tide.server.services import submit as submitting
from tide.server.settings import Settings
from tide.store import jobs as jobrepo

GOOD = "#!/bin/sh\n#SBATCH --begin=now+1hour\ntrue\n"


@pytest.fixture
def ctl(tmp_path: Path, store_url: tuple[str, str | None]) -> Iterator[Controller]:
    url, schema = store_url
    db = {} if url.startswith("sqlite") else {"db_url": url, "db_schema": schema}
    settings = Settings(
        data_dir=tmp_path / "d", cluster_file=DATA / "tiny.yaml", executor="none", **db
    )
    c = Controller(settings)
    c.start()
    try:
        yield c
    finally:
        c.stop()


def _admin(ctl: Controller) -> Any:
    token = ctl.settings.token_file.read_text().strip()
    return ctl.auth.principal(f"Bearer {token}")


def _stored(ctl: Controller, job_id: int) -> bool:
    with ctl.sessions() as s:
        return jobrepo.get(s, job_id) is not None


def test_each_submission_of_a_batch_gets_its_own_answer(ctl: Controller) -> None:
    who = _admin(ctl)
    good = json.dumps({"script": GOOD, "argv": ["-J", "ok"], "cwd": "/tmp"}).encode()
    bad = {
        "not JSON": b"{nope",
        "job.gpus_per_node": json.dumps({"script": GOOD, "job": {"gpus_per_node": -1}}).encode(),
        "time": json.dumps({"script": GOOD, "argv": ["--time=forever"]}).encode(),
        "qos": json.dumps({"script": GOOD, "argv": ["--qos=nosuch"]}).encode(),
    }
    bodies: list[bytes | SubmitBody] = [good] * 40 + list(bad.values())
    bodies += [SubmitBody(script=GOOD, cwd="/tmp")] * 10  # as the FastAPI route hands it

    async def burst() -> list[Any]:
        return await asyncio.gather(
            *(ctl.intake.submit(who, b) for b in bodies), return_exceptions=True
        )

    out = asyncio.run(burst())
    ok = [o for o in out if isinstance(o, submitting.Prepared)]
    assert len(ok) == 50, [o for o in out if not isinstance(o, submitting.Prepared)]
    ids = [o.job_ids[0] for o in ok]
    assert len(set(ids)) == 50 and all(_stored(ctl, i) for i in ids)
    errors = out[40:44]
    assert isinstance(errors[0], ApiError) and errors[0].status == 400
    assert "not JSON" in errors[0].body()["error"]
    assert isinstance(errors[1], ValidationError)  # 422 naming job.gpus_per_node
    assert "gpus_per_node" in str(errors[1])
    assert isinstance(errors[2], ApiError) and errors[2].body()["field"] == "--time"
    assert isinstance(errors[3], ApiError) and "InvalidQOS" in errors[3].body()["error"]
    assert ctl.writer.jobs == 50


def test_a_submission_the_store_refuses_fails_alone(ctl: Controller) -> None:
    """Three submissions handed to the writer in one call, the second reusing the
    first's job id: the store refuses it (unique key), the other two are stored."""
    who = _admin(ctl)
    body = SubmitBody(script=GOOD, cwd="/tmp")
    first, second, third = (submitting.prepare(ctl, who, body) for _ in range(3))
    own_id = second.job_ids[0]
    second.rows[0]["id"] = first.job_ids[0]
    told: list[list[BaseException | None]] = []
    done = threading.Event()

    def settle(errors: list[BaseException | None]) -> None:
        told.append(errors)
        done.set()

    ctl.writer.submit_many([first.rows, second.rows, third.rows], settle)
    assert done.wait(60), "the writer never answered"
    (errors,) = told
    assert errors[0] is None and errors[2] is None
    assert errors[1] is not None and "unique" in str(errors[1]).lower()
    assert _stored(ctl, first.job_ids[0]) and _stored(ctl, third.job_ids[0])
    assert not _stored(ctl, own_id)


def test_concurrent_submissions_over_http_each_answered(tiny: Any) -> None:
    """A burst of good and bad submissions from many connections at once: every
    good one is a 201 whose job exists, every bad one the 4xx naming its field."""
    h = {"Authorization": f"Bearer {tiny.tokens['alice']}"}

    async def one(c: httpx.AsyncClient, i: int) -> httpx.Response:
        argv = ["--begin=now+1hour"] + (["--gpus-per-node=-2"] if i % 5 == 0 else [])
        body = {"script": "#!/bin/sh\ntrue\n", "argv": argv, "cwd": str(tiny.work)}
        return await c.post("/v1/jobs", json=body)

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=tiny.url, headers=h, timeout=60) as c:
            return await asyncio.gather(*(one(c, i) for i in range(60)))

    rs = asyncio.run(burst())
    for i, r in enumerate(rs):
        if i % 5 == 0:
            assert r.status_code == 400 and r.json()["field"] == "--gpus-per-node", r.text
        else:
            assert r.status_code == 201, r.text
    ids = {r.json()["job_id"] for r in rs if r.status_code == 201}
    assert len(ids) == 48
    with tiny.client(tiny.tokens["alice"]) as c:
        for job_id in ids:
            assert c.get(f"/v1/jobs/{job_id}").json()["jobs"][0]["user"] == "alice"
        r = submit(c, "#!/bin/sh\ntrue\n", tiny.work, ["--begin=now+1hour"])
        assert r.status_code == 201 and r.json()["job_id"] > max(ids)
