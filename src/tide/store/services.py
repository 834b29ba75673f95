"""Services, their replicas and their events (docs/services.md).

A service row keeps the spec as the user wrote it (normalized JSON) and what
the controller decided (desired replicas, the autoscaler's memory); each
replica is a job of the jobs table (it is scheduled, run and accounted as
one) plus a row here with what only a replica has: its port, readiness and
the scale decision it answers. Events are the service's history: scaling
decisions with their reasons, replicas started, ready, drained, failed.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from tide.store.models import AttemptRow, ReplicaRow, ServiceEventRow, ServiceRow

ACTIVE, DELETING = "Active", "Deleting"
# replica states: Pending (job queued) -> Starting (job running, not ready yet)
# -> Ready <-> Unready; Draining (no new requests, finishing) -> Stopped; or Failed
LIVE_REPLICA = ("Pending", "Starting", "Ready", "Unready", "Draining")


def get(s: Session, name: str) -> ServiceRow | None:
    return s.get(ServiceRow, name)


def listing(s: Session, user: str | None = None) -> list[ServiceRow]:
    q = select(ServiceRow).order_by(ServiceRow.name)
    if user is not None:
        q = q.where(ServiceRow.user == user)
    return list(s.scalars(q))


def replicas(s: Session, name: str, live: bool = True) -> list[ReplicaRow]:
    q = select(ReplicaRow).where(ReplicaRow.service == name).order_by(ReplicaRow.id)
    if live:
        q = q.where(ReplicaRow.state.in_(LIVE_REPLICA))
    return list(s.scalars(q))


def recent_replicas(s: Session, name: str, limit: int = 20) -> list[ReplicaRow]:
    """The service's last `limit` replicas, live or ended, latest first."""
    q = select(ReplicaRow).where(ReplicaRow.service == name)
    return list(s.scalars(q.order_by(ReplicaRow.id.desc()).limit(limit)))


def live_replicas(s: Session) -> list[ReplicaRow]:
    q = select(ReplicaRow).where(ReplicaRow.state.in_(LIVE_REPLICA)).order_by(ReplicaRow.id)
    return list(s.scalars(q))


def set_replica(s: Session, replica_id: int, **values: Any) -> None:
    s.execute(update(ReplicaRow).where(ReplicaRow.id == replica_id).values(**values))


def event(
    s: Session, name: str, now: float, kind: str, message: str, value: float | None = None
) -> None:
    s.add(ServiceEventRow(service=name, time=now, kind=kind, message=message, value=value))


def events(s: Session, name: str, limit: int = 50) -> list[ServiceEventRow]:
    q = (
        select(ServiceEventRow)
        .where(ServiceEventRow.service == name)
        .order_by(ServiceEventRow.id.desc())
        .limit(limit)
    )
    return list(reversed(list(s.scalars(q))))


def remove(s: Session, name: str) -> None:
    """A deleted service's row; its replicas and events stay as history, and
    its replica jobs in the accounting."""
    s.execute(delete(ServiceRow).where(ServiceRow.name == name))


def gpu_seconds(s: Session, name: str, now: float) -> float:
    """GPU-seconds of every replica job the service ever ran (running ones to now)."""
    ids = select(ReplicaRow.job_id).where(ReplicaRow.service == name)
    ended = s.scalar(
        select(func.coalesce(func.sum(AttemptRow.gpu_seconds), 0.0)).where(
            AttemptRow.job_id.in_(ids), AttemptRow.end_time.is_not(None)
        )
    )
    running = s.execute(
        select(AttemptRow.gpus, AttemptRow.start_time).where(
            AttemptRow.job_id.in_(ids), AttemptRow.end_time.is_(None)
        )
    ).all()
    return float(ended or 0.0) + sum(g * max(0.0, now - t) for g, t in running)


def spec_doc(row: ServiceRow) -> dict[str, Any]:
    return json.loads(row.spec)
