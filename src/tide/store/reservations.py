"""Advance reservations."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from tide.model import Reservation
from tide.store.codec import csv, uncsv
from tide.store.models import ReservationRow


def to_model(r: ReservationRow) -> Reservation:
    return Reservation(
        name=r.name,
        start=r.start,
        end=r.end,
        nodes=uncsv(r.nodes),
        gpus=r.gpus,
        accounts=uncsv(r.accounts),
        users=uncsv(r.users),
        flags=uncsv(r.flags),
        partition=r.partition,
    )


def load(session: Session, now: float | None = None) -> list[Reservation]:
    stmt = select(ReservationRow).order_by(ReservationRow.start)
    if now is not None:
        stmt = stmt.where(ReservationRow.end > now)
    return [to_model(r) for r in session.scalars(stmt)]


def put(session: Session, r: Reservation) -> None:
    session.merge(
        ReservationRow(
            name=r.name,
            start=r.start,
            end=r.end,
            nodes=csv(r.nodes),
            gpus=r.gpus,
            accounts=csv(r.accounts),
            users=csv(r.users),
            flags=csv(r.flags),
            partition=r.partition,
        )
    )


def remove(session: Session, name: str) -> bool:
    res = session.execute(delete(ReservationRow).where(ReservationRow.name == name))
    return bool(res.rowcount)  # type: ignore[attr-defined]
