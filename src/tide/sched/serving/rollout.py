"""Replica sets and rolling updates: Kubernetes' Deployment controller
(RollingUpdate strategy) as one pure step. Pure.

Each step looks at the live replicas (those not already draining) and the
desired count, and says how many replicas of the current generation to start
and which replicas to stop (drain first, then stop):

* no update in progress: start the missing replicas, or stop the extra ones
  in Kubernetes' ReplicaSet order (not yet running, then not ready, then
  ready; newest first among equals);
* an update (replicas of an older generation remain): at most
  `desired + max_surge` live replicas at any time, and old ready replicas go
  only while at least `desired - max_unavailable` replicas stay ready, so a
  rollout with max_unavailable 0 never has fewer ready replicas than asked
  for (if it had that many to begin with). Old replicas that are not ready
  serve nothing and go at once.

Example (desired 2, max_surge 1, max_unavailable 0): old A, B ready ->
start new C -> C ready: stop A -> start D -> D ready: stop B -> done.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tide.model.service import Rollout

_ORDER = {"Pending": 0, "Starting": 1, "Unready": 2, "Ready": 3}


@dataclass(slots=True, frozen=True)
class ReplicaView:
    id: int
    generation: int
    state: str  # Pending, Starting, Ready, Unready (Draining ones are not passed)
    created: float


@dataclass(slots=True)
class Step:
    create: int = 0
    stop: list[int] = field(default_factory=list)
    reason: str = ""


def _stop_order(r: ReplicaView) -> tuple[int, float, int]:
    return (_ORDER.get(r.state, 0), -r.created, -r.id)


def step(replicas: list[ReplicaView], desired: int, generation: int, rollout: Rollout) -> Step:
    new = [r for r in replicas if r.generation >= generation]
    old = [r for r in replicas if r.generation < generation]
    if not old:
        return _scale(new, desired)
    out = Step(reason=f"rolling update to generation {generation}")
    for r in sorted(old, key=_stop_order):
        if r.state != "Ready":
            out.stop.append(r.id)  # serves nothing: no reason to keep it
    old_ready = [r for r in old if r.state == "Ready"]
    live = len(new) + len(old_ready)
    if len(new) > desired:  # scaled down during the update
        extra = sorted(new, key=_stop_order)[: len(new) - desired]
        out.stop += [r.id for r in extra]
        new = [r for r in new if r not in extra]
        live = len(new) + len(old_ready)
    ready = sum(r.state == "Ready" for r in new) + len(old_ready)
    surge, unavailable = rollout.resolve(desired)
    floor = max(0, desired - unavailable)
    can_go = max(0, ready - floor)
    # old ready replicas beyond what the policy needs ready, oldest first
    going = sorted(old_ready, key=lambda r: (r.created, r.id))[:can_go]
    out.stop += [r.id for r in going]
    live -= len(going)
    out.create = max(0, min(desired - len(new), desired + surge - live))
    return out


def _scale(new: list[ReplicaView], desired: int) -> Step:
    if len(new) < desired:
        return Step(create=desired - len(new), reason=f"{len(new)} of {desired} replicas")
    if len(new) > desired:
        extra = sorted(new, key=_stop_order)[: len(new) - desired]
        return Step(stop=[r.id for r in extra], reason=f"{len(new)} replicas, {desired} wanted")
    return Step()
