"""Lending and reclaim between pools: how much of a serving pool borrowed
work may use, and how fast it must give it back. Pure.

GPU lending (Pool.mode "gpu", tide's tidal pattern)
  spare(t) = the pool's GPUs - GPUs its replicas hold - GPUs its pending
             replicas ask for - keep_idle  (never below 0)
  budget(t) = the lowest spare(s) over s in [t - lend_after, t]
  Borrowed work may hold up to `budget` GPUs of the pool. Measured idleness
  with hysteresis: capacity is lent only once it has stayed spare for the
  whole `lend_after` window, and a dip (a burst of traffic) closes it again
  for another full window, so the lent amount cannot flap with noisy load.
  The budget never forces a borrower out: reclaim happens only when a
  replica needs the GPUs (the serving pass preempts, tide.sched.serving.pools).

Node lending (Pool.mode "node", slurm-bridge style)
  A node is SERVING, LENT, DRAINING (given back: no new borrowers, waiting
  for the running ones to end), or SWITCHING (changing sides: unusable for
  `switch_gap` seconds). A SERVING node with no replica for `lend_after`
  seconds is lent (keeping `keep_idle` empty serving nodes); when pending
  replicas need more than the SERVING nodes have free, LENT nodes drain,
  those with the fewest borrowed GPUs first.

Reclaim deadline
  A replica must be ready `reclaim_objective` seconds after the scale-up
  decision (its job's submit time). Starting it takes `startup`, the passes
  around the kill take `margin`, so the borrower's grace is
      grace = objective - startup - margin - (now - decision)
  clamped to [0, max_grace]: the replica is ready in time whenever the
  startup estimate holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tide.model.service import Pool

SERVING, LENT, DRAINING, SWITCHING = "SERVING", "LENT", "DRAINING", "SWITCHING"


def reclaim_grace(pool: Pool, decided: float, now: float) -> int:
    """Seconds a reclaimed borrower may take to checkpoint and leave."""
    left = pool.reclaim_objective - pool.startup - pool.margin - max(0.0, now - decided)
    return int(max(0.0, min(pool.max_grace, left)))


# --- GPU lending -----------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class GpuLending:
    """The spare history of one pool: (time, spare GPUs) samples, each valid
    until the next one; only what the window still needs is kept."""

    samples: tuple[tuple[float, int], ...] = ()
    since: float | None = None  # first observation: nothing is lent before a full window


def spare_gpus(pool: Pool, total: int, replica_gpus: int, pending_gpus: int) -> int:
    return max(0, total - replica_gpus - pending_gpus - pool.keep_idle)


def observe_gpus(pool: Pool, state: GpuLending, now: float, spare: int) -> tuple[int, GpuLending]:
    """Record spare GPUs at `now`; return the lending budget and the new state."""
    since = state.since if state.since is not None else now
    start = now - pool.lend_after
    kept: list[tuple[float, int]] = []
    for i, (t, s) in enumerate(state.samples):
        nxt = state.samples[i + 1][0] if i + 1 < len(state.samples) else now
        if nxt > start:  # still covers part of the window
            kept.append((t, s))
    kept.append((now, spare))
    new = GpuLending(tuple(kept), since)
    if now - since < pool.lend_after:  # not observed for a full window yet
        return 0, new
    return min(s for _, s in kept), new


# --- node lending ----------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class NodeSide:
    state: str = SERVING
    since: float = 0.0  # when it entered the state
    until: float = 0.0  # SWITCHING: when the switch is over
    to: str = ""  # SWITCHING: the state it switches to
    empty_since: float | None = None  # SERVING: no replica on it since


@dataclass(slots=True, frozen=True)
class NodeView:
    """One pool node as the lending rule sees it now."""

    node: int
    gpus: int
    replica_gpus: int  # held by the pool's own replicas
    borrowed_gpus: int  # held by borrowed work


@dataclass(slots=True, frozen=True)
class NodeLending:
    sides: tuple[tuple[int, NodeSide], ...] = ()

    def side(self, node: int) -> NodeSide | None:
        for n, s in self.sides:
            if n == node:
                return s
        return None


@dataclass(slots=True)
class NodeMoves:
    """What changed in one step, for the record."""

    lent: list[int] = field(default_factory=list)
    draining: list[int] = field(default_factory=list)
    switching: list[int] = field(default_factory=list)
    back: list[int] = field(default_factory=list)


def observe_nodes(
    pool: Pool, state: NodeLending, now: float, nodes: list[NodeView], pending_gpus: int
) -> tuple[NodeLending, NodeMoves]:
    """One step of the node state machine."""
    moves = NodeMoves()
    sides = {n.node: state.side(n.node) or NodeSide(SERVING, now, empty_since=now) for n in nodes}
    for n in nodes:  # finished switches, finished drains, emptiness
        s = sides[n.node]
        if s.state == SWITCHING and now >= s.until:
            s = NodeSide(s.to, now, empty_since=now if s.to == SERVING else None)
            (moves.back if s.state == SERVING else moves.lent).append(n.node)
        elif s.state == DRAINING and (
            n.borrowed_gpus == 0
            or (pool.drain_timeout is not None and now - s.since >= pool.drain_timeout)
        ):
            s = _switch(pool, SERVING, now)
            moves.switching.append(n.node)
        elif s.state == SERVING:
            empty = n.replica_gpus == 0
            if not empty:
                s = NodeSide(SERVING, s.since, empty_since=None)
            elif s.empty_since is None:
                s = NodeSide(SERVING, s.since, empty_since=now)
        sides[n.node] = s
    _reclaim_nodes(pool, sides, nodes, pending_gpus, now, moves)
    _lend_nodes(pool, sides, nodes, pending_gpus, now, moves)
    return NodeLending(tuple(sorted(sides.items()))), moves


def _since(side: NodeSide) -> float:
    return side.empty_since if side.empty_since is not None else float("inf")


def _switch(pool: Pool, to: str, now: float) -> NodeSide:
    if pool.switch_gap <= 0:
        return NodeSide(to, now, empty_since=now if to == SERVING else None)
    return NodeSide(SWITCHING, now, until=now + pool.switch_gap, to=to)


def _serving_free(sides: dict[int, NodeSide], nodes: list[NodeView]) -> int:
    return sum(
        n.gpus - n.replica_gpus - n.borrowed_gpus for n in nodes if sides[n.node].state == SERVING
    )


def _coming_back(sides: dict[int, NodeSide], nodes: list[NodeView]) -> int:
    """GPUs already on their way back to serving (draining or switching to it)."""
    return sum(
        n.gpus
        for n in nodes
        if sides[n.node].state == DRAINING
        or (sides[n.node].state == SWITCHING and sides[n.node].to == SERVING)
    )


def _reclaim_nodes(
    pool: Pool,
    sides: dict[int, NodeSide],
    nodes: list[NodeView],
    pending_gpus: int,
    now: float,
    moves: NodeMoves,
) -> None:
    short = pending_gpus - _serving_free(sides, nodes) - _coming_back(sides, nodes)
    lent = sorted(
        (n for n in nodes if sides[n.node].state == LENT), key=lambda n: (n.borrowed_gpus, n.node)
    )
    for n in lent:
        if short <= 0:
            return
        if n.borrowed_gpus == 0:
            sides[n.node] = _switch(pool, SERVING, now)
            moves.switching.append(n.node)
        else:
            sides[n.node] = NodeSide(DRAINING, now)
            moves.draining.append(n.node)
        short -= n.gpus


def _lend_nodes(
    pool: Pool,
    sides: dict[int, NodeSide],
    nodes: list[NodeView],
    pending_gpus: int,
    now: float,
    moves: NodeMoves,
) -> None:
    if pending_gpus > 0 or not pool.lends:
        return
    empty = [
        n
        for n in nodes
        if sides[n.node].state == SERVING
        and n.replica_gpus == 0
        and n.borrowed_gpus == 0
        and sides[n.node].empty_since is not None
    ]
    idle = [n for n in empty if now - _since(sides[n.node]) >= pool.lend_after]
    keep = max(0, pool.keep_idle - (len(empty) - len(idle)))
    for n in sorted(idle, key=lambda n: -n.node)[: max(0, len(idle) - keep)]:
        sides[n.node] = _switch(pool, LENT, now)
        (moves.switching if pool.switch_gap > 0 else moves.lent).append(n.node)
