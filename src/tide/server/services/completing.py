"""Jobs stuck COMPLETING: the kill is asked for again.

A cancel, a preemption or a failed node marks a job COMPLETING and asks the
executor to kill it; the end comes back through poll(). When that request is
lost (an executor call that timed out on a loaded machine, a node agent that
restarted), the job would hold its nodes, and a service's rollout would wait,
for good. As slurmctld keeps sending its kill request to the nodes of a job
that stays completing, the loop asks the executor again, with no grace, once a
job has been COMPLETING for KillWait + `resend` seconds, and every `resend`
seconds after that.
"""

from __future__ import annotations

import logging

from tide.server.ports import Ctl
from tide.store import jobs as jobrepo

log = logging.getLogger("tide.server")

RESEND = 30.0  # seconds past KillWait before a completing job's kill is asked again


class CompletingWatch:
    def __init__(self, resend: float = RESEND) -> None:
        self.resend = resend
        self._since: dict[int, float] = {}  # job -> when first seen COMPLETING, or last asked

    def check(self, ctl: Ctl, now: float) -> list[int]:
        """Ask again for the jobs overdue at monotonic time `now`; returns them."""
        if ctl.executor is None:
            return []
        with ctl.sessions() as s:
            ids = {r[0] for r in jobrepo.live_columns(s, ("COMPLETING",))}
        self._since = {j: t for j, t in self._since.items() if j in ids}
        wait = ctl.settings.kill_wait + self.resend
        due = []
        for job_id in sorted(ids):
            if now - self._since.setdefault(job_id, now) >= wait:
                due.append(job_id)
                self._since[job_id] = now - ctl.settings.kill_wait  # next ask: resend s on
        for job_id in due:
            log.warning("job %s is still COMPLETING: asking the executor to kill it again", job_id)
            try:
                ctl.executor.cancel(job_id, grace=0.0)
            except Exception:  # the next check asks again; the loop must go on
                log.warning("cannot ask for job %s's kill again", job_id, exc_info=True)
        return due
