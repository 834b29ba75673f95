"""When the scheduling loop runs a pass (SchedulingLoop._pass_due): at least the
gap after the last one; and while submissions pour in, only once the rest of the
process has had 4x the last pass's CPU (bounded by DEFER_CAP gaps), so that on
a loaded machine passes over a huge queue take a fifth of the server's CPU, not
a fifth of wall time. A lone submission waits for nothing more."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from serverproc import DATA

from tide.server.controller import Controller
from tide.server.loop import DEFER_CAP
from tide.server.schemas import SubmitBody
from tide.server.services import submit as submitting
from tide.server.settings import Settings


def _burn(cpu_seconds: float) -> None:
    """CPU used by another thread of the process (as the API would)."""

    def work() -> None:
        start = time.thread_time()
        while time.thread_time() - start < cpu_seconds:
            sum(range(1000))

    t = threading.Thread(target=work)
    t.start()
    t.join()


def test_passes_leave_the_api_its_share_while_submissions_pour_in(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "d", cluster_file=DATA / "tiny.yaml", executor="none")
    ctl = Controller(settings)
    ctl.start()
    try:
        loop = ctl.loop
        loop.stop()  # its thread stops: this test asks _pass_due itself
        loop._after_pass()
        loop._last_cost = 0.5  # a half-second pass: the gap is 2 s
        now = time.time()
        loop._last_cycle = now - 1.0
        assert not loop._pass_due(now)  # within the gap
        loop._last_cycle = now - 2.5
        assert loop._pass_due(now)  # no submission since the last pass

        token = ctl.settings.token_file.read_text().strip()
        who = ctl.auth.principal(f"Bearer {token}")
        body = SubmitBody(script="#!/bin/sh\n#SBATCH --hold\ntrue\n", cwd=str(tmp_path))
        ctl.writer.submit(submitting.prepare(ctl, who, body).rows).result(timeout=60)
        # a lone submission: the API idle since (measured from now, so the threads
        # a loaded machine's start-up left busy do not count)
        loop._cpu_seen = (time.process_time(), time.thread_time(), time.time() - 2.0)
        assert loop._pass_due(time.time())

        _burn(0.25)  # the API busy: 0.25 s of CPU in the last 2 s
        process, mine, _ = loop._cpu_seen
        loop._cpu_seen = (process, mine, time.time() - 2.0)
        now = time.time()
        loop._last_cycle = now - 2.5
        assert not loop._pass_due(now)  # the API had less than 4 x 0.5 s
        loop._last_cycle = now - DEFER_CAP * 2.0 - 0.1
        assert loop._pass_due(now)  # but it waits no longer than DEFER_CAP gaps
        loop._last_cost = 0.05  # a cheap pass: the gap is min_interval, 0.2 s
        loop._last_cycle = now - 0.3
        assert loop._pass_due(now)  # the API had 4 x 0.05 s
        loop._last_cost = 0.5
        loop._last_cycle = now - 2.5
        loop._cpu_seen = (process, mine, now - 100.0)  # 0.25 s in 100 s: idle
        assert loop._pass_due(now)
    finally:
        ctl.stop()
