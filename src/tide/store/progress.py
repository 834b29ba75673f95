"""Training progress rows (tide.efficiency.Progress per job)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from tide.efficiency import Progress
from tide.store.models import JobProgressRow


def load(session: Session, job_id: int) -> Progress | None:
    row = session.get(JobProgressRow, job_id)
    return Progress.from_dict(json.loads(row.data)) if row is not None else None


def save(
    session: Session, job_id: int, user: str, account: str, progress: Progress, now: float
) -> None:
    row = session.get(JobProgressRow, job_id)
    if row is None:
        row = JobProgressRow(job_id=job_id, user=user, account=account)
        session.add(row)
    row.updated = now
    row.data = json.dumps(progress.to_dict(), separators=(",", ":"))


def for_jobs(session: Session, job_ids: Iterable[int]) -> dict[int, Progress]:
    ids = list(job_ids)
    out: dict[int, Progress] = {}
    for i in range(0, len(ids), 500):  # bounded IN lists
        stmt = select(JobProgressRow).where(JobProgressRow.job_id.in_(ids[i : i + 500]))
        for row in session.scalars(stmt):
            out[row.job_id] = Progress.from_dict(json.loads(row.data))
    return out


def updated_since(session: Session, since: float, users: tuple[str, ...] = ()) -> list[int]:
    """Ids of the jobs that reported since `since` (all users, or these)."""
    stmt = select(JobProgressRow.job_id).where(JobProgressRow.updated >= since)
    if users:
        stmt = stmt.where(JobProgressRow.user.in_(users))
    return list(session.scalars(stmt))
