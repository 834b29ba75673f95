"""Training efficiency behind the API: step reports fold into each job's
Progress (tide.efficiency), and figures come out per job and per account.

MFU needs the model's FLOPs per token (declared in --comment, or by the job
in a step report) and the peak of the job's GPU type (tide.model.gpu_peaks,
over the cluster file's gpu_peak_tflops).
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from tide.efficiency import EfficiencyError, Measured, Progress, group_figures, job_figures
from tide.efficiency import model_flops_per_token as declared_fpt
from tide.model.gpu_peaks import peak_tflops
from tide.server.auth import Principal
from tide.server.errors import forbidden
from tide.server.ports import Ctl
from tide.server.schemas import NotifyBody
from tide.store import codec
from tide.store import jobs as jobrepo
from tide.store import progress as repo
from tide.store.models import JobRow

LIVE = ("RUNNING", "COMPLETING", "SUSPENDED")


def record_step(s: Any, row: JobRow, body: NotifyBody, step: int, now: float) -> None:
    """Fold one step report into the job's progress (same transaction as the report)."""
    p = repo.load(s, row.id) or Progress()
    if body.flops_per_token is not None:
        p.flops_per_token = body.flops_per_token
    elif body.params is not None:
        p.flops_per_token = 6.0 * body.params
    elif p.flops_per_token is None:
        p.flops_per_token = comment_fpt(row)
    p.record(step, body.tokens or 0.0, now, row.restarts, body.step_times)
    repo.save(s, row.id, row.user, row.account, p, now)


def comment_fpt(row: JobRow) -> float | None:
    try:
        return declared_fpt(codec.request_from_json(row.request).comment)
    except (EfficiencyError, ValueError):
        return None  # checked at submission; a stored comment stays readable


def peak_of(ctl: Ctl, gpu_type: str) -> float | None:
    return peak_tflops(gpu_type, getattr(ctl.cluster, "gpu_peak_tflops", None))


def measured(ctl: Ctl, row: JobRow, p: Progress, now: float) -> Measured:
    live = 0.0
    if row.state in LIVE and row.start_time is not None:
        live = max(0.0, now - row.start_time) * (row.gpus_alloc or 0)
    gpus = row.gpus_alloc or row.gpus_req or 0
    return Measured(p, gpus, peak_of(ctl, row.gpu_type or ""), (row.gpu_seconds or 0.0) + live)


def job_view(ctl: Ctl, s: Any, row: JobRow, now: float | None = None) -> dict[str, Any] | None:
    """The job's figures plus its declaration and series, or None if it never reported."""
    p = repo.load(s, row.id)
    if p is None:
        return None
    now = time.time() if now is None else now
    m = measured(ctl, row, p, now)
    out = job_figures(m).as_dict()
    out.update(
        {
            "flops_per_token": p.flops_per_token,
            "gpu_type": row.gpu_type,
            "gpus": m.gpus,
            "peak_tflops": m.peak_tflops,
            "last_step": p.last_step,
            "last_time": p.last_time,
            "series": [list(x) for x in p.series],
        }
    )
    return out


def for_ids(ctl: Ctl, ids: list[int]) -> dict[int, dict[str, Any]]:
    """Figures of the listed jobs that reported progress (the caller checked
    who may see them)."""
    now = time.time()
    with ctl.sessions() as s:
        found = repo.for_jobs(s, ids)
        rows = _rows(s, list(found))
    return {r.id: job_figures(measured(ctl, r, found[r.id], now)).as_dict() for r in rows}


def by_account(
    ctl: Ctl, who: Principal, since: float | None = None, accounts: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """Per account: the group figures of its jobs that reported since `since`
    (all time when None), and the live throughput (tokens/s of its running
    jobs summed). Users see their own jobs only; operators everyone's."""
    now = time.time()
    users = () if who.operator else (who.user,)
    if not who.operator and who.role == "job":
        raise forbidden("a job token cannot read accounting", "use a user token")
    with ctl.sessions() as s:
        ids = repo.updated_since(s, since if since is not None else 0.0, users)
        rows = _rows(s, ids)
        progress = repo.for_jobs(s, ids)
    groups: dict[str, list[tuple[JobRow, Measured]]] = defaultdict(list)
    for r in rows:
        if accounts and r.account not in accounts:
            continue
        groups[r.account].append((r, measured(ctl, r, progress[r.id], now)))
    out = []
    for account, items in sorted(groups.items()):
        figures = group_figures(m for _, m in items).as_dict()
        live = [job_figures(m).tokens_per_s or 0.0 for r, m in items if r.state in LIVE]
        figures.update(account=account, jobs=len(items), running=len(live))
        figures["live_tokens_per_s"] = sum(live)
        out.append(figures)
    return out


def _rows(s: Any, ids: list[int]) -> list[JobRow]:
    return jobrepo.rows_by_id(s, ids)
