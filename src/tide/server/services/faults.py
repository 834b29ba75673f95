"""Jobs the scheduling loop could not evaluate: held, named, kept out of passes.

When a pending job makes the core raise (tide.sched.isolate finds it) or its
stored request cannot be read, the loop puts an admin hold on it with the
reason `SchedulingError: <the error>`, records it in the job's history and
the log with the job id, and goes on scheduling everyone else. Load leaves
such jobs out of the core's snapshot, so a held bad job costs nothing in
later passes (nor after a restart: the hold and its reason are stored). An
operator who fixes the job (`tide update`) and releases it (`tide release`)
puts it back; if it still cannot be evaluated it is held again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from tide.sched.isolate import JobFault
from tide.server.ports import Ctl
from tide.store import jobs as jobrepo
from tide.store.models import JobRow

log = logging.getLogger("tide.server")

REASON = "SchedulingError"
MAX_REASON = 64  # the jobs.reason column; the history keeps the whole error


def quarantined(held: str, reason: str) -> bool:
    """Held by the loop because it could not be evaluated (and not released since)."""
    return held == "admin" and reason.startswith(REASON)


def hold(ctl: Ctl, faults: Iterable[JobFault], now: float) -> list[int]:
    """Admin-hold each pending faulty job with a reason naming its error; the
    ids actually held (a job that left PENDING meanwhile is left alone)."""
    held = []
    with ctl.sessions.begin() as s:
        for f in faults:
            reason = f"{REASON}: {f.error}"[:MAX_REASON]  # shown by squeue
            ok = jobrepo.transition(
                s,
                f.job_id,
                ["PENDING"],
                None,
                now,
                {"held": "admin", "reason": reason, "rev": JobRow.rev + 1},
            )
            if not ok:
                continue
            jobrepo.add_event(
                s, f.job_id, now, "PENDING", "PENDING", f"held: {REASON}: {f.error}", "scheduler"
            )
            held.append(f.job_id)
    for f in faults:
        if f.job_id in held:
            log.error(
                "job %s held: the scheduler could not evaluate it (%s); the pass went on "
                "without it. Fix it (tide update %s ...) and release it (tide release %s)",
                f.job_id,
                f.error,
                f.job_id,
                f.job_id,
            )
    return held
