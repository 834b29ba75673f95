"""JSON views of stored rows: what the API returns and the CLI prints.

Field names follow scontrol/sacct where one exists (JobId, ArrayJobId...
are spelled in snake_case). Times are epoch seconds; the CLI formats them.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from tide.defaults import TIME_INFINITE
from tide.store.models import AttemptRow, JobEventRow, JobRow

# Columns of a queue listing, in order (the columnar format sends these once).
QUEUE_COLUMNS = (
    "id",
    "array_job_id",
    "array_task_id",
    "name",
    "user",
    "account",
    "partition",
    "run_partition",
    "qos",
    "state",
    "reason",
    "held",
    "priority",
    "nodes_req",
    "gpus_req",
    "nodelist",
    "gpus_alloc",
    "cpus_alloc",
    "time_limit",
    "submit_time",
    "start_time",
    "end_time",
    "planned_start",
    "planned_nodes",
    "exit_code",
    "exit_signal",
    "restarts",
    "gpu_seconds",
    "preemptions",
    "preempted_by",
    "lost_gpu_seconds",
    "cancel_requested",  # who cancelled it (sacct's "CANCELLED by UID"), or requeue:/preempt:
)


def display_id(job_id: int, array_job_id: int | None, array_task_id: int | None) -> str:
    if array_job_id is not None and array_task_id is not None:
        return f"{array_job_id}_{array_task_id}"
    return str(job_id)


def exit_text(code: int | None, sig: int | None) -> str:
    """Slurm's ExitCode: 'code:signal'."""
    if code is None and sig is None:
        return ""
    return f"{code or 0}:{sig or 0}"


def queue_item(values: tuple[Any, ...]) -> dict[str, Any]:
    d = dict(zip(QUEUE_COLUMNS, values, strict=True))
    d["job_id"] = display_id(d["id"], d["array_job_id"], d["array_task_id"])
    d["exit"] = exit_text(d["exit_code"], d["exit_signal"])
    if d["time_limit"] is not None and d["time_limit"] >= TIME_INFINITE:
        d["time_limit"] = None  # no limit (--time=0/UNLIMITED): null, as a partition's
    return d


def _request(text: str) -> Any:
    """The stored request; a damaged one is shown as the text it is."""
    try:
        return json.loads(text)
    except ValueError:
        return {"unreadable": text[:500]}


def _std_paths(row: JobRow) -> tuple[str, str]:
    """Where the batch script's output and errors go (scontrol's StdOut, StdErr): its
    --output/--error patterns expanded as the executor expands them."""
    if row.stdout_path:
        return row.stdout_path, row.stderr_path or row.stdout_path
    from tide.exec.outputs import PatternFields, batch_paths

    req = _request(row.request)
    out, err = (req.get(k) for k in ("output", "error"))
    # %N stays as written, as scontrol shows it (the node is the executor's to fill in)
    fields = PatternFields(row.id, row.name, row.user, row.array_job_id, row.array_task_id,
                           node="%N", restart_count=row.restarts)  # fmt: skip
    paths = batch_paths(out if isinstance(out, str) else "", err if isinstance(err, str) else "",
                        fields, row.workdir or row.submit_dir, row.array_job_id is not None)
    return str(paths[0]), str(paths[1])  # fmt: skip


def job_full(row: JobRow, events: list[JobEventRow], attempts: list[AttemptRow]) -> dict[str, Any]:
    d = queue_item(tuple(getattr(row, c) for c in QUEUE_COLUMNS))
    d.update(
        {
            "request": _request(row.request),
            "dependency": row.dependency,
            "priority_override": row.priority_override,
            "nice": row.nice,
            "workdir": row.workdir,
            "submit_dir": row.submit_dir,
            "script_args": json.loads(row.script_args or "[]"),
            **dict(zip(("stdout", "stderr"), _std_paths(row), strict=True)),
            "allocation": json.loads(row.allocation) if row.allocation else None,
            "gpu_type": row.gpu_type,
            "derived_exit": row.derived_exit,
            "cancel_requested": row.cancel_requested,
            "warnings": json.loads(row.warnings or "[]"),
            "phases": phases(row),
            "recovery": recovery(row),
            "preemption": preemption(row),
            "history": [
                {
                    "time": row.submit_time,
                    "from": "",
                    "to": "PENDING",
                    "reason": "submitted",
                    "actor": row.user,
                },
                *(
                    {
                        "time": e.time,
                        "from": e.from_state,
                        "to": e.to_state,
                        "reason": e.reason,
                        "actor": e.actor,
                    }
                    for e in events
                ),
            ],
            "attempts": [attempt(a) for a in attempts],
        }
    )
    return d


def preemption(row: JobRow) -> dict[str, Any] | None:
    """The last preemption of the job (scontrol's Preemptor... fields), None if never.
    `lost_gpu_seconds` is the estimate at the decision until the kill, then the
    work really lost (GPUs x seconds since the last checkpoint)."""
    if not row.preemptions:
        return None
    return {
        "preemptor": row.preempted_by,
        "reason": row.preempt_reason,
        "time": row.preempt_time,
        "mode": row.preempt_mode,
        "phase": row.preempt_phase or "done",
        "kill_at": row.preempt_kill_at,
        "lost_gpu_seconds": row.preempt_lost,
        "count": row.preemptions,
        "total_lost_gpu_seconds": row.lost_gpu_seconds,
        "suspended_seconds": row.suspended_seconds,
        "last_checkpoint": row.last_checkpoint,
    }


def recovery(row: JobRow) -> dict[str, Any]:
    """Progress and failures (docs/recovery.md): the last step and checkpoint the
    job reported, why its last attempt failed, and the GPU-seconds lost."""
    return {
        "restarts": row.restarts,
        "last_step": row.last_step,
        "last_step_time": row.last_step_time,
        "last_checkpoint_step": row.last_checkpoint_step,
        "last_checkpoint_time": row.last_checkpoint,
        "fail_cause": row.fail_cause,
        "lost_gpu_seconds": row.lost_gpu_seconds,
    }


def phases(row: JobRow) -> dict[str, Any]:
    """Phase timestamps and the waits between them (seconds), so queueing is
    measured phase by phase: submit -> eligible -> started -> all tasks
    running -> first step -> ended."""
    t = {
        "submitted": row.submit_time,
        "eligible": row.eligible_time,
        "started": row.start_time,
        "tasks_running": row.tasks_running_time,
        "first_step": row.first_step_time,
        "ended": row.end_time,
    }
    order = list(t)
    waits: dict[str, float | None] = {}
    for a, b in pairwise(order):
        ta, tb = t[a], t[b]
        waits[f"{a}->{b}"] = (tb - ta) if ta is not None and tb is not None else None
    return {"times": t, "waits": waits, "last_step": row.last_step}


def attempt(a: AttemptRow) -> dict[str, Any]:
    return {
        "attempt": a.attempt,
        "start": a.start_time,
        "end": a.end_time,
        "state": a.state,
        "exit": exit_text(a.exit_code, a.exit_signal),
        "nodelist": a.nodelist,
        "gpus": a.gpus,
        "gpu_type": a.gpu_type,
        "cpus": a.cpus,
        "gpu_seconds": a.gpu_seconds,
        "partition": a.partition,
        "allocation": json.loads(a.allocation) if a.allocation else None,
        "cause": a.cause,
        "lost_gpu_seconds": a.lost_gpu_seconds,
        "last_checkpoint_step": a.last_checkpoint_step,
        "last_checkpoint_time": a.last_checkpoint_time,
    }
