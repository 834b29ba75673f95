"""Job operations behind the REST API: show, list, cancel, hold, release,
requeue, update, notify. Permission rules (Slurm's, without PrivateData
exceptions): a user sees and changes their own jobs; an operator or admin
any job. A job id may be "12", "12_3" (one array task) or "12" naming a
whole array (every task), like scancel.
"""

from __future__ import annotations

import json
import re
import signal as signals
import threading
import time
from dataclasses import replace
from typing import Any

from tide.server import views
from tide.server.auth import Principal
from tide.server.errors import bad_request, conflict, forbidden, not_found
from tide.server.ports import Ctl
from tide.server.schemas import NotifyBody, UpdateBody
from tide.server.services import efficiency
from tide.server.services.lifecycle import LIVE, REQUEUE, requeue_values
from tide.store import accounting, codec
from tide.store import jobs as jobrepo
from tide.store.models import JobRow

MAX_ID = 2**31 - 1  # larger numbers name no job (the store's INTEGER ids)


def parse_id(text: str) -> tuple[int, int | None]:
    """'12' -> (12, None); '12_3' -> (12, 3)."""
    head, sep, tail = text.partition("_")
    ok = re.fullmatch(r"[0-9]{1,19}", head) and (not sep or re.fullmatch(r"[0-9]{1,19}", tail))
    if not ok or int(head) > MAX_ID or (sep and int(tail) > MAX_ID):
        raise bad_request(
            f"job id {text[:40]!r} is not a job id", "job_id", "use a number like 12 or 12_3"
        )
    return int(head), int(tail) if sep else None


def rows_for(s: Any, text: str) -> list[JobRow]:
    rows = jobrepo.by_display_id(s, *parse_id(text))
    if not rows:
        raise not_found("job", text, "list your jobs with `tide queue` or `tide acct`")
    return rows


def check_owner(who: Principal, row: JobRow, action: str) -> None:
    if who.operator or row.user == who.user:
        return
    if who.role == "job" and who.job_id == row.id and action == "notify":
        if who.run == row.restarts:
            return
        raise forbidden(
            f"this job token belongs to run {who.run} of job {row.id}, which has ended "
            f"(the job runs again as run {row.restarts})",
            "use TIDE_JOB_TOKEN of the running job",
        )
    raise forbidden(
        f"job {row.id} belongs to {row.user!r}; user {who.user!r} may not {action} it",
        "act only on your own jobs, or ask an operator",
    )


def show(ctl: Ctl, who: Principal, text: str) -> list[dict[str, Any]]:
    with ctl.sessions() as s:
        rows = rows_for(s, text)
        for r in rows:
            check_owner(who, r, "see")
        atts = accounting.attempts(s, [r.id for r in rows])
        by_job: dict[int, list[Any]] = {}
        for a in atts:
            by_job.setdefault(a.job_id, []).append(a)
        now = time.time()
        out = []
        for r in rows:
            d = views.job_full(r, jobrepo.events(s, r.id), by_job.get(r.id, []))
            d["efficiency"] = efficiency.job_view(ctl, s, r, now)
            out.append(d)
        return out


def listing(ctl: Ctl, who: Principal, f: jobrepo.JobFilter) -> tuple[list[str], list[list[Any]]]:
    """(columns, rows) for a queue/acct listing; users see their own jobs only."""
    if not who.operator:
        if f.users and set(f.users) != {who.user}:
            raise forbidden(
                f"user {who.user!r} may list only their own jobs",
                "drop --user, or ask an operator",
            )
        f = replace(f, users=(who.user,))
    with ctl.sessions() as s:
        rows = jobrepo.query_columns(s, views.QUEUE_COLUMNS, f)
    return list(views.QUEUE_COLUMNS), [list(r) for r in rows]


