"""Preemption in the live server: Decisions.preemptions applied to real jobs.

The contract is docs/preemption.md ("What the driver applies"); the twin's
side is tide.sim.preemption. Here, on the store and the executor:

- REQUEUE / CANCEL: at the decision the victim gets SIGCONT and its --signal
  (else SIGTERM), and its row is marked `grace` with its kill time. The
  loop's `tick` kills it at that time (SIGCONT, SIGTERM, then SIGKILL at
  once: the grace was its time to checkpoint) through the kill path the
  recovery rules own (tide.server.services.lifecycle): "requeue:preempt" ->
  PENDING with restarts + 1; "preempt:" -> PREEMPTED (phase `killed` while
  its processes go: still its preemptor's victim). The work lost is its
  GPUs x seconds since its last checkpoint (`tide notify checkpoint`), else
  since its start.
- A requeued victim is `parked`: kept out of the core's snapshot while its
  preemptor is still pending, so it cannot take back the place it was
  evicted from (the twin does the same). When the preemptor starts or
  leaves, the victim is pending again with the eligible time it had, so it
  keeps its priority age.
- SUSPEND: SIGSTOP to every process, state SUSPENDED. Its GPUs and memory
  stay held in the snapshot; its cores are lent to the preemptor. When the
  preemptor has ended (or left) and its cores are free, SIGCONT: RUNNING
  again, its planned end pushed back by the time it was stopped.

Every phase lives in the job row (`preempt_phase`), so a restarted
controller picks grace timers and suspended victims up where they were. An
end it collects after a victim's kill time (at its start, before the tick)
is recorded as that kill (tide.server.services.grace).
"""

from __future__ import annotations

import json
import logging
import signal
from dataclasses import dataclass, field
from typing import Any

from tide.model import JobState
from tide.sched.types import Allocation, Decisions, NodeAlloc, Preemption, Running
from tide.server.ports import Ctl
from tide.server.services import lifecycle
from tide.server.services.grace import GRACE, KILLED, PARKED, record_kill
from tide.server.services.lifecycle import PREEMPT, REQUEUE
from tide.server.services.recovery import PREEMPT_ACTOR as ACTOR
from tide.store import accounting
from tide.store import jobs as jobrepo
from tide.store.models import JobRow

log = logging.getLogger("tide.server")

SUSPENDED = "suspended"
# KILLED (services.grace): a CANCEL victim killed, its processes not yet gone: still
# committed to its preemptor (in `preempting`, as a parked REQUEUE victim) so no pass
# chooses it again or another victim in its place; cleared once it has ended
ADMIN = "admin"  # stopped by `scontrol suspend` (services.suspend): only `scontrol resume` ends it
PHASES = (GRACE, SUSPENDED, PARKED, KILLED, ADMIN)
# cancel_requested, asked at the decision: REQUEUE + ACTOR ("requeue:preempt") goes
# back to the queue, PREEMPT + preemptor ("preempt:12") ends PREEMPTED (recovery.classify)
PARKED_REASON = "Preempted"  # pending reason of a victim waiting for its preemptor to start
_BUSY = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING")  # a preemptor still in the way


@dataclass(slots=True)
class Mark:
    """One job in a preemption phase, as the snapshot and the tick need it."""

    job_id: int
    state: str
    phase: str
    preemptor: int
    kill_at: float | None
    since: float  # the decision time
    suspended_seconds: float


@dataclass(slots=True)
class Marks:
    jobs: dict[int, Mark] = field(default_factory=dict)
    checkpoints: dict[int, float] = field(default_factory=dict)  # live job -> last checkpoint
    suspended_before: dict[int, float] = field(default_factory=dict)  # live job -> seconds


def read_phases(s: Any) -> dict[int, Mark]:
    """Jobs in a preemption phase (an indexed read; usually none)."""
    rows = jobrepo.in_phases(s, PHASES)
    return {jid: Mark(jid, state, phase, by or 0, kill_at, since or 0.0, susp or 0.0)
            for jid, state, phase, by, kill_at, since, susp in rows}  # fmt: skip


def read_marks(s: Any) -> Marks:
    """Jobs in a preemption phase, and live jobs' checkpoints and past suspensions."""
    out = Marks(read_phases(s))
    for jid, ckpt, susp in jobrepo.live_checkpoints(s):
        if ckpt is not None:
            out.checkpoints[jid] = ckpt
        if susp:
            out.suspended_before[jid] = susp
    return out


