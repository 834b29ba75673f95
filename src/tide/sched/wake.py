"""When the core's decisions can next change with no job arriving or ending.

Both drivers run a cycle on events (a submission, an end, a node change);
time alone changes a decision only at these moments, which the core
reports as Decisions.wake (the earliest one after now):

* a pending job's begin time (--begin; a requeue's backoff is a begin time);
* a --switches wait running out (the job may then span more leaf switches);
* an advance reservation starting or ending (its nodes change hands);
* a preemption victim's grace ending (its kill frees what the preemptor
  waits for);
* a running job's PreemptExemptTime ending (it may become a victim) while
  jobs are pending.

A planned start needs no wake of its own: it is the end of a running job's
time limit (an end event in both worlds) or one of the times above.
"""

from __future__ import annotations

from collections.abc import Iterable

from tide.model import Job
from tide.sched.eligibility import switch_deadline
from tide.sched.preempt_rules import Rules
from tide.sched.types import Decisions, Snapshot


def next_wake(
    snap: Snapshot, d: Decisions, timed: Iterable[Job] | None = None
) -> float | None:
    """The earliest time after snap.now at which a cycle can decide otherwise.
    `timed`: the pending jobs with a begin time or a --switches wait (None:
    found among snap.pending; TimedJobs keeps them between cycles)."""
    now = snap.now
    started = {s.job_id for s in d.starts}
    times: list[float] = []
    for job in snap.pending if timed is None else timed:
        req = job.request
        if (req.begin is None and req.switches is None) or job.id in started:
            continue  # the common case first: nothing timed
        begin = req.begin
        if begin is not None and begin > now:
            times.append(begin)
        deadline = switch_deadline(job, now, snap.config.max_switch_wait)
        if deadline is not None and deadline > now:
            times.append(deadline)
    for res in snap.reservations:
        times.extend(t for t in (res.start, res.end) if t > now)
    if snap.preempting:  # else a walk over every running job for nothing, every cycle
        for r in snap.running:
            if r.job.id in snap.preempting and r.end > now:
                times.append(r.end)  # the victim's kill time (its grace's end)
    if snap.pending and snap.config.preempt_type not in ("", "preempt/none"):
        times.extend(_exempt_ends(snap, Rules.of(snap.config)))
    if d.wake is not None and d.wake > now:
        times.append(d.wake)  # the policy's own (Kueue's timeouts)
    return min(times) if times else None


class TimedJobs:
    """The pending jobs with a begin time or a --switches wait, the only ones
    `next_wake` looks at: kept between cycles and updated with what the
    driver says changed (Snapshot.pending_delta), else found again among all
    pending jobs. A walk over every pending job each cycle is most of a
    cycle's cost with a large backlog."""

    def __init__(self) -> None:
        self._jobs: dict[int, Job] = {}
        self._gen: int | None = None  # the snapshot they follow (PendingDelta.gen)

    def of(self, snap: Snapshot) -> Iterable[Job]:
        delta = snap.pending_delta
        if delta is not None and self._gen is not None and self._gen == delta.since:
            for jid in delta.gone:
                self._jobs.pop(jid, None)
            for job in delta.changed:
                if _timed(job):
                    self._jobs[job.id] = job
                else:
                    self._jobs.pop(job.id, None)
        else:
            self._jobs = {j.id: j for j in snap.pending if _timed(j)}
        self._gen = delta.gen if delta is not None else None
        return self._jobs.values()


def _timed(job: Job) -> bool:
    req = job.request
    return req.begin is not None or req.switches is not None


def _exempt_ends(snap: Snapshot, rules: Rules) -> Iterable[float]:
    for r in snap.running:
        limit = rules.exempt_time(snap.accounts, r.job)
        if limit is not None and r.start + limit > snap.now:
            yield r.start + limit


def eligible_since(job: Job, now: float) -> float:
    """EligibleTime of a job found eligible at `now`: its begin time when that
    was all it waited for (a backoff too), else now (dependencies, holds)."""
    begin = job.request.begin
    if begin is None or begin > now or job.request.dependency is not None:
        return now
    return max(begin, job.submit)
