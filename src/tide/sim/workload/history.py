"""The live controller's history as a twin workload (tide sim export, --from-server).

Each job that ran becomes one SimJob: its submit time (seconds from the first
submission), the request exactly as the server stored it (so time limits,
dependencies, arrays, QOS and partitions are the ones the controller saw), its
account and user, the work it did (the last run's length: a requeued job starts
over) and how it ended (FAILED when its script failed). Replayed under the
server's own policy it reproduces the live start order; under another policy it
answers "what if we had run X". The controller's pass times go with it (its
pass log, else every start and first sight of a pending job): the twin then
schedules when the live loop did, with backfill where it ran backfill.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tide.sim.workload.base import SimJob
from tide.store.history import HistoryJob

# final states whose run time is the job's own work (a cancelled or timed-out
# run ends early for a reason the twin models itself or cannot know)
_WORK_STATES = {"COMPLETED": "COMPLETED", "FAILED": "FAILED", "OUT_OF_MEMORY": "FAILED"}


@dataclass(slots=True)
class Exported:
    jobs: list[SimJob]
    origin: float  # Unix time of t = 0 (the first submission)
    skipped: dict[str, int]  # why jobs were left out -> how many
    # the controller's passes: (time, ran backfill) from its pass log, else the times
    # jobs were started or first seen pending (backfill unknown: None)
    passes: list[tuple[float, bool | None]]


def to_workload(
    history: list[HistoryJob],
    logged: dict[float, bool] | None = None,
    released: dict[int, list[float]] | None = None,
) -> Exported:
    """SimJobs of every job that ran to its end, times from the first submission.
    From the loop's pass log (tide.server.pass_log): `logged` (Unix time -> ran
    backfill) and `released` (job -> when the controller took in its ends)."""
    origin = min((h.submit for h in history), default=0.0)
    jobs: list[SimJob] = []
    skipped: dict[str, int] = {}
    passes: set[float] = set()
    for h in history:
        times = [h.start, h.eligible, *(a.start for a in h.attempts)]
        passes.update(round(x - origin, 3) for x in times if x is not None)
        why = _skip(h)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        jobs.append(_job(h, origin, (released or {}).get(h.id)))
    if logged:
        marked = [(round(t - origin, 3), b) for t, b in sorted(logged.items()) if t >= origin]
        return Exported(jobs, origin, skipped, marked)  # type: ignore[arg-type]
    return Exported(jobs, origin, skipped, [(t, None) for t in sorted(passes)])


def _skip(h: HistoryJob) -> str:
    if h.start is None:
        return "never started"
    if h.end is None:
        return "still running"
    return ""


def _job(h: HistoryJob, origin: float, released: list[float] | None) -> SimJob:
    """The job's work is its last run, until the controller took its end in (its
    resources were busy for the scheduler until then), else until it ended."""
    last = h.attempts[-1] if h.attempts else None
    start = last.start if last is not None else h.start
    end = (last.end if last is not None else None) or h.end
    seen = [t for t in released or () if start is not None and end is not None and t >= end - 0.01]
    if seen:
        end = min(seen)
    assert start is not None and end is not None  # _skip
    req = h.request
    if req.begin is not None:  # the store keeps Unix times; the twin counts from t = 0
        req = replace(req, begin=max(0.0, req.begin - origin))
    return SimJob(
        id=h.id,
        submit=round(h.submit - origin, 3),
        duration=round(max(0.0, end - start), 3),
        request=replace(req, account=h.account, qos=h.qos),
        user=h.user,
        account=h.account,
        name=h.name,
        original={"request": True},
        array=h.array,
        end_state=_WORK_STATES.get(h.state, "COMPLETED"),
    )
