"""Decayed usage per association, the input of fair-share."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tide.store.models import UsageRow


def load(session: Session) -> dict[str, UsageRow]:
    return {u.key: u for u in session.scalars(select(UsageRow))}


def values(session: Session) -> dict[str, float]:
    return {k: r.value for k, r in load(session).items()}


def save(session: Session, usage: dict[str, float], raw_add: dict[str, float], now: float) -> None:
    """Write decayed values (and add to the undecayed totals)."""
    rows = load(session)
    for key, value in usage.items():
        row = rows.get(key)
        if row is None:
            row = UsageRow(key=key, value=0.0, raw=0.0, updated=now)
            session.add(row)
        row.value = value
        row.raw = (row.raw or 0.0) + raw_add.get(key, 0.0)
        row.updated = now


def reset(session: Session, key: str | None = None) -> None:
    """sacctmgr modify account ... set RawUsage=0."""
    for row in load(session).values():
        if key is None or row.key == key or row.key.startswith(key + "/"):
            row.value = 0.0
