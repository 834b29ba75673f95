"""What `tide service ls` says about a service: its status and why, from its
replicas (pure: the caller reads the store and the clock).

Kubernetes splits this between a Deployment's conditions (Available,
Progressing) and a pod's status (CrashLoopBackOff with its last exit code);
a service here gets one word with its reason:

* Deleting: asked to go; replicas drain, then stop.
* CrashLoopBackOff: two or more replicas of the current template in a row
  ended before ever being ready (the command exits at once, the port is
  taken, the model cannot load), also while replicas of an older template
  still serve (the rollout is stuck): the reason
  counts them, gives the last one's end (job state, exit code) and when the
  next replica starts (the controller's back-off).
* Degraded: fewer ready than desired because something went wrong, not
  because replicas are still starting: a replica failing its readiness
  probe, or one that ended without being asked to within FAILED_RECENTLY.
* Progressing: fewer ready than desired while replicas are pending or
  starting (scaling up, a rollout), nothing failed.
* Active: as many ready replicas as desired (none for a service scaled to
  zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FAILED_RECENTLY = 120.0  # s: a failure this recent explains a shortfall
CRASH_LOOP = 2  # failures in a row before ever ready


@dataclass(frozen=True, slots=True)
class ReplicaFacts:
    id: int
    job_id: int
    generation: int
    state: str
    created: float
    ready: float | None
    ended: float | None
    reason: str


@dataclass(frozen=True, slots=True)
class Health:
    status: str
    reason: str


def service_health(
    lifecycle: str,
    desired: int,
    generation: int,
    replicas: Sequence[ReplicaFacts],
    now: float,
    backoff_until: float | None = None,
) -> Health:
    """`replicas`: the live ones and the recent ended ones, any order."""
    if lifecycle == "Deleting":
        return Health("Deleting", "replicas drain, then stop")
    live = [r for r in replicas if r.ended is None and r.state != "Draining"]
    ready = sum(r.state == "Ready" for r in live)
    short = f"{ready} of {desired} replicas ready"
    crashed = _crash_loop(generation, replicas) if desired > 0 else []
    if len(crashed) >= CRASH_LOOP:  # also while older replicas serve: a rollout is stuck
        last = crashed[0]
        why = (
            f"{short}; {len(crashed)} replicas in a row ended before ever being ready, the "
            f"last: replica {last.id} (job {last.job_id}) {last.reason or 'failed'}"
        )
        if backoff_until is not None and backoff_until > now:
            why += f"; next replica in {backoff_until - now:.0f} s"
        return Health("CrashLoopBackOff", why)
    if ready >= desired:
        return Health("Active", short)
    unready = [r for r in live if r.state == "Unready"]
    if unready:
        return Health("Degraded", f"{short}; replica {unready[0].id} fails its readiness probe")
    failed = [
        r
        for r in replicas
        if r.state == "Failed" and r.ended is not None and now - r.ended <= FAILED_RECENTLY
    ]
    if failed:
        last = max(failed, key=lambda r: (r.ended or 0.0, r.id))
        ago = now - (last.ended or now)
        why = f"{short}; replica {last.id} (job {last.job_id}) {last.reason or 'failed'}"
        return Health("Degraded", f"{why} {ago:.0f} s ago")
    pending = sum(r.state == "Pending" for r in live)
    starting = sum(r.state == "Starting" for r in live)
    return Health("Progressing", f"{short}; {starting} starting, {pending} pending")


def _crash_loop(generation: int, replicas: Sequence[ReplicaFacts]) -> list[ReplicaFacts]:
    """The current template's replicas that failed before ever being ready, latest
    first, back to the last one that was ready (which ends a crash loop)."""
    ordered = sorted(
        (r for r in replicas if r.generation == generation),
        key=lambda r: r.id,
        reverse=True,
    )
    out: list[ReplicaFacts] = []
    for r in ordered:
        if r.ready is not None:
            break
        if r.state == "Failed":
            out.append(r)
    return out
