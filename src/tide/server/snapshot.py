"""Load: the core's Snapshot from the store, in one short read session.

Only scalar columns are read every cycle; a job's request JSON is parsed
once and cached by (job id, rev) — `rev` is bumped whenever anything the
scheduler reads from the request changes (update, hold, release).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tide.model import Job, JobRequest, JobState
from tide.sched.cycle import UNLIMITED
from tide.sched.types import Allocation, Running, Snapshot
from tide.store import codec
from tide.store import jobs as jobrepo
from tide.store.models import JobRow

_COLS = (
    JobRow.id,
    JobRow.rev,
    JobRow.state,
    JobRow.user,
    JobRow.account,
    JobRow.run_partition,
    JobRow.qos,
    JobRow.held,
    JobRow.array_job_id,
    JobRow.array_task_id,
    JobRow.submit_time,
    JobRow.eligible_time,
    JobRow.restarts,
    JobRow.priority_override,
    JobRow.site_factor,
    JobRow.switch_wait_start,
    JobRow.start_time,
    JobRow.time_limit,
    JobRow.allocation,
    JobRow.gpus_alloc,
    JobRow.reason,
    JobRow.priority,
    JobRow.planned_start,
)


@dataclass(slots=True)
class Meta:
    """What Apply needs to know about each loaded job."""

    rev: int
    state: str
    reason: str
    priority: float
    planned_start: float | None


@dataclass(slots=True)
class Loaded:
    snapshot: Snapshot
    meta: dict[int, Meta] = field(default_factory=dict)


class RequestCache:
    def __init__(self) -> None:
        self._reqs: dict[int, tuple[int, JobRequest]] = {}
        self._lock = threading.Lock()

    def get_many(self, session: Session, wanted: dict[int, int]) -> dict[int, JobRequest]:
        """Requests for {job id: rev}, reading only the ones not cached."""
        with self._lock:
            out = {j: r for j, (rev, r) in self._reqs.items() if wanted.get(j) == rev}
        missing = [j for j in wanted if j not in out]
        for i in range(0, len(missing), 5000):
            chunk = missing[i : i + 5000]
            stmt = select(JobRow.id, JobRow.rev, JobRow.request).where(JobRow.id.in_(chunk))
            for jid, rev, text in session.execute(stmt):
                out[jid] = codec.request_from_json(text)
                with self._lock:
                    self._reqs[jid] = (rev, out[jid])
        return out

    def forget_except(self, keep: set[int]) -> None:
        with self._lock:
            for j in [j for j in self._reqs if j not in keep]:
                del self._reqs[j]


def load(ctl: Any, cache: RequestCache, now: float, backfill: bool) -> Loaded:
    with ctl.sessions() as s:
        rows = list(s.execute(select(*_COLS).where(JobRow.state.in_(jobrepo.ACTIVE))))
        reqs = cache.get_many(s, {r.id: r.rev for r in rows})
        pending: list[Job] = []
        running: list[Running] = []
        meta: dict[int, Meta] = {}
        for r in rows:
            job = Job(
                id=r.id,
                request=reqs[r.id],
                user=r.user,
                account=r.account,
                partition=r.run_partition if r.state != "PENDING" else "",
                qos=r.qos,
                submit=r.submit_time,
                state=JobState(r.state),
                array_job_id=r.array_job_id,
                array_task_id=r.array_task_id,
                held=r.held,
                restarts=r.restarts,
                eligible=r.eligible_time,
                switch_wait_start=r.switch_wait_start,
                priority_override=r.priority_override,
                site_factor=r.site_factor,
            )
            meta[r.id] = Meta(r.rev, r.state, r.reason, r.priority, r.planned_start)
            if r.state == "PENDING":
                pending.append(job)
            elif r.allocation:
                alloc: Allocation = codec.alloc_from_json(r.allocation)  # type: ignore[assignment]
                start = r.start_time or now
                limit = r.time_limit if r.time_limit is not None else UNLIMITED
                running.append(Running(job, alloc, start, start + limit))
        finished = _finished(s, pending, meta)
    cache.forget_except(set(meta))
    with ctl.lock:
        snap = Snapshot(
            cluster=ctl.live_cluster(),
            config=ctl.config,
            now=now,
            pending=pending,
            running=running,
            accounts=ctl.tree,
            usage=dict(ctl.usage),
            reservations=list(ctl.reservations),
            finished=finished,
            backfill=backfill,
        )
    return Loaded(snap, meta)


def _finished(s: Session, pending: list[Job], active: dict[int, Meta]) -> dict[str, str]:
    """Final states of the jobs that pending jobs depend on."""
    ids: set[str] = set()
    for j in pending:
        dep = j.request.dependency
        if dep is None:
            continue
        for item in dep.items:
            ids.update(i for i in item.job_ids)
    ids = {i for i in ids if i.split("_", 1)[0].isdigit()}
    if not ids:
        return {}
    states = jobrepo.final_states(s, ids)
    return {k: v for k, v in states.items() if JobState(v).finished}