# --- the snapshot ----------------------------------------------------------------------


@dataclass(slots=True)
class Shaped:
    pending: list[Any]
    running: list[Running]
    preempting: dict[int, int]
    last_checkpoint: dict[int, float]


def shape(marks: Marks, states: dict[int, str], pending: list[Any], running: list[Running],
          now: float) -> Shaped:  # fmt: skip
    """The snapshot's preemption view: parked victims out of the queue, victims
    in their grace (or killed, not yet gone) in `preempting` with their kill
    time as end, suspended jobs holding their GPUs and memory but not the
    cores lent to their preemptor."""
    m = marks.jobs
    parked = {j for j, k in m.items() if k.phase == PARKED and states.get(k.preemptor) == "PENDING"}
    if parked:
        pending = [j for j in pending if j.id not in parked]
    preempting: dict[int, int] = {}
    others = _cores_in_use(running)
    out = []
    for r in running:
        k = m.get(r.job.id)
        extra = marks.suspended_before.get(r.job.id, 0.0)
        if k is not None and k.phase == GRACE:
            preempting[r.job.id] = k.preemptor
            r = Running(r.job, r.alloc, r.start, min(r.end + extra, k.kill_at or now))
        elif k is not None and k.phase in (PARKED, KILLED) and r.job.state is JobState.COMPLETING:
            preempting[r.job.id] = k.preemptor  # killed; its processes are going
            r = Running(r.job, r.alloc, r.start, now)
        elif k is not None and k.phase == SUSPENDED:
            lend = states.get(k.preemptor) == "PENDING"
            alloc = _held(r.alloc, others, lend)
            r = Running(r.job, alloc, r.start, r.end + extra + max(0.0, now - k.since))
        elif k is not None and k.phase == ADMIN:  # holds all it has; its end moves on
            r = Running(r.job, r.alloc, r.start, r.end + extra + max(0.0, now - k.since))
        elif extra:
            r = Running(r.job, r.alloc, r.start, r.end + extra)
        out.append(r)
    return Shaped(pending, out, preempting, dict(marks.checkpoints))


def _cores_in_use(running: list[Running]) -> dict[tuple[int, int], int]:
    """(node, core) -> the live job using it (suspended jobs' cores excluded)."""
    out: dict[tuple[int, int], int] = {}
    for r in running:
        if r.job.state is JobState.SUSPENDED:
            continue
        for na in r.alloc.nodes:
            for c in na.cores:
                out[(na.node, c)] = r.job.id
    return out


def _held(alloc: Allocation, others: dict[tuple[int, int], int], lend_all: bool) -> Allocation:
    """What a suspended job holds: its GPUs and memory; its cores unless lent
    (all of them while its preemptor waits, else those another job took)."""
    nodes = []
    for na in alloc.nodes:
        cores = () if lend_all else tuple(c for c in na.cores if (na.node, c) not in others)
        nodes.append(NodeAlloc(na.node, na.gpus, cores, na.mem))
    return Allocation(alloc.job_id, tuple(nodes))


# --- applying decisions ----------------------------------------------------------------


def apply(ctl: Ctl, d: Decisions, now: float) -> int:
    """Mark and signal the victims the core chose; returns how many."""
    if not d.preemptions:
        return 0
    sent: list[tuple[int, list[int]]] = []
    with ctl.sessions.begin() as s:
        for p in d.preemptions:
            sigs = _start(s, p, now)
            if sigs:
                sent.append((p.victim, sigs))
    for job_id, sigs in sent:
        for sig in sigs:
            signal_job(ctl, job_id, sig)
    return len(sent)


