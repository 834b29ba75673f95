"""A job's end and a cancel at the same moment (issue 11 item 2, found under
load: a cancelled job stayed COMPLETING for good). The controller stores an
end by reading the job's row and writing it guarded by its state; when a cancel
commits in between, the write applies to nothing and the end must be stored
again from the new row, not dropped."""

from __future__ import annotations

import time
from pathlib import Path

from serverproc import DATA

from tide.exec.base import ExitReport
from tide.server.controller import Controller
from tide.server.schemas import SubmitBody
from tide.server.services import lifecycle
from tide.server.services import submit as submitting
from tide.server.settings import Settings
from tide.store import accounting
from tide.store import jobs as jobrepo


def test_an_end_stored_while_a_cancel_commits_is_not_lost(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(data_dir=tmp_path / "d", cluster_file=DATA / "tiny.yaml", executor="none")
    ctl = Controller(settings)
    ctl.start()
    try:
        token = (tmp_path / "d" / "admin.token").read_text().strip()
        who = ctl.auth.principal(f"Bearer {token}")
        body = SubmitBody(script="#!/bin/sh\ntrue\n", argv=["--hold"], cwd=str(tmp_path))
        prepared = submitting.prepare(ctl, who, body)
        ctl.writer.submit(prepared.rows).result(timeout=60)
        jid = prepared.job_ids[0]
        now = time.time()
        with ctl.sessions.begin() as s:  # it runs (the loop never starts a held job)
            jobrepo.transition(s, jid, ["PENDING"], "RUNNING", now, {"start_time": now})
            accounting.open_attempt(s, job_id=jid, attempt=0, user="root", account="root",
                                    partition="gpu", start_time=now)  # fmt: skip
        real_get = jobrepo.get
        calls = []

        def get_then_cancel(session, job_id):  # type: ignore[no-untyped-def]
            row = real_get(session, job_id)
            if not calls:  # the first read: a cancel commits right after it
                calls.append(job_id)
                with ctl.sessions.begin() as other:
                    jobrepo.transition(other, job_id, ["RUNNING"], "COMPLETING", time.time(),
                                       {"cancel_requested": "alice"})  # fmt: skip
            return row

        monkeypatch.setattr(lifecycle.jobrepo, "get", get_then_cancel)
        lifecycle.finish(ctl, ExitReport(jid, exit_code=0))
        monkeypatch.undo()
        with ctl.sessions() as s:
            row = jobrepo.get(s, jid)
            assert row is not None
            state = row.state
    finally:
        ctl.stop()
    assert calls == [jid]
    assert state == "CANCELLED"  # was left COMPLETING: the end applied to nothing