def queue_text(
    ctl: Ctl,
    who: Principal,
    ids: tuple[str, ...],
    states: tuple[str, ...],
    users: tuple[str, ...],
    accounts: tuple[str, ...],
    partitions: tuple[str, ...],
    names: tuple[str, ...],
    start: bool = False,
) -> str:
    """squeue text from the in-memory queue (tide.server.queue_text)."""
    from tide.server.queue_text import QueueFilter, render

    if not who.operator:
        if users and set(users) != {who.user}:
            raise forbidden(f"user {who.user!r} may list only their own jobs", "drop --user")
        users = (who.user,)
    job_ids = {parse_id(j)[0] for j in ids}
    f = QueueFilter(
        ids=frozenset(job_ids),
        states=frozenset(s.upper() for s in states),
        users=frozenset(users),
        accounts=frozenset(accounts),
        partitions=frozenset(partitions),
        names=frozenset(names),
    )
    now = time.time()
    with ctl.sessions() as s:
        entries = ctl.active.refresh(s, now, wait=False)
    # `watch tide queue` from many shells: one render per queue version and second
    key = (id(ctl.active), ctl.active.version, int(now), f, start)
    with _QUEUE_LOCK:
        hit = _QUEUE_CACHE.get(key)
    if hit is not None:
        return hit
    text = render(entries.values(), f, now, start)
    with _QUEUE_LOCK:
        if len(_QUEUE_CACHE) >= 16:
            _QUEUE_CACHE.clear()
        _QUEUE_CACHE[key] = text
    return text


_QUEUE_CACHE: dict[tuple[object, ...], str] = {}
_QUEUE_LOCK = threading.Lock()


def cancel(
    ctl: Ctl, who: Principal, text: str, sig: str | None = None, reason: str = ""
) -> list[dict[str, Any]]:
    """scancel: pending jobs end now; live jobs are killed (SIGTERM, KillWait,
    SIGKILL) and end CANCELLED when their processes are gone."""
    now = time.time()
    out = []
    kill: list[int] = []
    with ctl.sessions.begin() as s:
        for row in rows_for(s, text):
            check_owner(who, row, "cancel")
            if sig:
                out.append(_signal(ctl, row, sig))
                continue
            if row.state == "PENDING":
                jobrepo.transition(
                    s,
                    row.id,
                    ["PENDING"],
                    "CANCELLED",
                    now,
                    {"end_time": now, "reason": "None", "rev": row.rev + 1,
                     "cancel_requested": who.user},
                    reason=reason or f"cancelled by {who.user}",
                    actor=who.user,
                )
                out.append({"job_id": _did(row), "state": "CANCELLED"})
            elif row.state in LIVE:
                jobrepo.transition(
                    s,
                    row.id,
                    [row.state],
                    "COMPLETING",
                    now,
                    {"cancel_requested": who.user},
                    reason=reason or f"cancel requested by {who.user}",
                    actor=who.user,
                )
                kill.append(row.id)
                out.append({"job_id": _did(row), "state": "COMPLETING"})
            else:
                out.append({"job_id": _did(row), "state": row.state, "note": "already ended"})
    for job_id in kill:
        if ctl.executor is not None:
            ctl.executor.cancel(job_id, grace=ctl.settings.kill_wait)
    _wake(ctl)
    return out


def _signal(ctl: Ctl, row: JobRow, sig: str) -> dict[str, Any]:
    name = sig.upper()
    name = name if name.startswith("SIG") else "SIG" + name
    num = int(sig) if sig.isdigit() else getattr(signals, name, None)
    if num is None:
        raise bad_request(f"--signal={sig}: unknown signal", "signal", "e.g. USR1, TERM, 10")
    if row.state not in LIVE:
        raise conflict(
            f"job {_did(row)} is {row.state}, not running",
            "job_id",
            "signals go to running jobs only",
        )
    if ctl.executor is not None:
        ctl.executor.signal(row.id, int(num))
    return {"job_id": _did(row), "state": row.state, "signal": int(num)}


def hold(ctl: Ctl, who: Principal, text: str) -> list[dict[str, Any]]:
    """scontrol hold: a user hold (JobHeldUser) from the owner, an admin hold
    (JobHeldAdmin) from an operator."""
    kind = "admin" if who.operator else "user"
    reason = "JobHeldAdmin" if kind == "admin" else "JobHeldUser"
    return _set_held(ctl, who, text, kind, reason, "hold")


def release(ctl: Ctl, who: Principal, text: str) -> list[dict[str, Any]]:
    return _set_held(ctl, who, text, "", "None", "release")


