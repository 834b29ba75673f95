"""Races between the controller and a slow executor, found in CI on the Ray
executor (whose calls take seconds on a loaded machine):
- a cancel that commits while the job is being launched reaches an executor
  that does not know the job yet and does nothing (a service replica cancelled
  by a rollout stayed COMPLETING for good): the controller asks again once the
  launch is done;
- a restarted controller whose executor cannot ask a node what runs there must
  not take that node's jobs for gone (the job failed and ran a second time)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from serverproc import DATA, wait_for

from tide.exec.base import LaunchSpec, PartlyUnknown
from tide.exec.local import LocalExecutor
from tide.server.controller import Controller
from tide.server.schemas import SubmitBody
from tide.server.services import jobs as jobservice
from tide.server.services import submit as submitting
from tide.server.settings import Settings
from tide.store import jobs as jobrepo


def _state(ctl: Controller, job_id: int) -> str:
    with ctl.sessions() as s:
        row = jobrepo.get(s, job_id)
        assert row is not None
        return row.state


class LaunchesAfterACancel(LocalExecutor):
    """The real local executor, whose launch starts only once the test has
    cancelled the job (the window a slow launch leaves open)."""

    def __init__(self, *a, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*a, **kw)
        self.launching = threading.Event()
        self.cancelled = threading.Event()
        self.cancels_before_launch = 0

    def launch(self, spec: LaunchSpec) -> None:
        self.launching.set()
        assert self.cancelled.wait(60), "the test never cancelled the job"
        super().launch(spec)

    def cancel(self, job_id: int, grace: float = 30.0) -> None:
        if not self.job_dir(job_id).exists():
            self.cancels_before_launch += 1  # as before the fix: this one does nothing
        super().cancel(job_id, grace)


def test_a_job_cancelled_while_it_launches_ends_cancelled(tmp_path: Path) -> None:
    executor = LaunchesAfterACancel(tmp_path / "exec", kill_wait=2)
    settings = Settings(data_dir=tmp_path / "d", cluster_file=DATA / "tiny.yaml", kill_wait=2)
    ctl = Controller(settings, executor=executor)
    ctl.start()
    try:
        token = (tmp_path / "d" / "admin.token").read_text().strip()
        who = ctl.auth.principal(f"Bearer {token}")
        body = SubmitBody(script="#!/bin/sh\nsleep 600\n", argv=[], cwd=str(tmp_path))
        prepared = submitting.prepare(ctl, who, body)
        ctl.writer.submit(prepared.rows).result(timeout=60)
        jid = prepared.job_ids[0]
        ctl.loop.wake()
        assert executor.launching.wait(60), "the job never started launching"
        out = jobservice.cancel(ctl, who, str(jid))
        assert [o["state"] for o in out] == ["COMPLETING"], out
        assert executor.cancels_before_launch == 1  # the executor could not act on it
        executor.cancelled.set()

        wait_for("the job to end", lambda: _state(ctl, jid) == "CANCELLED", 60)
        deadline = time.monotonic() + 30
        while executor.running() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert executor.running() == set(), "the job's processes outlived its cancel"
    finally:
        ctl.stop()


class SomeNodesDoNotAnswer(LocalExecutor):
    """The real local executor, whose running() cannot ask node g1 (as a Ray
    node agent that does not answer in time on a loaded machine)."""

    def running(self) -> set[int]:
        raise PartlyUnknown(set(), ["g1"])


def test_a_restarted_controller_keeps_jobs_whose_node_did_not_answer(tmp_path: Path) -> None:
    """Reconcile must not take a job for gone because its node's agent did
    not answer: that failed the job and ran it a second time (CI, Ray)."""
    ledger = tmp_path / "ledger"
    script = f"#!/bin/sh\necho $SLURM_RESTART_COUNT >> {ledger}\nsleep 4\n"
    settings = Settings(data_dir=tmp_path / "d", cluster_file=DATA / "tiny.yaml", kill_wait=2)
    first = Controller(settings, executor=LocalExecutor(tmp_path / "exec", kill_wait=2))
    first.start()
    try:
        token = (tmp_path / "d" / "admin.token").read_text().strip()
        who = first.auth.principal(f"Bearer {token}")
        body = SubmitBody(script=script, argv=["-w", "g1"], cwd=str(tmp_path))
        prepared = submitting.prepare(first, who, body)
        first.writer.submit(prepared.rows).result(timeout=60)
        jid = prepared.job_ids[0]
        first.loop.wake()
        wait_for("the job to run", lambda: ledger.exists(), 60)
    finally:
        first.stop()  # the job runs on without a controller
    second = Controller(settings, executor=SomeNodesDoNotAnswer(tmp_path / "exec", kill_wait=2))
    second.start()  # reconciles
    try:

        def row() -> tuple[str, int]:
            with second.sessions() as s:
                r = jobrepo.get(s, jid)
                assert r is not None
                return r.state, r.restarts

        assert row() == ("RUNNING", 0)
        wait_for("the job's end", lambda: row()[0] not in ("RUNNING", "COMPLETING"), 60)
        assert row() == ("COMPLETED", 0)
        assert ledger.read_text().split() == ["0"]  # it ran once
    finally:
        second.stop()


class LosesTheFirstCancel(LocalExecutor):
    """The real local executor, whose first cancel request is lost on the way
    (as a call to a node agent that timed out)."""

    lost = 0

    def cancel(self, job_id: int, grace: float = 30.0) -> None:
        if not self.lost:
            self.lost += 1
            return
        super().cancel(job_id, grace)


def test_a_job_whose_kill_was_lost_is_killed_again(tmp_path: Path) -> None:
    """A job stays COMPLETING only until the loop asks for its kill again
    (KillWait + resend seconds), not for good."""
    from tide.server.services.completing import CompletingWatch

    executor = LosesTheFirstCancel(tmp_path / "exec", kill_wait=2)
    settings = Settings(data_dir=tmp_path / "d", cluster_file=DATA / "tiny.yaml", kill_wait=2)
    ctl = Controller(settings, executor=executor)
    ctl.start()
    ctl.loop.completing = CompletingWatch(resend=1.0)
    try:
        token = (tmp_path / "d" / "admin.token").read_text().strip()
        who = ctl.auth.principal(f"Bearer {token}")
        started = tmp_path / "started"
        body = SubmitBody(script=f"#!/bin/sh\ntouch {started}\nsleep 600\n", argv=[],
                          cwd=str(tmp_path))  # fmt: skip
        prepared = submitting.prepare(ctl, who, body)
        ctl.writer.submit(prepared.rows).result(timeout=60)
        jid = prepared.job_ids[0]
        ctl.loop.wake()
        wait_for("the job to run", started.exists, 60)
        assert [o["state"] for o in jobservice.cancel(ctl, who, str(jid))] == ["COMPLETING"]
        assert executor.lost == 1

        wait_for("the job to end", lambda: _state(ctl, jid) == "CANCELLED", 90)
        assert executor.running() == set()
    finally:
        ctl.stop()
