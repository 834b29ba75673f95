"""scontrol suspend / resume: an operator stops a running job and lets it go on.

As Slurm's: operators only; suspend sends SIGSTOP to every process of the job
(state SUSPENDED), resume sends SIGCONT (RUNNING again) and the time the job
stood still does not count against its time limit. The job keeps its GPUs,
cores and memory meanwhile. The mark lives in the job row (preempt_phase
"admin", since preempt_time), as a preemption victim's does, so a restarted
controller still knows it; the preemption timers never resume it
(tide.server.services.preemption).
"""

from __future__ import annotations

import signal
import time
from typing import Any

from tide.server.auth import Principal
from tide.server.errors import conflict, forbidden
from tide.server.ports import Ctl
from tide.server.services import preemption
from tide.server.services.jobs import rows_for
from tide.server.views import display_id
from tide.store import jobs as jobrepo


def suspend(ctl: Ctl, who: Principal, text: str) -> list[dict[str, Any]]:
    _operator(who, "suspend")
    now = time.time()
    stopped = []
    with ctl.sessions.begin() as s:
        for row in rows_for(s, text):
            if row.state != "RUNNING" or row.preempt_phase:
                busy = " and being preempted" if row.preempt_phase else ""
                raise conflict(f"job {_did(row)} is {row.state}{busy}; only running jobs "
                               "can be suspended", "job_id", "see `squeue -j ID`")  # fmt: skip
            values = {"preempt_phase": preemption.ADMIN, "preempt_time": now}
            if jobrepo.transition(s, row.id, ["RUNNING"], "SUSPENDED", now, values,
                                  reason="suspended by an operator", actor=who.user):  # fmt: skip
                stopped.append(row)
    for row in stopped:
        preemption.signal_job(ctl, row.id, signal.SIGSTOP)
    _wake(ctl)
    return [{"job_id": _did(r), "state": "SUSPENDED"} for r in stopped]


def resume(ctl: Ctl, who: Principal, text: str) -> list[dict[str, Any]]:
    _operator(who, "resume")
    with ctl.sessions() as s:
        rows = rows_for(s, text)
        for row in rows:
            if row.state != "SUSPENDED" or row.preempt_phase != preemption.ADMIN:
                why = " (by preemption: it resumes when its preemptor is done)" if (
                    row.state == "SUSPENDED") else ""  # fmt: skip
                raise conflict(f"job {_did(row)} is {row.state}{why}; only jobs stopped "
                               "by `scontrol suspend` can be resumed", "job_id",
                               "see `squeue -j ID`")  # fmt: skip
        ids = [(r.id, _did(r)) for r in rows]
    now = time.time()
    resumed = [d for i, d in ids if preemption.resume_stopped(ctl, i, now, who.user)]
    out = [{"job_id": d, "state": "RUNNING"} for d in resumed]
    _wake(ctl)
    return out


def _operator(who: Principal, action: str) -> None:
    if not who.operator:
        raise forbidden(f"only operators may {action} jobs (Slurm's rule)",
                        "ask an operator; to stop your own job use scancel")  # fmt: skip


def _did(row: Any) -> str:
    return display_id(row.id, row.array_job_id, row.array_task_id)


def _wake(ctl: Ctl) -> None:
    if ctl.loop is not None:
        ctl.loop.wake()
