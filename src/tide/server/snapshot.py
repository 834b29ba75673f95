"""Load: the core's Snapshot, from an in-memory mirror of the active jobs.

Reading 100,000 queued jobs from the store every pass would cost a second
of the controller's only interpreter. Instead the controller keeps the
active jobs (PENDING, RUNNING, SUSPENDED, COMPLETING) as core `Job`s and
re-reads only the rows that changed: every write that goes through
tide.store.jobs (insert_jobs, transition) names the job in
`session.info["touched"]`, and the controller's after_commit hook hands
those ids to `ActiveJobs.touch`. A full re-read every FULL_EVERY seconds
is the safety net. A job's request JSON is parsed once per revision (`rev`,
bumped whenever anything the scheduler reads from the request changes).
A request that cannot be read is a fault of that job alone: the job gets an
empty placeholder request, `take_faults` names it, and Load leaves it out of
the snapshot so the loop can hold it (tide.server.services.faults).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from tide.defaults import TIME_INFINITE
from tide.model import Job, JobRequest, JobState
from tide.sched.isolate import JobFault, describe
from tide.sched.shape import UNLIMITED
from tide.sched.types import Allocation, Running, Snapshot
from tide.server.ports import Ctl
from tide.server.services import faults as jobfaults
from tide.server.services import preemption
from tide.store import codec
from tide.store import jobs as jobrepo

FULL_EVERY = 300.0  # seconds between full re-reads of the active jobs
CHUNK = 5000  # ids per IN (...) query
VIEW_WAIT = 2.0  # seconds a view waits for a refresh under way (read your own writes)

_COLS = (
    "id",
    "rev",
    "state",
    "user",
    "account",
    "run_partition",
    "qos",
    "held",
    "array_job_id",
    "array_task_id",
    "submit_time",
    "eligible_time",
    "restarts",
    "priority_override",
    "site_factor",
    "switch_wait_start",
    "start_time",
    "time_limit",
    "allocation",
    "reason",
    "priority",
    "planned_start",
    "planned_nodes",
    "nodelist",
)
_NCOLS = len(_COLS)
_STATES = {s.value: s for s in JobState}


@dataclass(slots=True)
class Meta:
    """What Apply needs to know about each loaded job (as last stored)."""

    rev: int
    state: str
    reason: str
    priority: float
    planned_start: float | None
    planned_nodes: str = ""
    nodelist: str = ""


@dataclass(slots=True)
class Entry:
    job: Job
    meta: Meta
    running: Running | None = None  # for live jobs with an allocation
    cells: tuple[str, ...] | None = None  # squeue line of a pending job (queue_text)


@dataclass(slots=True)
class Loaded:
    snapshot: Snapshot
    meta: dict[int, Meta] = field(default_factory=dict)
    entries: dict[int, Entry] = field(default_factory=dict)
    faults: list[JobFault] = field(default_factory=list)  # pending jobs Load could not read


class ActiveJobs:
    """The active jobs as the core sees them, kept in step with the store."""

    def __init__(self) -> None:
        self._entries: dict[int, Entry] = {}
        self._reqs: dict[int, tuple[int, JobRequest]] = {}
        self._dirty: set[int] = set()
        self._faults: dict[int, str] = {}  # job id -> why its request cannot be read
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._full_at = 0.0
        self.version = 0  # bumped whenever an entry changes (views cache on it)
        self.full_reads = 0
        self.partial_reads = 0

    def touch(self, ids: set[int]) -> None:
        with self._lock:
            self._dirty |= ids

    def refresh(
        self, session: Any, now: float, full: bool = False, wait: bool = True
    ) -> dict[int, Entry]:
        """Bring the mirror up to date; returns the live entries (a copy).
        One refresh at a time, so an older read never overwrites a newer one.
        With wait=False (views) a refresh under way is waited for at most
        VIEW_WAIT seconds, then this one reads what changed since (so a user
        sees the job they just submitted); after that the entries as they are
        now are returned, so no view hangs behind a very long full read."""
        if not self._refresh_lock.acquire(timeout=-1 if wait else VIEW_WAIT):
            with self._lock:
                return dict(self._entries)
        try:
            return self._refresh(session, now, full)
        finally:
            self._refresh_lock.release()

    def prime(self, requests: dict[int, JobRequest]) -> None:
        """Requests of just-submitted jobs (rev 0), already parsed by the submit
        path: the next refresh need not read and parse their JSON again."""
        with self._lock:
            for job_id, req in requests.items():
                self._reqs[job_id] = (0, req)

    def _refresh(self, session: Any, now: float, full: bool) -> dict[int, Entry]:
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        if full or now - self._full_at >= FULL_EVERY:
            entries = {
                r[0]: self._entry(session, r, now, str(r[-1]))
                for r in jobrepo.scan_active(session, (*_COLS, "request"))
            }
            self._full_at = now
            self.full_reads += 1
            with self._lock:
                self._entries = entries
                self.version += 1
                self._reqs = {j: v for j, v in self._reqs.items() if j in entries}
                return dict(self._entries)
        if dirty:
            self.partial_reads += 1
            ids = sorted(dirty)
            found: dict[int, Entry | None] = dict.fromkeys(ids)
            for i in range(0, len(ids), CHUNK):
                chunk = ids[i : i + CHUNK]
                rows = jobrepo.scan_by_id(session, chunk, _COLS)
                texts = self._missing_requests(session, rows)
                for r in rows:
                    active = r[2] in jobrepo.ACTIVE  # (id, rev, state, ...): _COLS
                    found[r[0]] = self._entry(session, r, now, texts.get(r[0])) if active else None
            with self._lock:
                self.version += 1
                for job_id, entry in found.items():
                    if entry is None:
                        self._entries.pop(job_id, None)
                        self._reqs.pop(job_id, None)
                    else:
                        self._entries[job_id] = entry
        with self._lock:
            return dict(self._entries)

    def _missing_requests(self, session: Any, rows: list[Any]) -> dict[int, str]:
        """Request JSON of the rows whose (id, rev) is not cached, in one query."""
        with self._lock:
            miss = [r[0] for r in rows if self._reqs.get(r[0], (-1, None))[0] != r[1]]
        return jobrepo.requests_by_id(session, miss)

    def _entry(self, session: Any, r: Any, now: float, text: str | None = None) -> Entry:
        # one tuple unpack: attribute access on result rows costs more than the rest
        (job_id, rev, state, user, account, run_partition, qos, held, array_job_id,
         array_task_id, submit_time, eligible_time, restarts, priority_override, site_factor,
         switch_wait_start, start_time, time_limit, allocation, reason, priority,
         planned_start, planned_nodes, nodelist) = tuple(r)[:_NCOLS]  # fmt: skip
        job = Job(
            id=job_id,
            request=self._request(session, job_id, rev, text),
            user=user,
            account=account,
            partition=run_partition if state != "PENDING" else "",
            qos=qos,
            submit=submit_time,
            state=_STATES[state],
            array_job_id=array_job_id,
            array_task_id=array_task_id,
            held=held,
            restarts=restarts,
            eligible=eligible_time,
            switch_wait_start=switch_wait_start,
            priority_override=priority_override,
            site_factor=site_factor,
        )
        meta = Meta(rev, state, reason, priority, planned_start, planned_nodes, nodelist)
        running = None
        if state != "PENDING" and allocation:
            alloc: Allocation = codec.alloc_from_json(allocation)  # type: ignore[assignment]
            start = start_time or now
            limit = UNLIMITED if (time_limit or TIME_INFINITE) >= TIME_INFINITE else time_limit
            running = Running(job, alloc, start, start + limit)
        return Entry(job, meta, running)

    def _request(self, session: Any, job_id: int, rev: int, text: str | None) -> JobRequest:
        with self._lock:
            hit = self._reqs.get(job_id)
        if hit is not None and hit[0] == rev:
            return hit[1]
        if text is None:
            text = jobrepo.request_text(session, job_id)
        try:
            req = codec.request_from_json(text or "{}")
            with self._lock:
                self._faults.pop(job_id, None)
        except Exception as e:  # a row from an older version, or damaged: this job only
            req = JobRequest()
            with self._lock:
                self._faults[job_id] = f"unreadable request: {describe(e)}"
        with self._lock:
            self._reqs[job_id] = (rev, req)
        return req

    def unreadable(self) -> dict[int, str]:
        """Jobs whose request could not be read (they carry a placeholder)."""
        with self._lock:
            self._faults = {j: e for j, e in self._faults.items() if j in self._entries}
            return dict(self._faults)

    def set_meta(self, job_id: int, **values: Any) -> None:
        """Apply wrote these columns of a pending job (reason, priority, ...)."""
        with self._lock:
            entry = self._entries.get(job_id)
            if entry is None:
                return
            for k, v in values.items():
                setattr(entry.meta, k, v)
            entry.cells = None
            self.version += 1

    def note(self, job_id: int, values: dict[str, Any]) -> None:
        """Scheduler columns the store wrote for a pending job (tide.store.jobs
        write_pending / set_eligible): applied as they are, no re-read."""
        eligible = values.get("eligible")
        meta = {k: v for k, v in values.items() if k != "eligible"}
        if meta:
            self.set_meta(job_id, **meta)
        if eligible is not None:
            self.set_eligible(job_id, eligible)

    def set_eligible(self, job_id: int, when: float) -> None:
        with self._lock:
            entry = self._entries.get(job_id)
            if entry is not None and entry.job.eligible is None:
                entry.job.eligible = when

    def snapshot_entries(self) -> list[Entry]:
        """The entries as they are now, without refreshing."""
        with self._lock:
            return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)


def load(ctl: Ctl, active: ActiveJobs, now: float, backfill: bool, full: bool = False,
         main_pass: bool = True) -> Loaded:  # fmt: skip
    """The snapshot of one pass. `main_pass`: False on a backfill tick no event
    asked for (Slurm's backfill thread alone; Snapshot.main_pass)."""
    with ctl.sessions() as s:
        entries = active.refresh(s, now, full)
        unreadable = active.unreadable()
        pending = [
            e.job
            for e in entries.values()
            if e.meta.state == "PENDING"
            and e.job.id not in unreadable
            and not jobfaults.quarantined(e.job.held, e.meta.reason)
        ]
        running = [e.running for e in entries.values() if e.running is not None]
        finished = _finished(s, pending)
        marks = preemption.read_marks(s)
    pending.sort(key=lambda j: j.id)
    running.sort(key=lambda r: r.job.id)
    # victims in their grace, suspended or parked (docs/preemption.md)
    states = {j: e.meta.state for j, e in entries.items()}
    shaped = preemption.shape(marks, states, pending, running, now)
    with ctl.lock:
        snap = Snapshot(
            cluster=ctl.live_cluster(),
            config=ctl.config,
            now=now,
            pending=shaped.pending,
            running=shaped.running,
            accounts=ctl.tree,
            usage=dict(ctl.usage),
            reservations=list(ctl.reservations),
            finished=finished,
            backfill=backfill,
            last_checkpoint=shaped.last_checkpoint,
            preempting=shaped.preempting,
            completing=completing(shaped.running),
            main_pass=main_pass,
            quotas=ctl.quotas,
        )
    faults = [
        JobFault(j, err)
        for j, err in sorted(unreadable.items())
        if j in entries
        and entries[j].meta.state == "PENDING"
        and not jobfaults.quarantined(entries[j].job.held, entries[j].meta.reason)
    ]
    return Loaded(snap, {j: e.meta for j, e in entries.items()}, entries, faults)


def completing(running: list[Running]) -> tuple[Allocation, ...]:
    """Snapshot.completing: what COMPLETING jobs hold (killed: by a preemption,
    a cancel, a node failure; processes not yet gone), as the twin's killed jobs
    give theirs (Slurm's cg_node_bitmap). Here such a job also stays in
    `running`, so what it holds is busy in the usage built from it, until the
    executor reports it gone; the core counts it once (tide.sched.preempt)."""
    return tuple(r.alloc for r in running if r.job.state is JobState.COMPLETING)


def _finished(s: Any, pending: list[Job]) -> dict[str, str]:
    """Final states of the jobs that pending jobs depend on."""
    ids: set[str] = set()
    for j in pending:
        dep = j.request.dependency
        if dep is None:
            continue
        for item in dep.items:
            ids.update(item.job_ids)
    ids = {i for i in ids if i.split("_", 1)[0].isdigit()}
    if not ids:
        return {}
    states = jobrepo.final_states(s, ids)
    return {k: v for k, v in states.items() if JobState(v).finished}