def _start(s: Any, p: Preemption, now: float) -> list[int]:
    row = jobrepo.get(s, p.victim)
    if row is None or row.state != "RUNNING" or row.preempt_phase:
        return []  # it ended, or was told to go already
    values: dict[str, Any] = {
        "preempted_by": p.preemptor,
        "preempt_reason": p.reason,
        "preempt_time": now,
        "preempt_mode": p.mode,
        "preempt_lost": p.lost_gpu_seconds,
        "preemptions": row.preemptions + 1,
    }
    if p.mode == "SUSPEND":
        values["preempt_phase"] = SUSPENDED
        ok = jobrepo.transition(s, row.id, ["RUNNING"], "SUSPENDED", now, values,
                                reason=p.reason, actor=ACTOR)  # fmt: skip
        return [signal.SIGSTOP] if ok else []
    # asked now: a victim that exits on its signal during the grace (it saved
    # its work) goes the same way as one killed at the end of it
    ask = (REQUEUE + ACTOR) if p.mode == "REQUEUE" else f"{PREEMPT}{p.preemptor}"
    values.update(preempt_phase=GRACE, preempt_kill_at=now + max(0, p.grace),
                  cancel_requested=ask)  # fmt: skip
    if not jobrepo.transition(s, row.id, ["RUNNING"], None, now, values):
        return []
    why = f"preemption signal, killed in {p.grace} s: {p.reason}"
    jobrepo.add_event(s, row.id, now, "RUNNING", "RUNNING", why, ACTOR)
    return [signal.SIGCONT, _job_signal(row)]


def _job_signal(row: JobRow) -> int:
    """The victim's --signal (Slurm sends it to preempted jobs with a grace), else SIGTERM."""
    spec = (json.loads(row.request or "{}").get("signal") or {}).get("signal")
    if not spec:
        return int(signal.SIGTERM)
    from tide.exec.procs import parse_signal

    try:
        return parse_signal(str(spec))
    except ValueError:
        return int(signal.SIGTERM)


def signal_job(ctl: Ctl, job_id: int, sig: int) -> None:
    if ctl.executor is None:
        return
    try:
        ctl.executor.signal(job_id, sig)
    except Exception:  # a job that just ended has nothing left to signal
        log.warning("signal %s to job %s failed", sig, job_id, exc_info=True)


# --- timers: kills, resumes, unparking -------------------------------------------------


def tick(ctl: Ctl, now: float) -> bool:
    """Kill victims whose grace is over, resume suspended jobs whose preemptor
    is done, return parked victims to the queue. True when something changed."""
    with ctl.sessions() as s:
        marks = read_phases(s)
    if not marks:
        return False
    if any(k.phase == GRACE and (k.kill_at or 0.0) <= now for k in marks.values()):
        # a victim whose grace is over may have left on its signal a moment ago:
        # its end is collected first, so it is not recorded as killed (with its
        # lost work counted up to now) when it left within its grace
        lifecycle.collect_exits(ctl)
        with ctl.sessions() as s:
            marks = read_phases(s)
    with ctl.sessions() as s:
        wanted = {k.preemptor for k in marks.values()}
        states = dict(jobrepo.columns_by_id(s, sorted(wanted), "state"))
    changed = False
    for k in marks.values():
        if k.phase == GRACE and k.state == "RUNNING" and (k.kill_at or 0.0) <= now:
            changed |= _kill(ctl, k.job_id, now)
        elif k.phase == SUSPENDED and k.state == "SUSPENDED":
            if states.get(k.preemptor) not in _BUSY and _cores_free(ctl, k.job_id):
                changed |= resume_stopped(ctl, k.job_id, now)
        elif k.phase == ADMIN:
            if k.state not in ("SUSPENDED", "COMPLETING"):
                changed |= _clear(ctl, k.job_id)  # cancelled or requeued while suspended
        elif k.phase == PARKED and k.state == "PENDING":
            changed |= _unpark(ctl, k, states.get(k.preemptor) == "PENDING")
        elif k.phase == GRACE and k.state != "COMPLETING":
            changed |= _left_in_grace(ctl, k.job_id)
        elif k.phase == KILLED and k.state != "COMPLETING":
            changed |= _clear(ctl, k.job_id)  # gone (PREEMPTED), or requeued by hand
        elif k.state not in ("RUNNING", "SUSPENDED", "COMPLETING", "PENDING") or (
            k.phase == SUSPENDED and k.state == "PENDING"
        ):
            changed |= _clear(ctl, k.job_id)  # it ended (or was requeued) meanwhile
    return changed


