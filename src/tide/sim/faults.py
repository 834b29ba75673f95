"""Node failures in the twin, and what they cost running jobs.

A failure takes a node DOWN until its repair. Every job with a share on it
loses the work done since its last completed checkpoint (all of it when it
does not checkpoint): lost GPU-seconds = the job's GPUs x (failure time -
last checkpoint). A requeueable job (--requeue, else its partition's
Requeue=, else the cluster's JobRequeue) under MaxBatchRequeue goes back to
the queue after the RequeueBackoff, keeping its submit time (so its
priority age) and the work it had saved; any other job ends NODE_FAIL.
These are the live controller's rules, from the core (tide.sched.requeue).

Checkpoints: every `checkpoint_interval` seconds of work the job spends
`checkpoint_cost` seconds saving; a checkpoint counts once it completes.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tide.model import Job, JobState, NodeState
from tide.sched import requeue as requeue_rules
from tide.sched.requeue import Requeue
from tide.sim.events import REPAIR, Fault

if TYPE_CHECKING:
    from tide.sim.active import Active
    from tide.sim.engine_view import EngineView


def draw_faults(
    nodes: list[str], horizon: float, mtbf: float, mttr: float, seed: int
) -> list[Fault]:
    """Failures per node as a Poisson process (exponential gaps, mean MTBF),
    each repaired after an exponential time of mean MTTR. Seeded."""
    rng = np.random.default_rng(seed)
    out: list[Fault] = []
    for name in nodes:
        t = float(rng.exponential(mtbf))
        while t < horizon:
            repair = float(rng.exponential(mttr))
            out.append(Fault(t, name, repair))
            t += repair + float(rng.exponential(mtbf))
    return sorted(out, key=lambda f: (f.time, f.node))


def read_faults(path: Path, nodes: set[str]) -> list[Fault]:
    """A CSV of failures: `time,node[,repair_seconds]` per line ('#' comments)."""
    out: list[Fault] = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text or text.lower().startswith("time"):
            continue
        parts = [p.strip() for p in text.split(",")]
        try:
            when = float(parts[0])
            repair = float(parts[2]) if len(parts) > 2 else 3600.0
        except (ValueError, IndexError):
            raise ValueError(
                f"{path}:{lineno}: {text!r}: write time,node[,repair_seconds] "
                "with times in seconds, e.g. 3600,gpu001,1800"
            ) from None
        if len(parts) < 2 or parts[1] not in nodes:
            raise ValueError(
                f"{path}:{lineno}: node {parts[1] if len(parts) > 1 else ''!r} "
                "is not in the cluster; use a node name from the cluster file"
            )
        out.append(Fault(when, parts[1], repair))
    return out


def saved_work(act: Active, t: float) -> tuple[float, float]:
    """(work saved by completed checkpoints, time of the last one). Time the
    attempt spent suspended (act.paused, before t) does no work."""
    interval, cost = act.sim.checkpoint_interval, act.sim.checkpoint_cost
    if not interval:
        return 0.0, act.start
    k = math.floor(max(0.0, t - act.start - act.paused) / (interval + cost))
    return k * interval, act.start + act.paused + k * (interval + cost)


def work_done(act: Active, t: float) -> float:
    """Seconds of work the attempt had done by t, at most what it had to do:
    its periodic checkpoints' saves and its suspension are no work (the
    inverse of the engine's wall-time rule). Callers pass a t at which the
    attempt was not suspended."""
    interval, cost = act.sim.checkpoint_interval, act.sim.checkpoint_cost
    busy = max(0.0, t - act.start - act.paused)
    if not interval:
        return min(busy, act.work_left)
    k, rest = divmod(busy, interval + cost)
    return min(k * interval + min(rest, interval), act.work_left)


def fail_node(engine: EngineView, t: float, node: int) -> bool:
    state = engine.cluster.nodes[node]
    if state.state is NodeState.DOWN:
        return False
    engine.set_node_state(node, NodeState.DOWN)
    repair = next(
        (f.repair_after for f in engine.faults if f.time == t and engine.ix.pos[f.node] == node),
        3600.0,
    )
    engine._push(t + repair, REPAIR, node)
    victims = [a for a in engine.active.values() if node in a.alloc.node_indices]
    for act in victims:
        _lose(engine, act, t)
        if act.job.id not in engine.pending:  # ended for good
            engine.retire_result(act.job.id)
    return True


def _lose(
    engine: EngineView,
    act: Active,
    t: float,
    requeue: bool | None = None,
    final: JobState = JobState.NODE_FAIL,
    saved_at: float | None = None,
) -> float:
    """End the attempt at t: its work since the last checkpoint is lost; the
    job requeues or ends in `final`. `requeue`: a preemption's verdict (at
    once, uncounted), None = a failure, decided by the core's rules as the
    live controller decides it (tide.sched.requeue: --requeue, the partition's
    Requeue=, JobRequeue, MaxBatchRequeue; the backoff becomes a begin time).
    `saved_at`: the job saved a checkpoint of everything it had done by then,
    finished at t (a save on the preemption warning). Returns the lost
    GPU-seconds (preemption reuses this)."""
    job = act.job
    del engine.active[job.id]
    engine.usage.release(engine.held(act))
    worked = min(t, engine.paused_at(act))  # a suspended job did no work since
    engine.suspended.pop(job.id, None)
    saved, last = saved_work(act, worked)
    if saved_at is not None:
        saved, last = work_done(act, min(saved_at, worked)), worked
    res = engine.results[job.id]
    lost = requeue_rules.lost_gpu_seconds(act.alloc.gpu_count, act.start, last, worked)
    res.lost_gpu_seconds += lost
    engine.close_training(act, t, saved, lost)  # paid until t, suspended or not
    verdict = _verdict(engine, job, res.partition, requeue)
    if verdict.again:
        job.meta["work_done"] = float(job.meta.get("work_done", 0.0)) + saved  # type: ignore[arg-type]
        job.restarts += 1
        job.state = JobState.PENDING
        if verdict.delay > 0:  # the core wakes for it (Decisions.wake)
            begin = max(job.request.begin or 0.0, t + verdict.delay)
            job.request = replace(job.request, begin=begin)
        res.restarts = job.restarts
        res.state = JobState.PENDING.value
        engine.pending[job.id] = job
        return lost
    res.end = t
    res.state = final.value
    engine.finished[job.display_id] = res.state
    return lost


def _verdict(engine: EngineView, job: Job, partition: str, requeue: bool | None) -> Requeue:
    if requeue is not None:  # preemption: requeued at once, or ended
        return Requeue(requeue)
    pol = engine.requeue_rules
    part = engine.cluster.partition(partition)
    can = requeue_rules.requeueable(job.request.requeue, part, pol.job_requeue)
    return requeue_rules.decide(pol, True, False, can, job.restarts)
