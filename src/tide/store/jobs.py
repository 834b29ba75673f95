"""Job rows: bulk insert, guarded state transitions, queries.

Every state change goes through `transition`, an UPDATE guarded by the
states the caller expects (and optionally the request revision), so a
scheduling pass that decided on stale data cannot start a job that was
cancelled or held meanwhile: the guard fails and the caller skips it.

This module is the one door for job writes: each write names its jobs in
the session (`touched`: re-read them; `noted`: these columns changed), and
the controller's after_commit hook brings its in-memory queue up to date
from them, so no caller has to remember to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Select, and_, bindparam, event, func, insert, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from tide.store.models import JOBS, JobEventRow, JobRow

ACTIVE = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING")


def touched(session: Session) -> set[int]:
    """Ids of jobs this session wrote; the controller's after_commit hook reads
    them to refresh its in-memory queue (tide.server.snapshot)."""
    return session.info.setdefault("touched_jobs", set())  # type: ignore[no-any-return]


def noted(session: Session) -> dict[int, dict[str, Any]]:
    """Scheduler columns of pending jobs this session wrote (write_pending,
    set_eligible): the controller's after_commit hook applies them to its
    in-memory queue as they are, without re-reading the rows."""
    return session.info.setdefault("noted_jobs", {})  # type: ignore[no-any-return]


WriteHook = Callable[[set[int], dict[int, dict[str, Any]]], None]


def on_job_writes(sessions: sessionmaker[Session], hook: WriteHook) -> None:
    """Call `hook(touched, noted)` after each commit of a session from `sessions`
    that wrote jobs (the controller's in-memory queue); a rollback forgets them."""

    def committed(session: Session) -> None:
        ids = session.info.pop("touched_jobs", None) or set()
        notes = session.info.pop("noted_jobs", None) or {}
        if ids or notes:
            hook(ids, notes)

    def rolled_back(session: Session) -> None:
        session.info.pop("touched_jobs", None)
        session.info.pop("noted_jobs", None)

    event.listen(sessions, "after_commit", committed)
    event.listen(sessions, "after_rollback", rolled_back)


def write_pending(session: Session, changes: list[dict[str, Any]]) -> None:
    """Reason, priority and planned start/nodes of pending jobs (the loop's
    Apply), each a dict of jid, reason, priority, planned_start, planned_nodes."""
    if not changes:
        return
    stmt = (
        update(JOBS)
        .where(and_(JOBS.c.id == bindparam("jid"), JOBS.c.state == "PENDING"))
        .values(
            reason=bindparam("r"),
            priority=bindparam("p"),
            planned_start=bindparam("ps"),
            planned_nodes=bindparam("pn"),
        )
    )
    rows = [{"jid": c["jid"], "r": c["reason"], "p": c["priority"],
             "ps": c["planned_start"], "pn": c["planned_nodes"]} for c in changes]  # fmt: skip
    session.connection().execute(stmt, rows)
    note = noted(session)
    for c in changes:
        note.setdefault(c["jid"], {}).update({k: v for k, v in c.items() if k != "jid"})


def set_eligible(session: Session, when: dict[int, float]) -> None:
    """EligibleTime of pending jobs that had none (the core's Decisions.eligible)."""
    if not when:
        return
    stmt = (
        update(JOBS)
        .where(and_(JOBS.c.id == bindparam("jid"), JOBS.c.eligible_time.is_(None)))
        .values(eligible_time=bindparam("t"))
    )
    session.connection().execute(stmt, [{"jid": j, "t": t} for j, t in when.items()])
    note = noted(session)
    for j, t in when.items():
        note.setdefault(j, {})["eligible"] = t


def max_job_id(session: Session) -> int:
    return int(session.scalar(select(func.max(JobRow.id))) or 0)


def insert_jobs(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert new jobs (dicts of JobRow columns). The 'submitted' history entry
    is not a row: it is the job's submit_time (tide.server.views adds it), which
    halves the writes of a submission."""
    if not rows:
        return
    touched(session).update(r["id"] for r in rows)
    # Core insert (no ORM unit of work), one executemany per set of keys: Core
    # compiles the statement from the first row's keys, so rows that name other
    # columns (array tasks, say) go in their own group. Column defaults apply.
    groups: dict[frozenset[str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(frozenset(r), []).append(r)
    for group in groups.values():
        session.execute(insert(JOBS), group)


def get(session: Session, job_id: int) -> JobRow | None:
    return session.get(JobRow, job_id)


def rows_by_id(session: Session, ids: Sequence[int], chunk: int = 500) -> list[JobRow]:
    """The rows of these jobs (any state), read in chunks of `chunk` ids."""
    out: list[JobRow] = []
    for i in range(0, len(ids), chunk):
        out += session.scalars(select(JobRow).where(JobRow.id.in_(ids[i : i + chunk])))
    return out


def columns_by_id(session: Session, ids: Sequence[int], *columns: str) -> list[tuple[Any, ...]]:
    """(id, *columns) of these jobs, e.g. columns_by_id(s, [3], "state", "nodelist")."""
    if not ids:
        return []
    cols = [JobRow.id, *(getattr(JobRow, c) for c in columns)]
    return [tuple(r) for r in session.execute(select(*cols).where(JobRow.id.in_(ids)))]


def live_columns(session: Session, states: Iterable[str], *columns: str) -> list[tuple[Any, ...]]:
    """(id, *columns) of the jobs in `states`."""
    cols = [JobRow.id, *(getattr(JobRow, c) for c in columns)]
    return [tuple(r) for r in session.execute(select(*cols).where(JobRow.state.in_(tuple(states))))]


# --- the controller's mirror of the active jobs (tide.server.snapshot) ---------------
# Read through the connection, not the ORM: a full pass reads every active job
# (100,000 of them), and rows as plain tuples cost a fraction of ORM objects.


def scan_active(session: Session, columns: Sequence[str]) -> Iterable[Sequence[Any]]:
    """The named columns of every active job (ACTIVE states), in one read,
    streamed (iterate it before the session closes)."""
    cols = [getattr(JobRow, c) for c in columns]
    stmt = select(*cols).where(JobRow.state.in_(ACTIVE))
    return session.connection().execute(stmt)


def scan_by_id(session: Session, ids: Sequence[int], columns: Sequence[str]) -> list[Sequence[Any]]:
    """The named columns of these jobs (any state); pass at most a few thousand ids."""
    if not ids:
        return []
    cols = [getattr(JobRow, c) for c in columns]
    return list(session.connection().execute(select(*cols).where(JobRow.id.in_(ids))))


def requests_by_id(session: Session, ids: Sequence[int]) -> dict[int, str]:
    """Request JSON of these jobs, in one read."""
    if not ids:
        return {}
    stmt = select(JobRow.id, JobRow.request).where(JobRow.id.in_(ids))
    return {job_id: text for job_id, text in session.connection().execute(stmt)}


def request_text(session: Session, job_id: int) -> str | None:
    """One job's request JSON (None: no such job)."""
    return session.scalar(select(JobRow.request).where(JobRow.id == job_id))


def set_values(session: Session, job_id: int, values: dict[str, Any]) -> None:
    """Write columns that are no part of the job's state (a preemption mark, say),
    whatever its state; use `transition` for anything a state change guards."""
    touched(session).add(job_id)
    session.execute(update(JobRow).where(JobRow.id == job_id).values(**values))


def set_pending_reason(session: Session, job_id: int, reason: str) -> bool:
    """A pending job's reason, written only when it differs; True if written."""
    stmt = update(JobRow).where(
        JobRow.id == job_id, JobRow.state == "PENDING", JobRow.reason != reason
    )
    result = session.execute(stmt.values(reason=reason))
    touched(session).add(job_id)
    return bool(result.rowcount)  # type: ignore[attr-defined]


def in_phases(session: Session, phases: Iterable[str]) -> list[tuple[Any, ...]]:
    """(id, state, preempt_phase, preempted_by, preempt_kill_at, preempt_time,
    suspended_seconds) of the jobs in these preemption phases (an indexed read)."""
    stmt = select(
        JobRow.id, JobRow.state, JobRow.preempt_phase, JobRow.preempted_by,
        JobRow.preempt_kill_at, JobRow.preempt_time, JobRow.suspended_seconds,
    ).where(JobRow.preempt_phase.in_(tuple(phases)))  # fmt: skip
    return [tuple(r) for r in session.execute(stmt)]


def live_checkpoints(session: Session) -> list[tuple[Any, ...]]:
    """(id, last_checkpoint, suspended_seconds) of live jobs that saved their
    work or were suspended before (the rest have neither)."""
    stmt = select(JobRow.id, JobRow.last_checkpoint, JobRow.suspended_seconds).where(
        JobRow.state.in_(("RUNNING", "SUSPENDED", "COMPLETING")),
        or_(JobRow.last_checkpoint.is_not(None), JobRow.suspended_seconds > 0),
    )
    return [tuple(r) for r in session.execute(stmt)]


def first_in_account(session: Session, account: str, states: Iterable[str]) -> int | None:
    """The id of one job of `account` in `states` (None: there is none)."""
    stmt = select(JobRow.id).where(JobRow.account == account, JobRow.state.in_(tuple(states)))
    return session.scalar(stmt.limit(1))


def by_display_id(session: Session, job_id: int, task: int | None) -> list[JobRow]:
    """The rows scancel-style id names: task `task` of array `job_id`; with no task,
    every task of array `job_id`, else the single job `job_id`. [] if none."""
    if task is not None:
        stmt = select(JobRow).where(JobRow.array_job_id == job_id, JobRow.array_task_id == task)
        return list(session.scalars(stmt))
    rows = list(session.scalars(select(JobRow).where(JobRow.array_job_id == job_id)))
    if rows:
        return rows
    row = session.get(JobRow, job_id)
    return [row] if row is not None else []


def transition(
    session: Session,
    job_id: int,
    from_states: Iterable[str],
    to_state: str | None,
    now: float,
    values: dict[str, Any] | None = None,
    reason: str = "",
    actor: str = "",
    rev: int | None = None,
) -> bool:
    """Move a job from one of `from_states` to `to_state` (None: keep the state,
    only set `values`). Returns False, changing nothing, when the guard fails."""
    touched(session).add(job_id)
    states = tuple(from_states)
    from_state = states[0] if len(states) == 1 else ""
    if to_state is not None and not from_state:
        from_state = session.scalar(select(JobRow.state).where(JobRow.id == job_id)) or ""
        if from_state not in states:
            return False
    stmt = update(JobRow).where(JobRow.id == job_id, JobRow.state.in_(states))
    if rev is not None:
        stmt = stmt.where(JobRow.rev == rev)
    vals = dict(values or {})
    if to_state is not None:
        vals["state"] = to_state
    if not vals:
        return True
    result = session.execute(stmt.values(**vals).execution_options(synchronize_session=False))
    if result.rowcount != 1:  # type: ignore[attr-defined]
        return False
    if to_state is not None:
        add_event(session, job_id, now, from_state, to_state, reason, actor)
    return True


def add_event(
    session: Session,
    job_id: int,
    now: float,
    from_state: str,
    to_state: str,
    reason: str,
    actor: str,
) -> None:
    session.add(
        JobEventRow(
            job_id=job_id,
            time=now,
            from_state=from_state,
            to_state=to_state,
            reason=reason,
            actor=actor,
        )
    )


def events(session: Session, job_id: int) -> list[JobEventRow]:
    stmt = select(JobEventRow).where(JobEventRow.job_id == job_id).order_by(JobEventRow.id)
    return list(session.scalars(stmt))


@dataclass(slots=True)
class JobFilter:
    """squeue/sacct style filters; empty means 'any'."""

    ids: tuple[int, ...] = ()
    array_ids: tuple[int, ...] = ()  # whole arrays by ArrayJobId
    states: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    start_after: float | None = None  # sacct -S: ended after, or still active
    end_before: float | None = None  # sacct -E: submitted before
    limit: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def apply_filter(stmt: Select[Any], f: JobFilter) -> Select[Any]:
    if f.ids or f.array_ids:
        conds = []
        if f.ids:
            conds.append(JobRow.id.in_(f.ids))
        if f.array_ids:
            conds.append(JobRow.array_job_id.in_(f.array_ids))
        stmt = stmt.where(or_(*conds))
    if f.states:
        stmt = stmt.where(JobRow.state.in_(f.states))
    if f.users:
        stmt = stmt.where(JobRow.user.in_(f.users))
    if f.accounts:
        stmt = stmt.where(JobRow.account.in_(f.accounts))
    if f.partitions:
        conds = [JobRow.run_partition.in_(f.partitions)]
        conds += [JobRow.partition.like(f"%{p}%") for p in f.partitions]
        stmt = stmt.where(or_(*conds))
    if f.names:
        stmt = stmt.where(JobRow.name.in_(f.names))
    if f.start_after is not None:
        stmt = stmt.where(or_(JobRow.end_time.is_(None), JobRow.end_time >= f.start_after))
    if f.end_before is not None:
        stmt = stmt.where(JobRow.submit_time <= f.end_before)
    stmt = stmt.order_by(JobRow.id)
    if f.limit:
        stmt = stmt.limit(f.limit)
    return stmt


def query_columns(session: Session, columns: Sequence[str], f: JobFilter) -> list[tuple[Any, ...]]:
    """Rows of the named JobRow columns only: what a 100,000-job `tide queue` reads."""
    cols = [getattr(JobRow, c) for c in columns]
    stmt = apply_filter(select(*cols), f)
    return [tuple(r) for r in session.execute(stmt)]


def query_rows(session: Session, f: JobFilter) -> list[JobRow]:
    return list(session.scalars(apply_filter(select(JobRow), f)))


def final_states(session: Session, display_ids: Iterable[str]) -> dict[str, str]:
    """Final state per display id ("12", "12_3") of the jobs named by `display_ids`,
    with every task of a named array. Callers pass finished jobs' ids only."""
    plain: set[int] = set()
    for d in display_ids:
        head = d.split("_", 1)[0].split("+", 1)[0]
        if head.isdigit():
            plain.add(int(head))
    if not plain:
        return {}
    stmt = select(JobRow.id, JobRow.array_job_id, JobRow.array_task_id, JobRow.state).where(
        or_(JobRow.id.in_(plain), JobRow.array_job_id.in_(plain))
    )
    out: dict[str, str] = {}
    for jid, aid, tid, state in session.execute(stmt):
        if aid is not None and tid is not None:
            out[f"{aid}_{tid}"] = state
            if jid != aid:  # a task named by its own job id; "aid" means the array
                out[str(jid)] = state
        else:
            out[str(jid)] = state
    return out
