"""Node administrative state (drain/resume/down with a reason)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tide.store.models import NodeRow


def load(session: Session) -> dict[str, NodeRow]:
    return {n.name: n for n in session.scalars(select(NodeRow))}


def ensure(session: Session, names: list[str], states: dict[str, tuple[str, str]]) -> None:
    """Create rows for nodes of the cluster file not yet in the store, with the
    state the file gives (a node already known keeps its stored state)."""
    known = set(session.scalars(select(NodeRow.name)))
    for name in names:
        if name not in known:
            state, reason = states.get(name, ("IDLE", ""))
            session.add(NodeRow(name=name, state=state, reason=reason))


def set_state(
    session: Session, name: str, state: str, reason: str, user: str, now: float
) -> NodeRow:
    row = session.get(NodeRow, name)
    if row is None:
        row = NodeRow(name=name)
        session.add(row)
    row.state = state
    row.reason = reason
    row.reason_user = user if reason else ""
    row.reason_time = now if reason else None
    return row
