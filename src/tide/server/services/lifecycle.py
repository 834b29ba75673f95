"""Job ends and restarts: exit reports -> final states, accounting, usage.

Every attempt's end goes through `requeue_or_end`: tide.server.services.recovery
classifies it (COMPLETED, FAILED, NODE_FAIL, TIMEOUT, CANCELLED, PREEMPTED,
OUT_OF_MEMORY, or a requeue a person asked for), and a retryable failure of a
requeueable job sends it back to the queue (PENDING, history shows REQUEUED)
with restarts + 1. Each attempt keeps its cause and lost GPU-seconds.
ExitCode is kept as (code, signal), printed "code:signal" like sacct.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from typing import Any

from tide.exec.base import ExitReport, PartlyUnknown
from tide.sched import requeue
from tide.sched.usage import bills_memory, job_charge
from tide.server.ports import Ctl
from tide.server.services import grace, recovery
from tide.store import accounting, codec
from tide.store import jobs as jobrepo
from tide.store.models import JobRow

log = logging.getLogger("tide.server")

LIVE = ("RUNNING", "SUSPENDED", "COMPLETING")
REQUEUE = recovery.REQUEUE  # cancel_requested prefixes: why tide stops a job
NODE_FAIL = recovery.NODE_FAIL
PREEMPT = recovery.PREEMPT


def final_state(report: ExitReport, cancel_requested: str) -> str:
    """The state an attempt ends in, before any requeue (tide.server.services.recovery)."""
    return recovery.classify(report, cancel_requested, "", recovery.Policy()).state


def collect_exits(ctl: Ctl) -> int:
    """Poll the executor and end what ended. Returns how many jobs ended."""
    if ctl.executor is None:
        return 0
    ex = ctl.executor
    reports = ex.poll()
    for r in reports:
        record = ex.exit_record(r.job_id) if hasattr(ex, "exit_record") else None
        try:
            finish(ctl, r, record=record)
        except Exception:
            # not stored (a busy or lost database): the executor reports it again at
            # the next poll, else the job would stay live until a restart
            log.exception("cannot record the end of job %s; trying again", r.job_id)
            again = getattr(ex, "report_again", None)
            if again is not None:
                again(r.job_id)
            continue
        if hasattr(ex, "forget"):
            try:
                ex.forget(r.job_id)  # the store has it now
            except Exception:
                log.warning("executor could not forget job %s", r.job_id, exc_info=True)
    return len(reports)


def probe_phases(ctl: Ctl) -> None:
    """'All tasks running' for live jobs, from the executor's step records
    (LocalExecutor writes one per srun step with the time all its tasks ran;
    the Ray executor reads them from the job's batch node: its steps())."""
    ex_steps = getattr(ctl.executor, "steps", None)
    job_dir = getattr(ctl.executor, "job_dir", None)
    if ex_steps is None and job_dir is None:
        return
    from tide.exec.jobdir import read_steps

    def steps(job_id: int) -> list[dict[str, Any]]:
        if ex_steps is not None:
            return ex_steps(job_id)
        assert job_dir is not None  # one of the two is there (above)
        return read_steps(job_dir(job_id))

    with ctl.sessions() as s:
        ids = [jid for jid, t in jobrepo.live_columns(s, ["RUNNING"], "tasks_running_time")
               if t is None]  # fmt: skip
    found = {}
    for job_id in ids:
        times = [st["running"] for st in steps(job_id) if st.get("running")]
        if times:
            found[job_id] = min(times)
    if found:
        with ctl.sessions.begin() as s:
            for job_id, t in found.items():
                jobrepo.transition(s, job_id, ["RUNNING"], None, t, {"tasks_running_time": t})


def finish(
    ctl: Ctl, report: ExitReport, now: float | None = None, record: Any = None
) -> str | None:
    """Record one job's end; returns the new state (None if the job was not live).
    `record` (the LocalExecutor's ExitRecord) gives the real end time, when all
    tasks ran, and why the run ended (the first failure's cause)."""
    now = time.time() if now is None else now
    if record is not None and record.ended:
        now = min(now, float(record.ended))
    message = record.message if record is not None else ""
    pol = recovery.policy(ctl.config)
    for _ in range(10):
        try:
            with ctl.sessions.begin() as s:
                row = jobrepo.get(s, report.job_id)
                if row is None or row.state not in LIVE:
                    return None
                end = max(now, row.start_time or now)  # never before the start
                if grace.over_by(row, end):
                    # a preemption victim that outlived its grace (no controller ran at
                    # its kill time, or the tick has not come to it yet): ended as that
                    # kill, recorded as such whoever saw the end first
                    if not grace.record_kill(s, row, end):
                        raise _Changed
                    s.refresh(row)
                ending = recovery.classify(report, row.cancel_requested, message, pol)
                running = _tasks_running(row, record)
                state = requeue_or_end(ctl, s, row, ending, end, tasks_running=running)
                if not state:
                    raise _Changed  # and the attempt's record rolls back with it
            break
        except _Changed:
            # the row changed between reading and writing it (a cancel made RUNNING
            # COMPLETING): read it again, else the end is lost and the job stays
            # COMPLETING for good
            continue
    else:
        raise RuntimeError(f"job {report.job_id} kept changing while its end was stored")
    if ctl.loop is not None:
        log_ = getattr(ctl.loop, "pass_log", None)
        if log_ is not None:  # when the controller took the end in (tide sim export)
            log_.released(time.time(), report.job_id)
        ctl.loop.wake()
    return state


class _Changed(Exception):
    """A guarded update found the job's row changed since it was read."""


def requeue_or_end(
    ctl: Ctl,
    session: Any,
    row: JobRow,
    ending: recovery.Ending,
    now: float,
    lost_gpu_seconds: float | None = None,
    tasks_running: float | None = None,
) -> str:
    """Close the attempt of the live job `row` and either put the job back in the
    queue (same id, restarts + 1, priority age and checkpoint kept, after the
    backoff) or end it in `ending.state`. Returns the job's new state.

    It goes back when a person asked (`ending.forced`), or when the failure is
    retryable, the job requeueable and under MaxBatchRequeue. The attempt's lost
    GPU-seconds follow recovery.lost_gpu_seconds unless given (pass 0.0 when
    the caller already counted them). Preemption (issue 7) calls this with
    Ending("PREEMPTED", cause, retryable=True, actor=...)."""
    pol = recovery.policy(ctl.config)
    if lost_gpu_seconds is None:
        lost_gpu_seconds = recovery.lost_gpu_seconds(row, now, ending)
    can = ending.retryable and recovery.requeueable(row, ctl.cluster, pol)
    verdict = requeue.decide(pol, ending.retryable, ending.forced, can, row.restarts)
    gpu_seconds = accounting.close_attempt(
        session,
        row.id,
        row.restarts,
        now,
        ending.state,
        ending.exit_code,
        ending.signal,
        lost_gpu_seconds=lost_gpu_seconds,
        cause=ending.cause[:1000],
        last_checkpoint_step=row.last_checkpoint_step,
        last_checkpoint_time=row.last_checkpoint,
    )
    totals = {
        "gpu_seconds": row.gpu_seconds + gpu_seconds,
        "lost_gpu_seconds": (row.lost_gpu_seconds or 0.0)
        + (0.0 if ending.counted else lost_gpu_seconds),
        "fail_cause": ending.cause[:1000] if ending.state != "COMPLETED" else row.fail_cause,
    }
    if verdict.again:
        if not _back_to_queue(session, row, ending, now, verdict.delay, totals):
            return ""  # the row changed since it was read: nothing applies
        _charge_tail(ctl, row, now)
        return "PENDING"
    why = ending.cause or f"exit {ending.exit_code}:{ending.signal}"
    if verdict.capped:
        why += f" (not requeued: {row.restarts} restarts reached MaxBatchRequeue)"
    values = {
        **totals,
        "end_time": now,
        "exit_code": ending.exit_code,
        "exit_signal": ending.signal,
        "reason": _reason(ending),
        "tasks_running_time": tasks_running if tasks_running else row.tasks_running_time,
    }
    if not jobrepo.transition(
        session, row.id, [row.state], ending.state, now, values, reason=why, actor=ending.actor
    ):
        return ""  # the row changed since it was read: nothing applies
    _charge_tail(ctl, row, now)
    _ran(ctl, row, ending, now)
    return ending.state


def _back_to_queue(
    session: Any,
    row: JobRow,
    ending: recovery.Ending,
    now: float,
    delay: float,
    totals: dict[str, Any],
) -> bool:
    values = {**_requeue_values(row, 0.0), **totals}
    values["eligible_time"] = row.eligible_time  # the priority age is kept
    if delay > 0:
        req = codec.request_from_json(row.request)
        begin = max(req.begin or 0.0, now + delay)
        values["request"] = codec.request_json(replace(req, begin=begin))
    if not jobrepo.transition(
        session,
        row.id,
        [row.state],
        "PENDING",
        now,
        values,
        reason=f"{recovery.describe(row, values)} after {delay:g} s: {ending.cause}",
        actor=ending.actor,
    ):
        return False
    jobrepo.add_event(session, row.id, now, row.state, "REQUEUED", ending.cause, "controller")
    return True


def _tasks_running(row: JobRow, record: Any) -> float | None:
    """Keep a reported time; else srun's (all tasks of a step started); else, for a
    one-task job that never ran srun, the batch shell itself was the task."""
    if row.tasks_running_time is not None:
        return row.tasks_running_time
    if record is None:
        return None
    if record.tasks_running:
        return float(record.tasks_running)
    req = json.loads(row.request)
    one_task = (req.get("ntasks") or 1) == 1 and (req.get("ntasks_per_node") or 1) == 1
    return float(record.started) if one_task and record.started else None


def _reason(ending: recovery.Ending) -> str:
    """The Reason column of an ended job (sacct's)."""
    return {
        "COMPLETED": "None",
        "TIMEOUT": "TimeLimit",
        "CANCELLED": "None",
        "NODE_FAIL": "NodeDown",
        "PREEMPTED": "Preempted",
        "OUT_OF_MEMORY": "OutOfMemory",
    }.get(ending.state, "RaisedSignal" if ending.signal else "NonZeroExitCode")


def _requeue_values(row: JobRow, gpu_seconds: float) -> dict[str, Any]:
    return {
        "restarts": row.restarts + 1,
        "start_time": None,
        "end_time": None,
        "tasks_running_time": None,
        "first_step_time": None,
        "last_step": None,
        "eligible_time": None,
        "allocation": "",
        "nodelist": "",
        "gpus_alloc": 0,
        "cpus_alloc": 0,
        "cancel_requested": "",
        "reason": "None",
        "gpu_seconds": row.gpu_seconds + gpu_seconds,
        "rev": row.rev + 1,
    }


def requeue_values(row: JobRow) -> dict[str, Any]:
    """For a finished job put back in the queue."""
    v = _requeue_values(row, 0.0)
    v.update({"exit_code": None, "exit_signal": None})
    return v


def _charge_tail(ctl: Ctl, row: JobRow, end: float) -> None:
    """Usage between the last periodic charge and the job's end."""
    if row.start_time is None:
        return
    with ctl.lock:
        since = max(row.start_time, ctl.usage_time)
        mem = _mem(row.allocation) if bills_memory(ctl.config) else 0
        amount = job_charge(row.cpus_alloc or 0, row.gpus_alloc or 0, mem, end - since,
                            row.qos, ctl.config, ctl.tree)  # fmt: skip
        if amount > 0:
            key = f"{row.account}/{row.user}"
            ctl.usage[key] = ctl.usage.get(key, 0.0) + amount


def _ran(ctl: Ctl, row: JobRow, ending: recovery.Ending, now: float) -> None:
    """A job ran to its end (its work done, failed or out of time): its run time
    feeds the run-time predictions of policies that plan with them, as the
    twin's engine records a job's end (tide.server.schedule.PolicyDriver)."""
    driver = getattr(ctl.loop, "driver", None)
    if driver is not None and row.start_time is not None and ending.state in (
        "COMPLETED", "FAILED", "TIMEOUT"
    ):
        driver.job_ended(row.id, row.user, now - row.start_time, now)


def running_charges(ctl: Ctl, since: float, now: float) -> list[tuple[str, float]]:
    """(assoc key, usage) of live jobs in [since, now): the core's charge rule
    (tide.sched.usage.job_charge) on what each job holds."""
    mem_too = bills_memory(ctl.config)
    with ctl.sessions() as s:
        rows = jobrepo.live_columns(s, LIVE, "user", "account", "qos", "gpus_alloc", "cpus_alloc",
                                    "start_time", "allocation")  # fmt: skip
    out = []
    for _, user, account, qos, gpus, cpus, start, alloc in rows:
        seconds = now - max(start or now, since)
        mem = _mem(alloc) if mem_too else 0
        amount = job_charge(cpus or 0, gpus or 0, mem, seconds, qos, ctl.config, ctl.tree)
        if amount > 0:
            out.append((f"{account}/{user}", amount))
    return out


def _mem(allocation: str | None) -> int:
    """MB a stored allocation holds (codec.alloc_json), 0 when unreadable."""
    try:
        return sum(int(n.get("mem", 0)) for n in json.loads(allocation or "{}").get("nodes", []))
    except (ValueError, TypeError, AttributeError):
        return 0


def fail_launch(ctl: Ctl, job_id: int, why: str) -> None:
    now = time.time()
    with ctl.sessions.begin() as s:
        row = jobrepo.get(s, job_id)
        if row is None:
            return
        accounting.close_attempt(s, job_id, row.restarts, now, "FAILED", 1, 0)
        jobrepo.transition(
            s,
            job_id,
            LIVE,
            "FAILED",
            now,
            {"end_time": now, "exit_code": 1, "exit_signal": 0, "reason": "LaunchFailed"},
            reason=why[:500],
            actor="controller",
        )


def reconcile(ctl: Ctl) -> None:
    """At startup: collect ends the executor saw while we were down, then fail
    live jobs that no supervisor runs any more (their processes are gone). A
    job the controller committed but never launched (it died in between)
    simply waits again: it never ran, so it cannot run twice."""
    if ctl.executor is None:
        return
    # who runs, before collecting: a job that ends in between is then collected with
    # its true end; asked the other way round it looked lost (NODE_FAIL) and ran again
    try:
        alive, unknown = ctl.executor.running(), set()
    except PartlyUnknown as e:
        alive, unknown = e.running, set(e.nodes)
        log.warning("reconcile: %s; their jobs stay as stored until they answer", e)
    collect_exits(ctl)
    now = time.time()
    with ctl.sessions() as s:
        live = jobrepo.live_columns(s, LIVE, "state", "start_time", "time_limit",
                                    "suspended_seconds", "allocation")  # fmt: skip
    watch = getattr(ctl.executor, "watch_limit", None)
    names = [n.name for n in ctl.cluster.nodes]
    for job_id, state, start, limit, suspended, allocation in live:
        if job_id in alive or _on_nodes(allocation, names) & unknown:
            if watch is not None and state == "RUNNING" and start and limit:
                watch(job_id, start, int(limit + (suspended or 0)))  # the executor's backstop
            continue
        if _never_launched(ctl.executor, job_id):
            _requeue_unlaunched(ctl, job_id, now)
        else:
            finish(ctl, ExitReport(job_id, exit_code=0, signal=9, reason="node_fail"), now)


def _on_nodes(allocation: str | None, names: list[str]) -> set[str]:
    """The names of the nodes an allocation (stored JSON) holds."""
    alloc = codec.alloc_from_json(allocation) if allocation else None
    if alloc is None:
        return set()
    return {names[i] for i in alloc.node_indices if 0 <= i < len(names)}


def _never_launched(ex: Any, job_id: int) -> bool:
    job_dir = getattr(ex, "job_dir", None)
    return job_dir is not None and not job_dir(job_id).exists()


def _requeue_unlaunched(ctl: Ctl, job_id: int, now: float) -> None:
    why = "not launched: the controller stopped between the start and the launch"
    ending = recovery.Ending("NODE_FAIL", why, True, True, True, actor="controller")
    with ctl.sessions.begin() as s:
        row = jobrepo.get(s, job_id)
        if row is not None and row.state in LIVE:
            requeue_or_end(ctl, s, row, ending, now)
