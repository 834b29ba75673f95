"""Fair-share over time: samples of `sshare -l` per association, bounded.

Two tiers, so storage stays small however long the server runs:
* fine: one sample every PriorityCalcPeriod (clamped to [1 s, 1 h]), the
  newest FINE_KEEP of them per association;
* hourly: one sample an hour, kept HOURLY_KEEP_S (90 days).
With A associations that is at most A x (FINE_KEEP + 2160) rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from tide.sched.fairshare import ShareRow
from tide.store.models import ShareSampleRow

HOURLY = 3600
FINE_KEEP = 576  # fine samples kept per association (2 days at 5 minutes)
HOURLY_KEEP_S = 90 * 86400


@dataclass(frozen=True, slots=True)
class ShareSample:
    time: float
    account: str
    user: str
    raw_usage: float
    eff_usage: float
    norm_shares: float
    level_fs: float | None
    fairshare: float | None


def fine_every(calc_period: float) -> int:
    """Seconds between fine samples: the PriorityCalcPeriod, within [1 s, 1 h]."""
    return int(min(HOURLY, max(1, round(calc_period))))


def last_time(session: Session, every: int) -> float | None:
    stmt = select(func.max(ShareSampleRow.time)).where(ShareSampleRow.every == every)
    return session.scalar(stmt)


def record(session: Session, now: float, every: int, rows: Iterable[ShareRow]) -> int:
    """Add one sample of every association (root left out) in tier `every`."""
    n = 0
    for r in rows:
        if r.depth == 0:
            continue
        session.add(
            ShareSampleRow(
                time=now,
                every=every,
                account=r.account,
                user=r.user,
                raw_usage=r.raw_usage,
                eff_usage=r.eff_usage,
                norm_shares=r.norm_shares,
                level_fs=_finite(r.level_fs),
                fairshare=r.fairshare,
            )
        )
        n += 1
    return n


def prune(session: Session, now: float, fine: int) -> None:
    """Drop what the bounds no longer keep: fine samples beyond the newest
    FINE_KEEP intervals (any old fine tier too, after a period change) and
    hourly samples older than HOURLY_KEEP_S."""
    session.execute(
        delete(ShareSampleRow).where(
            ShareSampleRow.every != HOURLY,
            (ShareSampleRow.every != fine) | (ShareSampleRow.time <= now - FINE_KEEP * fine),
        )
    )
    session.execute(
        delete(ShareSampleRow).where(
            ShareSampleRow.every == HOURLY, ShareSampleRow.time < now - HOURLY_KEEP_S
        )
    )


def between(session: Session, start: float, end: float, every: int) -> list[ShareSample]:
    """The samples of tier `every` in [start, end], oldest first."""
    stmt = (
        select(ShareSampleRow)
        .where(
            ShareSampleRow.every == every,
            ShareSampleRow.time >= start,
            ShareSampleRow.time <= end,
        )
        .order_by(ShareSampleRow.time, ShareSampleRow.id)
    )
    names = [f.name for f in fields(ShareSample)]
    return [ShareSample(*(getattr(r, n) for n in names)) for r in session.scalars(stmt)]


def oldest(session: Session, every: int) -> float | None:
    stmt = select(func.min(ShareSampleRow.time)).where(ShareSampleRow.every == every)
    return session.scalar(stmt)


def _finite(x: float | None) -> float | None:
    """Level fair-share is infinite for an association with shares and no
    usage; stored as None (the database may not take inf)."""
    return x if x is not None and x != float("inf") else None
