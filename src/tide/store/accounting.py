"""Accounting: one row per run attempt, and GPU-hour reports over a period.

A job's GPU-seconds in a period are its GPUs times the part of each attempt
that overlaps the period (sreport's convention: usage is counted in the
period where it happened, not where the job ended).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from tide.store.models import AttemptRow, PriceRow


def open_attempt(session: Session, **values: object) -> None:
    session.add(AttemptRow(**values))


def close_attempt(
    session: Session,
    job_id: int,
    attempt: int,
    end: float,
    state: str,
    exit_code: int | None,
    exit_signal: int | None,
    **recovery: object,
) -> float:
    """End an attempt; returns its GPU-seconds. `recovery` may set the attempt's
    lost_gpu_seconds, cause, last_checkpoint_step and last_checkpoint_time.
    An attempt already closed is left alone (an exit reported twice)."""
    row = session.scalar(
        select(AttemptRow).where(AttemptRow.job_id == job_id, AttemptRow.attempt == attempt)
    )
    if row is None or row.end_time is not None:
        return 0.0
    gpu_seconds = max(0.0, end - row.start_time) * row.gpus
    session.execute(
        update(AttemptRow)
        .where(AttemptRow.id == row.id)
        .values(
            end_time=end,
            state=state,
            exit_code=exit_code,
            exit_signal=exit_signal,
            gpu_seconds=gpu_seconds,
            **recovery,
        )
    )
    return gpu_seconds


def last_attempt(session: Session, job_id: int) -> AttemptRow | None:
    """The job's latest run attempt (None: it never started)."""
    stmt = select(AttemptRow).where(AttemptRow.job_id == job_id)
    return session.scalars(stmt.order_by(AttemptRow.attempt.desc()).limit(1)).first()


def attempts(session: Session, job_ids: list[int]) -> list[AttemptRow]:
    stmt = (
        select(AttemptRow)
        .where(AttemptRow.job_id.in_(job_ids))
        .order_by(AttemptRow.job_id, AttemptRow.attempt)
    )
    return list(session.scalars(stmt))


def prices(session: Session) -> dict[str, float]:
    return {p.gpu_type: p.per_gpu_hour for p in session.scalars(select(PriceRow))}


def set_price(session: Session, gpu_type: str, per_gpu_hour: float) -> None:
    session.merge(PriceRow(gpu_type=gpu_type, per_gpu_hour=per_gpu_hour))


@dataclass(slots=True)
class ReportLine:
    account: str
    user: str
    gpu_type: str
    gpu_seconds: float = 0.0
    jobs: int = 0
    lost_gpu_seconds: float = 0.0  # of attempts that failed in the period (docs/recovery.md)

    @property
    def gpu_hours(self) -> float:
        return self.gpu_seconds / 3600.0


def report(session: Session, start: float, end: float, now: float) -> list[ReportLine]:
    """GPU-seconds per (account, user, GPU type) inside [start, end), and the
    GPU-seconds lost by attempts that ended in it. Running attempts count up to `now`."""
    stmt = select(AttemptRow).where(
        AttemptRow.start_time < end,
        or_(AttemptRow.end_time.is_(None), AttemptRow.end_time > start),
        AttemptRow.gpus > 0,
    )
    lines: dict[tuple[str, str, str], ReportLine] = {}
    jobs: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    for a in session.scalars(stmt):
        a_end = a.end_time if a.end_time is not None else now
        overlap = min(a_end, end) - max(a.start_time, start)
        if overlap <= 0:
            continue
        key = (a.account, a.user, a.gpu_type)
        line = lines.setdefault(key, ReportLine(a.account, a.user, a.gpu_type))
        line.gpu_seconds += overlap * a.gpus
        if a.end_time is not None and start <= a.end_time < end:
            line.lost_gpu_seconds += a.lost_gpu_seconds  # counted where the failure happened
        jobs[key].add(a.job_id)
    for key, line in lines.items():
        line.jobs = len(jobs[key])
    return sorted(lines.values(), key=lambda x: (x.account, x.user, x.gpu_type))


def attempts_between(
    session: Session, start: float, end: float, users: tuple[str, ...] = ()
) -> list[AttemptRow]:
    """Attempts with GPUs that overlap [start, end) (running ones included),
    of these users only when given."""
    stmt = select(AttemptRow).where(
        AttemptRow.start_time < end,
        or_(AttemptRow.end_time.is_(None), AttemptRow.end_time > start),
        AttemptRow.gpus > 0,
    )
    if users:
        stmt = stmt.where(AttemptRow.user.in_(users))
    return list(session.scalars(stmt))