def _set_held(
    ctl: Ctl, who: Principal, text: str, kind: str, reason: str, action: str
) -> list[dict[str, Any]]:
    now = time.time()
    out = []
    with ctl.sessions.begin() as s:
        for row in rows_for(s, text):
            check_owner(who, row, action)
            if row.state != "PENDING":
                raise conflict(
                    f"job {_did(row)} is {row.state}; only pending jobs can be held or released",
                    "job_id",
                    "hold jobs before they start",
                )
            if action == "release" and row.held == "admin" and not who.operator:
                raise forbidden(
                    f"job {_did(row)} was held by an operator; only an operator can release it",
                    "ask an operator",
                )
            jobrepo.transition(
                s,
                row.id,
                ["PENDING"],
                None,
                now,
                {"held": kind, "reason": reason, "rev": row.rev + 1},
            )
            jobrepo.add_event(s, row.id, now, "PENDING", "PENDING", action, who.user)
            out.append({"job_id": _did(row), "held": kind or "no"})
    _wake(ctl)
    return out


def requeue(ctl: Ctl, who: Principal, text: str) -> list[dict[str, Any]]:
    """scontrol requeue: a live job is killed and goes back to PENDING with
    restarts+1; a finished one goes back to PENDING at once."""
    now = time.time()
    out = []
    kill = []
    with ctl.sessions.begin() as s:
        for row in rows_for(s, text):
            check_owner(who, row, "requeue")
            if row.state in LIVE:
                jobrepo.transition(
                    s,
                    row.id,
                    [row.state],
                    "COMPLETING",
                    now,
                    {"cancel_requested": REQUEUE + who.user},
                    reason=f"requeue requested by {who.user}",
                    actor=who.user,
                )
                kill.append(row.id)
                out.append({"job_id": _did(row), "state": "COMPLETING"})
            elif row.state == "PENDING":
                raise conflict(
                    f"job {_did(row)} is already pending",
                    "job_id",
                    "requeue running or finished jobs",
                )
            else:
                jobrepo.transition(
                    s,
                    row.id,
                    [row.state],
                    "PENDING",
                    now,
                    requeue_values(row),
                    reason=f"requeued by {who.user}",
                    actor=who.user,
                )
                out.append({"job_id": _did(row), "state": "PENDING"})
    for job_id in kill:
        if ctl.executor is not None:
            ctl.executor.cancel(job_id, grace=ctl.settings.kill_wait)
    _wake(ctl)
    return out


def update(ctl: Ctl, who: Principal, text: str, body: UpdateBody) -> list[dict[str, Any]]:
    """scontrol update: users may lower their time limit, raise nice or rename;
    operators may change anything, including a fixed priority."""
    now = time.time()
    out = []
    with ctl.sessions.begin() as s:
        for row in rows_for(s, text):
            check_owner(who, row, "update")
            req = _stored_request(row)
            values: dict[str, Any] = {}
            changes: dict[str, Any] = {}
            if body.time_limit is not None:
                _check_time(who, row, req.time_limit, body.time_limit)
                changes["time_limit"] = body.time_limit
                values["time_limit"] = body.time_limit
            if body.priority is not None:
                if not who.operator:
                    raise forbidden(
                        "only operators may set a job's priority",
                        "use --nice to lower your own job's priority",
                    )
                values["priority_override"] = body.priority
            if body.site_factor is not None:
                if not who.operator:
                    raise forbidden("only operators may set a job's site factor", "")
                values["site_factor"] = body.site_factor
            if body.nice is not None:
                if body.nice < 0 and not who.operator:
                    raise forbidden("only operators may set a negative nice", "use a nice >= 0")
                changes["nice"] = body.nice
                values["nice"] = body.nice
            if body.name is not None:
                changes["name"] = body.name
                values["name"] = body.name
            for key in ("partition", "qos", "account"):
                new = getattr(body, key)
                if new is None:
                    continue
                if row.state != "PENDING":
                    raise conflict(
                        f"{key} can only change while the job is pending",
                        key,
                        "update it before the job starts",
                    )
                if key == "partition":
                    changes["partitions"] = tuple(new.split(","))
                    values["partition"] = new
                else:
                    changes[key] = new
                    values[key] = new
            if {"partition", "qos", "account"} & set(values):
                _check_associations(ctl, row, req, changes)
            if not values:
                raise bad_request("nothing to update", "", "give time_limit, priority, nice, ...")
            if row.state not in ("PENDING", *LIVE):
                raise conflict(
                    f"job {_did(row)} has ended ({row.state})",
                    "job_id",
                    "update pending or running jobs",
                )
            if changes:
                values["request"] = codec.request_json(replace(req, **changes))
            values["rev"] = row.rev + 1
            jobrepo.transition(s, row.id, [row.state], None, now, values)
            jobrepo.add_event(
                s,
                row.id,
                now,
                row.state,
                row.state,
                "update "
                + ",".join(f"{k}={v}" for k, v in body.model_dump().items() if v is not None),
                who.user,
            )
            if "time_limit" in values and row.state in LIVE:
                _retime(ctl, row.id, body.time_limit)
            out.append({"job_id": _did(row), "updated": sorted(values)})
    _wake(ctl)
    return out


