"""Preemption in the twin: how the engine applies Decisions.preemptions.

The rules of the live controller (docs/preemption.md), on the virtual clock:
- REQUEUE / CANCEL: the victim gets its signal at the decision and keeps
  running through its grace; at decision + grace it is killed and loses the
  work since its last completed checkpoint, exactly as a node failure does
  (tide.sim.faults: same accounting, same requeue with the saved work). A
  REQUEUE victim goes back to the queue; a CANCEL victim ends PREEMPTED.
  With `Engine.save_on_warning`, a checkpointing victim whose grace is at
  least its checkpoint cost saves on the signal (tide.job's protocol) and
  leaves at decision + cost, losing nothing.
  A victim that ends on its own during the grace is not killed.
- SUSPEND: the victim stops at once, losing nothing. Its GPUs and memory stay
  held (Slurm does not release GRES of suspended jobs); its cores are lent to
  the preemptor (the cores the preemptor does not take are held again when it
  starts). Once the preemptor has run and ended (or left without starting),
  the victim resumes as soon as its cores are free, and finishes with its
  time limit pushed back by the time it was suspended.
The preemptor starts in a later cycle, once the victims' resources are free:
every kill (and every suspension) triggers a cycle. A requeued victim is back
in the queue once its preemptor is no longer pending (it started or left), so
it cannot take back the place it was preempted from before its preemptor
does; when no event is left, parked victims come back regardless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tide.model import JobState
from tide.sched.types import Allocation, NodeAlloc, Preemption
from tide.sim.events import COMPLETE, END, PREEMPT, WAKE, Suspension
from tide.sim.faults import _lose

if TYPE_CHECKING:
    from tide.sim.engine_view import EngineView


def apply(engine: EngineView, now: float, p: Preemption) -> None:
    """Start one preemption the core decided."""
    act = engine.active.get(p.victim)
    if act is None or p.victim in engine.preempting or p.victim in engine.suspended:
        return
    if p.kind == "reclaim" and p.preemptor in engine.results:
        engine.results[p.preemptor].needed_reclaim = True
    if p.mode == "SUSPEND":
        cores = Allocation(p.victim, tuple(NodeAlloc(n.node, (), n.cores, 0)
                                           for n in act.alloc.nodes))  # fmt: skip
        engine.usage.release(cores)
        engine.suspended[p.victim] = Suspension(p.preemptor, now, max(0.0, act.end - now), cores)
        act.job.state = JobState.SUSPENDED
        act.end = float("inf")  # its END event is stale now
        res = engine.results[p.victim]
        res.preemptions += 1
        engine._push(now, WAKE, -1)  # a cycle for the preemptor, at once
        return
    kill_at = now + max(0, p.grace)
    cost = act.sim.checkpoint_cost
    if engine.save_on_warning and act.sim.checkpoint_interval and cost <= p.grace:
        kill_at = now + cost  # it saves a checkpoint on the warning, then leaves
        engine.warned[p.victim] = now
    engine.preempting[p.victim] = (p.preemptor, act.token, p.mode, kill_at)
    engine._push(kill_at, PREEMPT, p.victim)


def kill(engine: EngineView, t: float, victim: int) -> bool:
    """The grace of a victim is over: kill it (if it is still the same attempt)."""
    entry = engine.preempting.pop(victim, None)
    act = engine.active.get(victim)
    if entry is None or act is None or act.token != entry[1]:
        return False  # it ended (or was requeued) on its own meanwhile
    mode = entry[2]
    warned = engine.warned.pop(victim, None)
    held = engine.held(act)
    lost = _lose(engine, act, t, requeue=mode == "REQUEUE", final=JobState.PREEMPTED,
                 saved_at=warned)  # fmt: skip
    _completing(engine, t, held)
    res = engine.results[victim]
    res.preemptions += 1
    res.preempt_lost_gpu_seconds += lost
    job = engine.pending.pop(victim, None)
    if job is not None:  # requeued: back in the queue once its preemptor had its turn
        engine.parked[victim] = (entry[0], job)
    else:  # gone for good: its prediction (kept for a requeue) goes too
        engine.predicted.pop(victim, None)
        engine.retire_result(victim)
    return True


def _completing(engine: EngineView, t: float, held: Allocation) -> None:
    """A killed job's nodes stay COMPLETING (busy) until their slurmd reports the
    job gone: the batch host (its first node) waits for the batch step to end,
    the others only for the kill message (SchedulerConfig.kill_completing; on the
    peer 3.3-3.8 s and 0.1-0.7 s with KillWait=2). Slurm's select_nodes never
    places a job on a completing node (cg_node_bitmap), so a preemptor waits."""
    batch, other = engine.config.kill_completing
    if (batch <= 0 and other <= 0) or not held.nodes:
        return
    first = min(na.node for na in held.nodes)
    engine.usage.allocate(held)
    for delay, nodes in ((batch, [na for na in held.nodes if na.node == first]),
                         (other, [na for na in held.nodes if na.node != first])):  # fmt: skip
        if nodes:
            engine.seq += 1
            engine.completing[engine.seq] = Allocation(held.job_id, tuple(nodes))
            engine._push(t + max(0.0, delay), COMPLETE, engine.seq)


def unpark(engine: EngineView, now: float) -> None:
    """After a cycle: requeued victims whose preemptor is no longer pending
    (it started, or left the queue) are pending again (and get a cycle of
    their own at once). While the preemptor waits they stay out: were they
    back, a victim of higher priority could take the place it was evicted
    from, and the preemptor would evict again, forever (Volcano's reclaim on
    the demo scenario did). `release_all` ends the wait when nothing else can
    happen."""
    back = [v for v, (p, _) in engine.parked.items() if p not in engine.pending]
    _back(engine, now, back)


def release_all(engine: EngineView, now: float) -> None:
    """No event is left: every parked victim is pending again (its preemptor
    could not start even with the victims gone)."""
    _back(engine, now, list(engine.parked))


def _back(engine: EngineView, now: float, back: list[int]) -> None:
    for v in back:
        engine.pending[v] = engine.parked.pop(v)[1]
    if back:
        engine._push(now, WAKE, -1)


def preemptor_started(engine: EngineView, job_id: int, alloc: Allocation) -> None:
    """The preemptor of suspended jobs starts: the cores of theirs it did not
    take are held for them again (they stay theirs while it runs)."""
    taken = {(na.node, c) for na in alloc.nodes for c in na.cores}
    for victim, sus in engine.suspended.items():
        if sus.preemptor != job_id or sus.started:
            continue
        sus.started = True
        back = []
        for na in sus.cores.nodes:
            mask = engine.usage.core_mask[na.node]
            cores = tuple(c for c in na.cores if (na.node, c) not in taken and mask >> c & 1)
            if cores:
                back.append(NodeAlloc(na.node, (), cores, 0))
        if back:
            engine.usage.allocate(Allocation(victim, tuple(back)))
            kept = {(na.node, c) for na in back for c in na.cores}
            lent = [
                NodeAlloc(na.node, (), tuple(c for c in na.cores if (na.node, c) not in kept), 0)
                for na in sus.cores.nodes
            ]
            sus.cores = Allocation(victim, tuple(na for na in lent if na.cores))


def resume_ready(engine: EngineView, now: float) -> None:
    """Resume every suspended job whose preemptor is done and whose cores are free."""
    for victim in sorted(engine.suspended, key=lambda v: (engine.suspended[v].since, v)):
        sus = engine.suspended[victim]
        act = engine.active.get(victim)
        if act is None:  # it failed while suspended
            del engine.suspended[victim]
            continue
        running = sus.preemptor in engine.active
        waiting = sus.preemptor in engine.pending and not sus.started
        if running or waiting:
            continue
        if not all(engine.usage.core_mask[na.node] >> c & 1
                   for na in sus.cores.nodes for c in na.cores):  # fmt: skip
            continue
        engine.usage.allocate(sus.cores)
        del engine.suspended[victim]
        paused = now - sus.since
        act.paused += paused
        act.limit_end += paused
        act.end = now + sus.left
        act.job.state = JobState.RUNNING
        engine.results[victim].suspended_seconds += paused
        engine.token += 1
        act.token = engine.token
        engine._push(act.end, END, victim)
