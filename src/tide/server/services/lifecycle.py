"""Job ends and restarts: exit reports -> final states, accounting, usage.

Final state from an ExitReport, as Slurm names them:
  requeue was asked        -> PENDING again (history shows REQUEUED)
  cancel was asked         -> CANCELLED
  reason "timeout"         -> TIMEOUT
  reason "cancelled"       -> CANCELLED
  reason "node_fail"       -> NODE_FAIL
  reason "oom"             -> OUT_OF_MEMORY
  exit 0 and no signal     -> COMPLETED
  otherwise                -> FAILED
ExitCode is kept as (code, signal), printed "code:signal" like sacct.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from sqlalchemy import select

from tide.exec.base import ExitReport
from tide.store import accounting
from tide.store import jobs as jobrepo
from tide.store.models import JobRow

log = logging.getLogger("tide.server")

LIVE = ("RUNNING", "SUSPENDED", "COMPLETING")
REQUEUE = "requeue:"  # cancel_requested prefix: the kill is a requeue, not a cancel
NODE_FAIL = "node_fail:"  # ...: a node of the job went DOWN (requeued if --requeue)


def final_state(report: ExitReport, cancel_requested: str) -> str:
    if cancel_requested.startswith(NODE_FAIL):
        return "NODE_FAIL"
    if cancel_requested and not cancel_requested.startswith(REQUEUE):
        return "CANCELLED"
    reason = report.reason.lower()
    if reason == "timeout":
        return "TIMEOUT"
    if reason in ("cancelled", "canceled"):
        return "CANCELLED"
    if reason == "node_fail":
        return "NODE_FAIL"
    if reason in ("oom", "out_of_memory"):
        return "OUT_OF_MEMORY"
    if report.exit_code == 0 and report.signal == 0:
        return "COMPLETED"
    return "FAILED"


def collect_exits(ctl: Any) -> int:
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
            log.exception("cannot record the end of job %s", r.job_id)
            continue
        if hasattr(ex, "forget"):
            try:
                ex.forget(r.job_id)  # the store has it now
            except Exception:
                log.warning("executor could not forget job %s", r.job_id, exc_info=True)
    return len(reports)


def probe_phases(ctl: Any) -> None:
    """'All tasks running' for live jobs, from the executor's step records
    (LocalExecutor writes one per srun step with the time all its tasks ran)."""
    ex = ctl.executor
    if ex is None or not hasattr(ex, "job_dir"):
        return
    from tide.exec.jobdir import read_steps

    stmt = select(JobRow.id).where(JobRow.state == "RUNNING", JobRow.tasks_running_time.is_(None))
    with ctl.sessions() as s:
        ids = [r[0] for r in s.execute(stmt)]
    found = {}
    for job_id in ids:
        times = [st["running"] for st in read_steps(ex.job_dir(job_id)) if st.get("running")]
        if times:
            found[job_id] = min(times)
    if found:
        with ctl.sessions.begin() as s:
            for job_id, t in found.items():
                jobrepo.transition(s, job_id, ["RUNNING"], None, t, {"tasks_running_time": t})


def finish(
    ctl: Any, report: ExitReport, now: float | None = None, record: Any = None
) -> str | None:
    """Record one job's end; returns the new state (None if the job was not live).
    `record` (the LocalExecutor's ExitRecord) gives the real end time, when all
    tasks ran, and why tide ended the run."""
    now = time.time() if now is None else now
    if record is not None and record.ended:
        now = min(now, float(record.ended))
    with ctl.sessions.begin() as s:
        row = jobrepo.get(s, report.job_id)
        if row is None or row.state not in LIVE:
            return None
        state = final_state(report, row.cancel_requested)
        gpu_seconds = accounting.close_attempt(
            s,
            row.id,
            row.restarts,
            now,
            state if not _requeue(row) else "REQUEUED",
            report.exit_code,
            report.signal,
        )
        _charge_tail(ctl, row, now)
        why = report.reason or ("requeue" if _requeue(row) else "")
        if record is not None and record.message:
            why = f"{why}: {record.message}" if why else record.message
        if report.node:
            why = f"{why} on {report.node}".strip()
        if _requeue(row):
            jobrepo.transition(
                s,
                row.id,
                [row.state],
                "PENDING",
                now,
                _requeue_values(row, gpu_seconds),
                reason=f"requeued ({row.cancel_requested.rstrip(':')})",
                actor=row.cancel_requested.split(":", 1)[1],
            )
            jobrepo.add_event(s, row.id, now, row.state, "REQUEUED", why, "controller")
            state = "PENDING"
        else:
            jobrepo.transition(
                s,
                row.id,
                [row.state],
                state,
                now,
                {
                    "end_time": now,
                    "exit_code": report.exit_code,
                    "exit_signal": report.signal,
                    "gpu_seconds": row.gpu_seconds + gpu_seconds,
                    "reason": "None" if state == "COMPLETED" else _reason(state, report),
                    "tasks_running_time": _tasks_running(row, record),
                },
                reason=why or ("exit " + f"{report.exit_code}:{report.signal}"),
                actor="executor",
            )
    if ctl.loop is not None:
        ctl.loop.wake()
    return state


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


def _requeue(row: JobRow) -> bool:
    if row.cancel_requested.startswith(NODE_FAIL):
        return bool(json.loads(row.request).get("requeue"))  # sbatch --requeue
    return row.cancel_requested.startswith(REQUEUE)


def _reason(state: str, report: ExitReport) -> str:
    return {
        "TIMEOUT": "TimeLimit",
        "CANCELLED": "None",
        "NODE_FAIL": "NodeDown",
        "OUT_OF_MEMORY": "OutOfMemory",
    }.get(state, "NonZeroExitCode" if report.exit_code else "RaisedSignal")


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


def _charge_tail(ctl: Any, row: JobRow, end: float) -> None:
    """Usage between the last periodic charge and the job's end."""
    if not row.gpus_alloc or row.start_time is None:
        return
    with ctl.lock:
        since = max(row.start_time, ctl.usage_time)
        amount = max(0.0, end - since) * row.gpus_alloc * _usage_factor(ctl, row.qos)
        key = f"{row.account}/{row.user}"
        ctl.usage[key] = ctl.usage.get(key, 0.0) + amount


def _usage_factor(ctl: Any, qos: str) -> float:
    q = ctl.tree.qos.get(qos)
    return q.usage_factor if q is not None else 1.0


def running_charges(ctl: Any, since: float, now: float) -> list[tuple[str, float]]:
    """(assoc key, GPU-seconds) used by live jobs in [since, now)."""
    stmt = select(JobRow.user, JobRow.account, JobRow.qos, JobRow.gpus_alloc, JobRow.start_time)
    stmt = stmt.where(JobRow.state.in_(LIVE), JobRow.gpus_alloc > 0)
    with ctl.sessions() as s:
        rows = list(s.execute(stmt))
    out = []
    for user, account, qos, gpus, start in rows:
        seconds = max(0.0, now - max(start or now, since))
        out.append((f"{account}/{user}", seconds * gpus * _usage_factor(ctl, qos)))
    return out


def fail_launch(ctl: Any, job_id: int, why: str) -> None:
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


def reconcile(ctl: Any) -> None:
    """At startup: collect ends the executor saw while we were down, then fail
    live jobs that no supervisor runs any more (their processes are gone)."""
    if ctl.executor is None:
        return
    collect_exits(ctl)
    alive = ctl.executor.running()
    now = time.time()
    with ctl.sessions() as s:
        live = [r[0] for r in s.execute(select(JobRow.id).where(JobRow.state.in_(LIVE)))]
    for job_id in live:
        if job_id not in alive:
            finish(
                ctl,
                ExitReport(job_id, exit_code=0, signal=9, reason="node_fail"),
                now,
            )