def _stored_request(row: JobRow) -> Any:
    try:
        return codec.request_from_json(row.request)
    except Exception as e:
        raise conflict(
            f"job {_did(row)}: its stored request cannot be read ({type(e).__name__})",
            "job_id",
            "cancel it and submit it again",
        ) from e


def _check_time(who: Principal, row: JobRow, old: int | None, new: int) -> None:
    if new <= 0:
        raise bad_request("time limit must be positive", "time_limit", "e.g. 3600")
    if not who.operator and (old is None or new > old):
        raise forbidden(
            "only operators may raise a time limit", "ask an operator, or lower it instead"
        )


def _check_associations(ctl: Ctl, row: JobRow, req: Any, changes: dict[str, Any]) -> None:
    """A new account, QOS or partition is checked as at submit, against the
    job owner's associations and the partitions' AllowAccounts/AllowQos
    (InvalidAccount, InvalidQOS, AccountNotAllowed...): a PATCH can move a job
    nowhere its owner could not have submitted it."""
    from tide.server.services.submit import resolve

    merged = replace(
        req,
        account=changes.get("account", row.account),
        qos=changes.get("qos", row.qos),
        partitions=changes.get("partitions", tuple(p for p in row.partition.split(",") if p)),
    )
    resolve(ctl, merged, row.user)


def _retime(ctl: Ctl, job_id: int, seconds: int | None) -> None:
    """Tell the executor's supervisor about a new limit, if it can take one."""
    fn = getattr(ctl.executor, "set_time_limit", None)
    if fn is None:
        raise conflict(
            "this executor cannot change the time limit of a running job",
            "time_limit",
            "change it before the job starts",
        )
    fn(job_id, seconds)


def notify(ctl: Ctl, who: Principal, text: str, body: NotifyBody) -> dict[str, Any]:
    """Progress reports from inside a job: 'tasks_running' (all tasks up), 'step'
    (training step N; the first one sets first_step) and 'checkpoint' (a
    checkpoint of step N is complete: the work before it survives a failure,
    docs/recovery.md). Checkpoints also go to the job's history."""
    now = time.time()
    with ctl.sessions.begin() as s:
        rows = rows_for(s, text)
        row = rows[0]
        check_owner(who, row, "notify")
        if row.state not in LIVE:
            raise conflict(
                f"job {_did(row)} is {row.state}, not running",
                "job_id",
                "notify from inside a running job",
            )
        values = _progress(row, body, now)
        if values:
            jobrepo.transition(s, row.id, [row.state], None, now, values)
        if body.event == "step":
            efficiency.record_step(s, row, body, values["last_step"], now)
        if body.event == "checkpoint":
            jobrepo.add_event(
                s,
                row.id,
                now,
                row.state,
                row.state,
                f"checkpoint {values['last_checkpoint_step']}",
                "job",
            )
    return {"job_id": _did(row), "event": body.event, "time": now, **values}


def _progress(row: JobRow, body: NotifyBody, now: float) -> dict[str, Any]:
    values: dict[str, Any] = {}
    step = body.step
    if body.event == "tasks_running":
        if row.tasks_running_time is None:
            values["tasks_running_time"] = now
    elif body.event == "step":
        if row.first_step_time is None:
            values["first_step_time"] = now
            if row.tasks_running_time is None:
                values["tasks_running_time"] = now
        values["last_step"] = step if step is not None else (row.last_step or 0) + 1
        values["last_step_time"] = now
    elif body.event == "checkpoint":
        values["last_checkpoint_step"] = step if step is not None else row.last_step or 0
        values["last_checkpoint"] = now  # the time lost work is counted from
    else:
        raise bad_request(
            f"unknown event {body.event!r}", "event", "use 'step', 'checkpoint' or 'tasks_running'"
        )
    return values


def _did(row: JobRow) -> str:
    return views.display_id(row.id, row.array_job_id, row.array_task_id)


def warnings_of(row: JobRow) -> list[str]:
    return list(json.loads(row.warnings or "[]"))


def _wake(ctl: Ctl) -> None:
    if ctl.loop is not None:
        ctl.loop.wake()