def _left_in_grace(ctl: Ctl, job_id: int) -> bool:
    """The victim ended during its grace (on its signal, having saved its
    work, or on its own): a REQUEUE victim back in the queue is parked like
    a killed one, and its lost work counted from the attempt's end."""
    with ctl.sessions.begin() as s:
        row = jobrepo.get(s, job_id)
        if row is None or row.preempt_phase != GRACE or row.state in ("RUNNING", "COMPLETING"):
            return False
        values: dict[str, Any] = {"preempt_phase": "", "preempt_kill_at": None}
        att = accounting.last_attempt(s, job_id)
        if row.state == "PENDING" and row.preempt_mode == "REQUEUE" and att is not None:
            lost = att.gpus * max(0.0, (att.end_time or 0.0) - max(att.start_time,
                                                                   row.last_checkpoint or 0.0))
            values.update(preempt_phase=PARKED, preempt_lost=lost,
                          lost_gpu_seconds=(row.lost_gpu_seconds or 0.0) + lost)  # fmt: skip
        return jobrepo.transition(s, job_id, [row.state], None, 0.0, values)


def _kill(ctl: Ctl, job_id: int, now: float) -> bool:
    with ctl.sessions.begin() as s:
        row = jobrepo.get(s, job_id)
        if row is None or row.state != "RUNNING":
            return False
        ok = record_kill(s, row, now)  # the history's "preempted by job", the lost work
    if ok and ctl.executor is not None:
        ctl.executor.cancel(job_id, grace=0.0)  # SIGCONT, SIGTERM, SIGKILL
    return ok


def _cores_free(ctl: Ctl, job_id: int) -> bool:
    """No other live job holds a core the suspended job needs back."""
    entries = ctl.active.snapshot_entries()
    mine = next((e.running for e in entries if e.job.id == job_id), None)
    if mine is None:
        return False
    want = {(na.node, c) for na in mine.alloc.nodes for c in na.cores}
    for e in entries:
        r = e.running
        if r is None or e.job.id == job_id or e.meta.state == "SUSPENDED":
            continue
        if any((na.node, c) in want for na in r.alloc.nodes for c in na.cores):
            return False
    return True


def resume_stopped(ctl: Ctl, job_id: int, now: float, actor: str = ACTOR) -> bool:
    """SIGCONT: RUNNING again, its time limit pushed back by all its suspensions
    (a preemption victim's, or `scontrol resume`'s: actor is the operator)."""
    with ctl.sessions.begin() as s:
        row = jobrepo.get(s, job_id)
        if row is None or row.state != "SUSPENDED":
            return False
        paused = max(0.0, now - (row.preempt_time or now))
        values = {"preempt_phase": "", "suspended_seconds": row.suspended_seconds + paused}
        why = f"resumed: preemptor {row.preempted_by} is done; suspended {paused:.1f} s"
        if row.preempt_phase == ADMIN:
            why = f"resumed by {actor}; suspended {paused:.1f} s"
        ok = jobrepo.transition(s, job_id, ["SUSPENDED"], "RUNNING", now, values,
                                reason=why, actor=actor)  # fmt: skip
        limit = row.time_limit
        total = row.suspended_seconds + paused
    if ok:
        signal_job(ctl, job_id, signal.SIGCONT)
        extend = getattr(ctl.executor, "set_time_limit", None)
        if extend is not None and limit is not None:  # suspended time does not count
            try:
                extend(job_id, int(limit + total))
            except Exception:
                log.warning("could not extend job %s's limit after suspension", job_id)
    return ok


def _unpark(ctl: Ctl, k: Mark, waiting: bool) -> bool:
    """Back to the queue once the preemptor is no longer pending; until then
    the victim shows the reason Preempted."""
    with ctl.sessions.begin() as s:
        if waiting:
            return jobrepo.set_pending_reason(s, k.job_id, PARKED_REASON)
        row = jobrepo.get(s, k.job_id)
        if row is None or row.state != "PENDING":
            return False
        values = {"preempt_phase": "", "reason": "None",
                  "eligible_time": row.preempt_eligible or row.eligible_time}  # fmt: skip
        return jobrepo.transition(s, k.job_id, ["PENDING"], None, 0.0, values)


def _clear(ctl: Ctl, job_id: int) -> bool:
    with ctl.sessions.begin() as s:
        jobrepo.set_values(s, job_id, {"preempt_phase": "", "preempt_kill_at": None})
    return True
